package catalog

import (
	"bytes"
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

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error is a problem with a catalog file: the file, the line (when the
// problem was found while decoding), the JSON path of the offending value
// (empty for the whole document) and what was expected.
type Error struct {
	File string
	Line int // 0 when unknown
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
		if e.Line > 0 {
			s = strconv.Itoa(e.Line) + ": " + s
			return e.File + ":" + s
		}
		s = e.File + ": " + s
	}
	return s
}

// maxString bounds every string value in a catalog (the longest real ones,
// the origin note and download URLs, are well under 4 KiB).
const maxString = 16 << 10

// decode decodes data, exactly one JSON object, into c with the strict
// defaults of encoding/json/v2 (duplicate names and names that differ in
// case from a field's are errors) and RejectUnknownMembers, plus the rules
// of checkValue. Errors name the line and the JSON path.
func decode(data []byte, c *Catalog) *Error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	err := json.UnmarshalDecode(dec, c, json.RejectUnknownMembers(true), json.WithUnmarshalers(json.UnmarshalFromFunc(checkValue)))
	if err != nil {
		return decodeError(data, err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return &Error{Line: lineAt(data, int64(len(data)-len(rest))), Msg: "data after the JSON document: want exactly one JSON object"}
	}
	return nil
}

// checkValue refuses null where the Go value is not a pointer or a map
// (encoding/json would leave a string empty and read a list as empty; a
// list is written [] when empty) and strings longer than maxString. It
// leaves every other value to the default decoding.
func checkValue(dec *jsontext.Decoder, v any) error {
	switch dec.PeekKind() {
	case 'n':
		switch t := reflect.TypeOf(v).Elem(); t.Kind() {
		case reflect.Pointer, reflect.Map:
		case reflect.Slice:
			return errors.New("null: want a list ([] for none)")
		default:
			return errors.New("null: want " + typeName(t))
		}
	case '"':
		if s, ok := v.(*string); ok {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if *s = tok.String(); len(*s) > maxString {
				return fmt.Errorf("a string of %d bytes: want at most %d", len(*s), maxString)
			}
			return nil
		}
	}
	return errors.ErrUnsupported // the default decoding
}

// decodeError turns an error of encoding/json/v2 into an *Error with the
// line and the JSON path.
func decodeError(data []byte, err error) *Error {
	var sem *json.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &syn):
		e := &Error{Line: lineAt(data, syn.ByteOffset), Path: jsonPath(syn.JSONPointer)}
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			e.Msg = "duplicate key"
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			e.Msg = "invalid JSON: unexpected end of the document"
		default:
			e.Msg = "invalid JSON: " + syn.Err.Error()
		}
		return e
	case errors.As(err, &sem):
		e := &Error{Line: lineAt(data, sem.ByteOffset), Path: jsonPath(sem.JSONPointer)}
		switch {
		case errors.Is(sem.Err, json.ErrUnknownName):
			e.Msg = "unknown field (want one of " + strings.Join(fieldNames(sem.GoType), ", ") + ")"
		case sem.Err != nil && sem.JSONKind == 0:
			e.Msg = sem.Err.Error() // checkValue's
		default:
			e.Msg = fmt.Sprintf("%s: want %s", describeValue(data, sem.ByteOffset), typeName(sem.GoType))
		}
		return e
	}
	if errors.Is(err, io.EOF) {
		return &Error{Msg: "empty document: want a JSON object"}
	}
	return &Error{Msg: err.Error()}
}

// lineAt returns the line of the byte at off in data.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:min(max(off, 0), int64(len(data)))], []byte("\n"))
}

// jsonPath turns a JSON pointer (/extensions/0/id) into a path
// (extensions[0].id).
func jsonPath(p jsontext.Pointer) string {
	var path string
	for tok := range p.Tokens() {
		if _, err := strconv.ParseUint(tok, 10, 31); err == nil {
			path += "[" + tok + "]"
			continue
		}
		path = joinKey(path, tok)
	}
	return path
}

// describeValue describes the JSON value at off in data for an error.
func describeValue(data []byte, off int64) string {
	v, err := jsontext.NewDecoder(bytes.NewReader(data[off:])).ReadValue()
	if err != nil {
		return "a value"
	}
	switch v.Kind() {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return "the string " + quote(s)
		}
	case '0':
		return "the number " + quote(string(v))
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a value"
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
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
		return fmt.Sprintf("an integer (%d-bit)", t.Bits())
	}
	return t.String()
}

// fieldNames lists the JSON names of struct t's fields, sorted.
func fieldNames(t reflect.Type) []string {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" {
			names[n] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends an object key to a JSON path.
func joinKey(path, k string) string {
	const maxPlainKey = 64 // a longer key is quoted, and so cut
	if !plainKeyRE.MatchString(k) || len(k) > maxPlainKey {
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
