package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits on hostile input, besides maxFileSize. yaml.v3 bounds its own
// parser's nesting (10000 levels) and alias expansion; matrix.yaml is small,
// so it is held to far tighter limits.
const (
	// maxDepth bounds nesting so hostile input cannot exhaust the stack.
	maxDepth = 64
	// maxMappingKeys bounds the keys of one mapping: yaml.v3 compares every
	// pair of keys of a mapping.
	maxMappingKeys = 1000
)

// parseDocument parses data into its single YAML document and scans it. It
// returns the root node and the scanner, which holds the line of each field
// path and the first lenient value found.
func parseDocument(name string, data []byte) (*yaml.Node, *scanner, error) {
	if len(data) > maxFileSize {
		return nil, nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes", maxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &Error{File: name, Msg: "empty document"}
		}
		return nil, nil, &Error{File: name, Msg: fmt.Sprintf("invalid YAML: %v", err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, nil, &Error{File: name, Line: extra.Line, Msg: "more than one YAML document"}
	case !errors.Is(err, io.EOF):
		return nil, nil, &Error{File: name, Msg: fmt.Sprintf("more than one YAML document, the second not YAML: %v", err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil, &Error{File: name, Msg: "empty document"}
	}
	s := &scanner{file: name, lines: map[string]int{}}
	root := doc.Content[0]
	if err := s.scan(pathNode{n: root, parent: -1}, 0, false); err != nil {
		return nil, nil, err
	}
	return root, s, nil
}

// scanner records the path of every node and the line of every field path.
// It refuses what yaml.v3 must not see: anchors, aliases and merge keys
// (which could expand without bound), nesting deeper than maxDepth,
// mappings with more than maxMappingKeys keys, keys that are not strings,
// and duplicate keys (yaml.v3 would report every equal pair). It notes the
// first value that yaml.v3 would accept leniently: a boolean written as
// "yes", a string written as true, a null list item (yaml.v3 drops it), a
// scalar whose explicit tag does not fit its text, and settings values that
// have no JSON form.
type scanner struct {
	file  string
	lines map[string]int
	nodes []pathNode // in document order, keys included
	first *Error
}

// pathNode is a node with its field path and its place in the tree.
type pathNode struct {
	n      *yaml.Node
	path   string
	parent int    // index in nodes of the enclosing mapping or list; -1 for the root
	key    string // the key of a mapping value
	isKey  bool
}

func (s *scanner) errf(n *yaml.Node, path, format string, args ...any) *Error {
	return &Error{File: s.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// note keeps the first lenient value found.
func (s *scanner) note(err *Error) {
	if s.first == nil {
		s.first = err
	}
}

// scan walks pn.n, the value at pn.path; settings says whether it is inside
// settings (free-form, but JSON). It returns what yaml.v3 must not see.
func (s *scanner) scan(pn pathNode, depth int, settings bool) *Error {
	n, path := pn.n, pn.path
	if depth > maxDepth {
		return s.errf(n, "", "nested deeper than %d levels", maxDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return s.errf(n, "", "YAML anchors and aliases are not supported")
	}
	idx := len(s.nodes)
	s.nodes = append(s.nodes, pn)
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content)/2 > maxMappingKeys {
			return s.errf(n, "", "a mapping with %d keys (want at most %d)", len(n.Content)/2, maxMappingKeys)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				return s.errf(k, "", "YAML merge keys (<<) are not supported")
			}
			if k.Kind == yaml.AliasNode || k.Anchor != "" {
				return s.errf(k, "", "YAML anchors and aliases are not supported")
			}
			if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Tag == "!!binary" {
				return s.errf(k, path, "want a string key, got %s", kindName(k))
			}
			p := joinKey(path, k.Value)
			if line, dup := s.lines[p]; dup {
				return s.errf(k, p, "duplicate key (first at line %d)", line)
			}
			s.lines[p] = k.Line
			s.nodes = append(s.nodes, pathNode{n: k, path: p, parent: idx, isKey: true})
			if err := s.scan(pathNode{n: v, path: p, parent: idx, key: k.Value}, depth+1, settings || p == "settings"); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		t := s.typeOf(idx)
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			s.lines[p] = c.Line
			if c.Tag == "!!null" && t != nil && t.Kind() == reflect.Slice {
				s.note(s.errf(c, p, "want %s, got null", wantName(t.Elem())))
			}
			if err := s.scan(pathNode{n: c, path: p, parent: idx}, depth+1, settings); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if err := s.scalar(n, path, settings, s.typeOf(idx)); err != nil {
			s.note(err)
		}
	}
	return nil
}

// scalar checks a scalar at path, decoded into a value of type t (nil if
// none: an unknown field, which yaml.v3 reports). yaml.v3 would read "yes"
// and "on" into a bool, and true into a string.
func (s *scanner) scalar(n *yaml.Node, path string, settings bool, t reflect.Type) *Error {
	var v any
	if err := n.Decode(&v); err != nil {
		// An explicit tag that does not fit, such as "!!int abc", which
		// yaml.v3 would report without a line.
		return s.errf(n, path, "bad %s %q: %v", n.Tag, n.Value, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if settings {
		switch n.Tag {
		case "!!null", "!!str", "!!bool":
		case "!!int":
			if _, ok := v.(int); !ok {
				return s.errf(n, path, "bad integer %q (want one that fits in 64 bits, signed)", n.Value)
			}
		case "!!float":
			if f := v.(float64); math.IsNaN(f) || math.IsInf(f, 0) {
				return s.errf(n, path, "%s is not representable in JSON", n.Value)
			}
		default:
			return s.errf(n, path, "unsupported YAML tag %s", n.Tag)
		}
		return nil
	}
	switch {
	case t == nil || n.Tag == "!!null":
	case t.Kind() == reflect.Bool && n.Tag != "!!bool":
		return s.errf(n, path, "want true or false, got %s", kindName(n))
	case t.Kind() == reflect.String && n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float":
		// Numbers keep their literal text, so "max: 3.10" stays "3.10".
		return s.errf(n, path, "want a string, got %s", kindName(n))
	}
	return nil
}

// decode decodes data, scanned by s, strictly (yaml.v3's KnownFields:
// unknown fields are errors) into a Config. Of the scan's first problem and
// yaml.v3's first error, it reports the one on the earlier line, yaml.v3's
// on the same line.
func decode(data []byte, root *yaml.Node, s *scanner) (*Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		e := s.yamlError(err)
		if s.first == nil || (e.Line > 0 && e.Line <= s.first.Line) {
			return nil, e
		}
	}
	if s.first != nil {
		return nil, s.first
	}
	if n := mappingValue(root, "settings"); n != nil {
		// Settings become JSON: every key is a string, whatever it looks
		// like ("1: x" keeps the key "1", where yaml.v3 would make an int).
		stringKeys(n)
		cfg.Settings = nil
		if err := n.Decode(&cfg.Settings); err != nil {
			return nil, s.yamlError(err)
		}
	}
	return &cfg, nil
}

var (
	yamlLineRE    = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	yamlUnknownRE = regexp.MustCompile(`^field (.*) not found in type (\S+)$`)
	yamlTypeRE    = regexp.MustCompile("(?s)^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
)

// yamlError turns yaml.v3's decoding error into an *Error naming the line
// and the field path of its earliest message.
func (s *scanner) yamlError(err error) *Error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{File: s.file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	e := &Error{File: s.file, Msg: te.Errors[0]}
	for _, msg := range te.Errors {
		m := yamlLineRE.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		if line, _ := strconv.Atoi(m[1]); e.Line == 0 || line < e.Line {
			e.Line, e.Msg = line, m[2]
		}
	}
	if m := yamlUnknownRE.FindStringSubmatch(e.Msg); m != nil {
		i := s.find(e.Line, func(i int, pn pathNode) bool {
			return pn.isKey && pn.n.Value == m[1] && typeString(s.typeOf(pn.parent)) == m[2]
		})
		e.Msg = fmt.Sprintf("unknown field %q", m[1])
		if i >= 0 {
			e.Path = s.nodes[i].path
			e.Msg += fmt.Sprintf(" (want one of %s)", strings.Join(fieldNames(s.typeOf(s.nodes[i].parent)), ", "))
		}
	} else if m := yamlTypeRE.FindStringSubmatch(e.Msg); m != nil {
		i := s.find(e.Line, func(i int, pn pathNode) bool {
			return !pn.isKey && pn.n.ShortTag() == m[1] && typeString(s.typeOf(i)) == m[3] &&
				(m[2] == "" || strings.HasPrefix(pn.n.Value, strings.TrimSuffix(m[2], "...")))
		})
		if i >= 0 {
			e.Path = s.nodes[i].path
			e.Msg = fmt.Sprintf("want %s, got %s", wantName(s.typeOf(i)), kindName(s.nodes[i].n))
		}
	}
	return e
}

// find returns the index of the first node on line that matches, or -1.
func (s *scanner) find(line int, match func(int, pathNode) bool) int {
	for i, pn := range s.nodes {
		if pn.n.Line == line && match(i, pn) {
			return i
		}
	}
	return -1
}

// typeOf returns the Go type that nodes[i] decodes into, nil if none.
func (s *scanner) typeOf(i int) reflect.Type {
	pn := s.nodes[i]
	if pn.parent < 0 {
		return reflect.TypeFor[Config]()
	}
	t := s.typeOf(pn.parent)
	switch {
	case t == nil:
		return nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() == reflect.Struct:
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == pn.key {
				return f.Type
			}
		}
	}
	return nil
}

func typeString(t reflect.Type) string {
	if t == nil {
		return ""
	}
	return t.String()
}

// fieldNames lists the yaml names of struct t's fields, sorted.
func fieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// wantName says how a value of type t is written.
func wantName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return "a mapping"
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends a mapping key to a field path: parent.key, or
// parent["key"] when the key is not a plain word.
func joinKey(parent, key string) string {
	switch {
	case !plainKeyRE.MatchString(key):
		return fmt.Sprintf("%s[%q]", parent, key)
	case parent == "":
		return key
	}
	return parent + "." + key
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

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// stringKeys tags every mapping key under n as a string.
func stringKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			n.Content[i].Tag = "!!str"
		}
	}
	for _, c := range n.Content {
		stringKeys(c)
	}
}
