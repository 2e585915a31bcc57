package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Limits on hostile input, besides maxFileSize. yaml.v3 bounds its own
// parser's nesting (10000 levels) and alias expansion; matrix.yaml is small,
// so it is held to far tighter limits.
const (
	// maxDepth bounds nesting so hostile input cannot exhaust the stack.
	maxDepth = 64
	// maxMappingKeys bounds the keys of one mapping: yaml.v3 compares every
	// pair of keys of a mapping when decoding it, so 50,000 keys (half a
	// megabyte) would take it most of a minute.
	maxMappingKeys = 1000
)

// parseDocument parses data into its single YAML document, checks the
// limits and returns the root node.
func parseDocument(name string, data []byte) (*yaml.Node, error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes", maxFileSize)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: name, Msg: "empty document"}
		}
		return nil, &Error{File: name, Msg: fmt.Sprintf("invalid YAML: %v", err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: name, Line: extra.Line, Msg: "more than one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: name, Msg: "empty document"}
	}
	root := doc.Content[0]
	if err := checkLimits(name, root, 0); err != nil {
		return nil, err
	}
	return root, nil
}

// checkLimits rejects anchors, aliases and merge keys (matrix.yaml is small,
// and aliases could otherwise expand without bound), nesting deeper than
// maxDepth and mappings with more than maxMappingKeys keys.
func checkLimits(name string, n *yaml.Node, depth int) error {
	errf := func(format string, args ...any) error {
		return &Error{File: name, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
	}
	if depth > maxDepth {
		return errf("nested deeper than %d levels", maxDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return errf("YAML anchors and aliases are not supported")
	}
	if n.Tag == "!!merge" {
		return errf("YAML merge keys (<<) are not supported")
	}
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > maxMappingKeys {
		return errf("a mapping with %d keys (want at most %d)", len(n.Content)/2, maxMappingKeys)
	}
	for _, c := range n.Content {
		if err := checkLimits(name, c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// decode decodes data, whose root node is root, into a Config and returns
// it with the line of each field path.
//
// A walk over the node tree (shape) first reports, in document order, what
// matrix.yaml does not accept: unknown fields, duplicate keys, wrong types
// and what yaml.v3 is lenient about (it reads "yes" as a boolean and true as
// a string). yaml.v3 then decodes strictly (KnownFields; duplicate keys are
// errors too) what the walk accepted. The walk comes first because yaml.v3
// records one error per pair of equal keys: a few kilobytes of one repeated
// key would make it build hundreds of megabytes of errors.
func decode(name string, data []byte, root *yaml.Node) (*Config, map[string]int, error) {
	s := newShape(name)
	if err := s.check(root, reflect.TypeFor[Config](), ""); err != nil {
		return nil, nil, err
	}
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, nil, yamlError(name, err)
	}
	if n := mappingValue(root, "settings"); n != nil {
		// Settings become JSON: every key is a string, whatever it looks
		// like ("1: x" keeps the key "1", where yaml.v3 would make an int).
		stringKeys(n)
		cfg.Settings = nil
		if err := n.Decode(&cfg.Settings); err != nil {
			return nil, nil, yamlError(name, err)
		}
	}
	return &cfg, s.lines, nil
}

var yamlLineRE = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)

// yamlError turns an error of yaml.v3's decoder, which the walk should have
// made impossible, into an *Error with the line of its first message.
func yamlError(name string, err error) *Error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{File: name, Msg: err.Error()}
	}
	m := yamlLineRE.FindStringSubmatch(te.Errors[0])
	if m == nil {
		return &Error{File: name, Msg: te.Errors[0]}
	}
	line, _ := strconv.Atoi(m[1])
	return &Error{File: name, Line: line, Msg: m[2]}
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
