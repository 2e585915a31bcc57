package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a problem with a catalog file: the file, the JSON path of the
// offending value (empty for the whole document) and what was expected.
type Error struct {
	File string
	// Path is like extensions[2].versions[0].files.universal.sha256; map
	// keys that are not plain words are quoted, as in pythons["linux/amd64"].
	Path string
	Msg  string
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.File != "" {
		s = e.File + ": " + s
	}
	return s
}

// maxString bounds every string in a catalog (the longest real ones, the
// origin note and download URLs, are well under 4 KiB).
const maxString = 16 << 10

// checkStructure walks the JSON document in data token by token against the
// shape of v (a pointer to the Go type it will be decoded into) before
// encoding/json sees it, and reports, with the JSON path, what encoding/json
// would let through: a duplicate object key (the last value would silently
// win), a key that matches no field exactly (encoding/json matches keys
// case-insensitively, so "Version" would overwrite "version"), a value of
// the wrong type, null where a value is required (null for a list
// included), a number that is not an
// integer, an overlong string, and anything after the document.
func checkStructure(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &walker{dec: dec}
	if err := w.value(reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return &Error{Msg: fmt.Sprintf("data after the JSON document at byte %d (%s): want exactly one JSON object", dec.InputOffset(), describeToken(tok))}
		}
		return &Error{Msg: fmt.Sprintf("data after the JSON document at byte %d: %v", dec.InputOffset(), err)}
	}
	return nil
}

type walker struct{ dec *json.Decoder }

func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, &Error{Path: path, Msg: fmt.Sprintf("invalid JSON at byte %d: %v", w.dec.InputOffset(), err)}
	}
	return tok, nil
}

func (w *walker) value(t reflect.Type, path string) error {
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	return w.valueFrom(tok, t, path)
}

func (w *walker) valueFrom(tok json.Token, t reflect.Type, path string) error {
	if tok == nil { // null
		switch t.Kind() {
		case reflect.Pointer, reflect.Map:
			return nil // absent
		case reflect.Slice:
			// A list is written as [] when empty; null would read as
			// an empty list and hide what was meant.
			return &Error{Path: path, Msg: "null: want a list ([] for none)"}
		}
		return &Error{Path: path, Msg: "null: want " + typeName(t)}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return w.valueFrom(tok, t.Elem(), path)
	case reflect.Struct:
		if tok != json.Delim('{') {
			return mismatch(path, t, tok)
		}
		fields := jsonFields(t)
		return w.object(path, func(k, sub string) error {
			f, ok := fields[k]
			if !ok {
				return &Error{Path: sub, Msg: "unknown field (want one of " + strings.Join(fieldNames(t), ", ") + ")"}
			}
			return w.value(f, sub)
		})
	case reflect.Map:
		if tok != json.Delim('{') {
			return mismatch(path, t, tok)
		}
		return w.object(path, func(_, sub string) error { return w.value(t.Elem(), sub) })
	case reflect.Slice:
		if tok != json.Delim('[') {
			return mismatch(path, t, tok)
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := w.token(path)
		return err
	}
	return scalar(tok, t, path)
}

// object reads the members of an object whose '{' was read, refusing a
// duplicate key; member reads each value (k its key, sub its path).
func (w *walker) object(path string, member func(k, sub string) error) error {
	seen := map[string]bool{}
	for w.dec.More() {
		k, err := w.key(path)
		if err != nil {
			return err
		}
		sub := joinKey(path, k)
		if seen[k] {
			return &Error{Path: sub, Msg: "duplicate key"}
		}
		seen[k] = true
		if err := member(k, sub); err != nil {
			return err
		}
	}
	_, err := w.token(path) // '}'
	return err
}

// scalar checks a string, bool or integer token against t.
func scalar(tok json.Token, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.String:
		s, ok := tok.(string)
		if !ok {
			return mismatch(path, t, tok)
		}
		return checkLen(path, s)
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return mismatch(path, t, tok)
		}
		return nil
	case reflect.Int, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return mismatch(path, t, tok)
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return &Error{Path: path, Msg: fmt.Sprintf("%s: want an integer (%d-bit)", quote(string(n)), t.Bits())}
		}
		return nil
	}
	return &Error{Path: path, Msg: "unsupported type " + t.String()} // a programming error
}

// key reads an object key (or the closing brace, which More ruled out).
func (w *walker) key(path string) (string, error) {
	tok, err := w.token(path)
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", &Error{Path: path, Msg: fmt.Sprintf("invalid JSON at byte %d: want an object key", w.dec.InputOffset())}
	}
	if err := checkLen(path, k); err != nil {
		return "", err
	}
	return k, nil
}

func checkLen(path, s string) error {
	if len(s) > maxString {
		return &Error{Path: path, Msg: fmt.Sprintf("a string of %d bytes: want at most %d", len(s), maxString)}
	}
	return nil
}

func mismatch(path string, t reflect.Type, tok json.Token) error {
	return &Error{Path: path, Msg: fmt.Sprintf("%s: want %s", describeToken(tok), typeName(t))}
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	}
	return t.String()
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' || v == '}' {
			return "an object"
		}
		return "an array"
	case string:
		return "the string " + quote(v)
	case json.Number:
		return "the number " + quote(string(v))
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// jsonFields maps the JSON names of t's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == "-" {
			continue
		}
		if n == "" {
			n = f.Name
		}
		m[n] = f.Type
	}
	return m
}

func fieldNames(t reflect.Type) []string { return slices.Sorted(maps.Keys(jsonFields(t))) }

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends an object key to a JSON path.
func joinKey(path, k string) string {
	if !plainKeyRE.MatchString(k) {
		return path + "[" + quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// quote quotes untrusted text for an error message, cut to a readable length.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}
