package matrix

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// decoder walks a yaml.v3 node tree into a Go value strictly: every mapping
// key must name a field, every scalar must have the field's type, and it
// records the line of every field path so validation can point at it.
type decoder struct {
	file  string
	lines map[string]int
}

// Error is a matrix.yaml error at a line and field path.
type Error struct {
	File string
	Line int // 0 when unknown
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (d *decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func joinPath(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!null":
			return "null"
		case "!!bool":
			return "the boolean " + n.Value
		case "!!int", "!!float":
			return "the number " + n.Value
		}
		return fmt.Sprintf("%s %q", n.Tag, n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unexpected node"
}

// checkNoAliases rejects anchors, aliases and merge keys: matrix.yaml is
// small, and aliases could otherwise expand without bound.
func (d *decoder) checkNoAliases(n *yaml.Node, depth int) error {
	if depth > maxDepth {
		return d.errf(n, "", "nested deeper than %d levels", maxDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return d.errf(n, "", "YAML anchors and aliases are not supported")
	}
	if n.Tag == "!!merge" {
		return d.errf(n, "", "YAML merge keys (<<) are not supported")
	}
	for _, c := range n.Content {
		if err := d.checkNoAliases(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// decode stores n into v. path is the field path of v.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "want a list, got %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = c.Line
			if err := d.decode(c, s.Index(i), p); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n, path, "want a mapping, got %s", kindName(n))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			key, err := d.key(k, path)
			if err != nil {
				return err
			}
			p := fmt.Sprintf("%s[%q]", path, key)
			if m.MapIndex(reflect.ValueOf(key)).IsValid() {
				return d.errf(k, p, "duplicate key")
			}
			d.lines[p] = k.Line
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(val, ev, p); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(key), ev)
		}
		v.Set(m)
		return nil
	case reflect.Interface:
		a, err := d.toAny(n, path)
		if err != nil {
			return err
		}
		if a != nil {
			v.Set(reflect.ValueOf(a))
		}
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errf(n, path, "want a string, got %s", kindName(n))
		}
		switch n.Tag {
		case "!!str", "!!int", "!!float":
			// Numbers keep their literal text, so "max: 3.10" stays "3.10".
			v.SetString(n.Value)
			return nil
		}
		return d.errf(n, path, "want a string, got %s", kindName(n))
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errf(n, path, "want true or false, got %s", kindName(n))
		}
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return d.errf(n, path, "want true or false, got %q", n.Value)
		}
		v.SetBool(b)
		return nil
	}
	return d.errf(n, path, "internal error: cannot decode into %s", v.Type())
}

func (d *decoder) key(k *yaml.Node, path string) (string, error) {
	if k.Kind != yaml.ScalarNode || k.Tag == "!!null" {
		return "", d.errf(k, path, "want a string key, got %s", kindName(k))
	}
	return k.Value, nil
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, err := d.key(k, path)
		if err != nil {
			return err
		}
		p := joinPath(path, key)
		idx, ok := fields[key]
		if !ok {
			return d.errf(k, p, "unknown field %q (want one of %s)", key, strings.Join(names, ", "))
		}
		if seen[key] {
			return d.errf(k, p, "duplicate field %q", key)
		}
		seen[key] = true
		d.lines[p] = k.Line
		if err := d.decode(val, v.Field(idx), p); err != nil {
			return err
		}
	}
	return nil
}

// toAny converts free-form YAML (settings) into JSON-compatible values:
// map[string]any, []any, string, bool, int64, float64 or nil.
func (d *decoder) toAny(n *yaml.Node, path string) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			key, err := d.key(k, path)
			if err != nil {
				return nil, err
			}
			p := fmt.Sprintf("%s[%q]", path, key)
			if _, dup := m[key]; dup {
				return nil, d.errf(k, p, "duplicate key")
			}
			d.lines[p] = k.Line
			a, err := d.toAny(val, p)
			if err != nil {
				return nil, err
			}
			m[key] = a
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			a, err := d.toAny(c, p)
			if err != nil {
				return nil, err
			}
			s[i] = a
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!str":
			return n.Value, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, d.errf(n, path, "bad boolean %q", n.Value)
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, d.errf(n, path, "bad integer %q: %v", n.Value, err)
			}
			return i, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, d.errf(n, path, "bad number %q: %v", n.Value, err)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, d.errf(n, path, "%s is not representable in JSON", n.Value)
			}
			return f, nil
		}
		return nil, d.errf(n, path, "unsupported YAML tag %s", n.Tag)
	}
	return nil, d.errf(n, path, "unsupported YAML node: %s", kindName(n))
}
