package matrix

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// shape walks a node tree alongside the Go type it decodes into, in
// document order, and stops at the first error. It records the line of
// every field path for validation and rejects unknown fields, duplicate
// keys, values of the wrong type, and what yaml.v3 would accept but
// matrix.yaml does not: a boolean written as "yes", a string written as
// true, a non-string or null key, a null list item (yaml.v3 drops it), and
// settings values that have no JSON form.
type shape struct {
	file  string
	lines map[string]int
}

var (
	anyMapType   = reflect.TypeFor[map[string]any]()
	anySliceType = reflect.TypeFor[[]any]()
)

func newShape(file string) *shape {
	return &shape{file: file, lines: map[string]int{}}
}

func (s *shape) errf(n *yaml.Node, path, format string, args ...any) *Error {
	return &Error{File: s.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// check walks n, the value at path, whose Go type is t. It returns the first
// error in document order.
func (s *shape) check(n *yaml.Node, t reflect.Type, path string) *Error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return s.resolves(n, path)
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return s.mapping(n, t, path)
	case reflect.Slice:
		return s.sequence(n, t, path)
	case reflect.Interface:
		return s.free(n, path)
	case reflect.String:
		if n.Kind == yaml.ScalarNode {
			switch n.Tag {
			case "!!str":
				return nil
			case "!!int", "!!float":
				// Numbers keep their literal text, so "max: 3.10" stays "3.10".
				return s.resolves(n, path)
			}
		}
		return s.errf(n, path, "want a string, got %s", kindName(n))
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return s.errf(n, path, "want true or false, got %s", kindName(n))
		}
		if err := n.Decode(&b); err != nil {
			return s.errf(n, path, "want true or false, got %q", n.Value)
		}
		return nil
	}
	return s.errf(n, path, "internal error: cannot decode into %s", t)
}

// resolves rejects a scalar whose explicit tag does not fit its text, such
// as "!!int abc", which yaml.v3 would report without a line.
func (s *shape) resolves(n *yaml.Node, path string) *Error {
	if err := n.Decode(new(any)); err != nil {
		return s.errf(n, path, "bad %s %q: %v", n.Tag, n.Value, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

func (s *shape) sequence(n *yaml.Node, t reflect.Type, path string) *Error {
	if n.Kind != yaml.SequenceNode {
		return s.errf(n, path, "want a list, got %s", kindName(n))
	}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		s.lines[p] = c.Line
		if c.Kind == yaml.ScalarNode && c.Tag == "!!null" && t.Elem().Kind() != reflect.Interface {
			// yaml.v3 would drop the item and renumber the rest.
			return s.errf(c, p, "want %s, got null", wantName(t.Elem()))
		}
		if err := s.check(c, t.Elem(), p); err != nil {
			return err
		}
	}
	return nil
}

// mapping walks a mapping decoded into a struct or a map with string keys.
func (s *shape) mapping(n *yaml.Node, t reflect.Type, path string) *Error {
	if n.Kind != yaml.MappingNode {
		return s.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	fields := structFields(t)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Tag == "!!binary" {
			return s.errf(k, path, "want a string key, got %s", kindName(k))
		}
		key := k.Value
		var p string
		var elem reflect.Type
		switch {
		case t.Kind() == reflect.Map:
			p, elem = fmt.Sprintf("%s[%q]", path, key), t.Elem()
			if seen[key] {
				return s.errf(k, p, "duplicate key")
			}
		case fields[key] == nil:
			return s.errf(k, joinPath(path, key), "unknown field %q (want one of %s)", key, fieldList(fields))
		default:
			p, elem = joinPath(path, key), fields[key].Type
			if seen[key] {
				return s.errf(k, p, "duplicate field %q", key)
			}
		}
		seen[key] = true
		s.lines[p] = k.Line
		if err := s.check(val, elem, p); err != nil {
			return err
		}
	}
	return nil
}

// free walks free-form YAML (settings), which must have a JSON form.
func (s *shape) free(n *yaml.Node, path string) *Error {
	switch n.Kind {
	case yaml.MappingNode:
		return s.mapping(n, anyMapType, path)
	case yaml.SequenceNode:
		return s.sequence(n, anySliceType, path)
	case yaml.ScalarNode:
	default:
		return s.errf(n, path, "unsupported YAML node: %s", kindName(n))
	}
	switch n.Tag {
	case "!!null", "!!str":
		return nil
	case "!!bool":
		if err := n.Decode(new(bool)); err != nil {
			return s.errf(n, path, "bad boolean %q", n.Value)
		}
		return nil
	case "!!int":
		if err := n.Decode(new(int64)); err != nil {
			return s.errf(n, path, "bad integer %q: %v", n.Value, err)
		}
		return nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return s.errf(n, path, "bad number %q: %v", n.Value, err)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return s.errf(n, path, "%s is not representable in JSON", n.Value)
		}
		return nil
	}
	return s.errf(n, path, "unsupported YAML tag %s", n.Tag)
}

// structFields maps the yaml names of struct t's fields to the fields; nil
// unless t is a struct.
func structFields(t reflect.Type) map[string]*reflect.StructField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]*reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			fields[name] = &f
		}
	}
	return fields
}

// fieldList lists the names of fields, sorted.
func fieldList(fields map[string]*reflect.StructField) string {
	return strings.Join(slices.Sorted(maps.Keys(fields)), ", ")
}

func joinPath(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// wantName says what a value of type t is written as.
func wantName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	case reflect.Bool:
		return "true or false"
	}
	return "a string"
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
