package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// expr is a JavaScript expression of an object literal that is not a
// literal itself (an identifier, a member access, a call), kept as written.
type expr string

// prop is one property of a parsed object literal, in source order.
type prop struct {
	key string
	val any
}

// object is a parsed object literal.
type object []prop

// parseLiteral parses the JavaScript object or array literal starting at
// src[i] ('{' or '['), as a minifier writes one: string literals become
// string, true/false/!0/!1 bool, numbers float64, nested literals object
// or []any, and anything else an expr. It returns the value and the offset
// after it.
func parseLiteral(src string, i int) (any, int, error) {
	p := &litParser{src: src, i: i}
	v, err := p.value()
	return v, p.i, err
}

type litParser struct {
	src string
	i   int
}

func (p *litParser) errf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.i}, args...)...)
}

func (p *litParser) skipSpace() {
	for p.i < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.i]) >= 0 {
		p.i++
	}
}

func (p *litParser) peek() byte {
	p.skipSpace()
	if p.i >= len(p.src) {
		return 0
	}
	return p.src[p.i]
}

func (p *litParser) value() (any, error) {
	switch p.peek() {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"', '\'':
		start := p.i
		end, err := skipString(p.src, p.i)
		if err != nil {
			return nil, err
		}
		p.i = end
		raw := p.src[start:end]
		if p.peek() != ',' && p.peek() != '}' && p.peek() != ']' {
			// "a"+b: an expression that starts with a string.
			p.i = start
			return p.rawExpr()
		}
		return unquote(raw), nil
	case 0:
		return nil, p.errf("unexpected end of the literal")
	}
	return p.rawExpr()
}

func (p *litParser) object() (any, error) {
	p.i++ // {
	var o object
	for {
		switch p.peek() {
		case '}':
			p.i++
			return o, nil
		case 0:
			return nil, p.errf("object literal not closed")
		}
		var key string
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			end, err := skipString(p.src, p.i)
			if err != nil {
				return nil, err
			}
			key = unquote(p.src[p.i:end])
			p.i = end
		case strings.HasPrefix(p.src[p.i:], "..."):
			p.i += 3
			e, err := p.rawExpr()
			if err != nil {
				return nil, err
			}
			key = "..." + string(e.(expr))
		default:
			start := p.i
			for p.i < len(p.src) && isIdent(p.src[p.i]) {
				p.i++
			}
			if p.i == start {
				return nil, p.errf("want a property name, got %q", p.src[p.i:min(p.i+10, len(p.src))])
			}
			key = p.src[start:p.i]
		}
		var val any = expr(key) // shorthand {a}
		if p.peek() == ':' {
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			val = v
		}
		o = append(o, prop{key, val})
		if p.peek() == ',' {
			p.i++
		}
	}
}

func (p *litParser) array() (any, error) {
	p.i++ // [
	a := []any{}
	for {
		switch p.peek() {
		case ']':
			p.i++
			return a, nil
		case 0:
			return nil, p.errf("array literal not closed")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if p.peek() == ',' {
			p.i++
		}
	}
}

// rawExpr reads an expression up to the ',', '}' or ']' that ends it at
// its own nesting level, strings and templates skipped.
func (p *litParser) rawExpr() (any, error) {
	start, depth := p.i, 0
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(p.src, p.i)
			if err != nil {
				return nil, err
			}
			p.i = end
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return p.ended(start)
			}
			depth--
		case c == ',' && depth == 0:
			return p.ended(start)
		}
		p.i++
	}
	return nil, p.errf("expression not ended")
}

// ended returns the expression src[start:i], which must not be empty.
func (p *litParser) ended(start int) (any, error) {
	e := strings.TrimSpace(p.src[start:p.i])
	if e == "" {
		return nil, p.errf("want a value, got %q", p.src[p.i:p.i+1])
	}
	return literalOf(e), nil
}

// literalOf turns a minifier's spelling of a boolean or a number into its
// value; anything else stays an expr.
func literalOf(s string) any {
	switch s {
	case "!0", "true":
		return true
	case "!1", "false":
		return false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return expr(s)
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skipString returns the offset after the string or template literal at
// src[i] (a template's ${...} parts are skipped with their own strings).
func skipString(src string, i int) (int, error) {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '\\':
			j++
		case c == q:
			return j + 1, nil
		case q == '`' && c == '$' && j+1 < len(src) && src[j+1] == '{':
			depth := 0
			for j++; j < len(src); j++ {
				switch src[j] {
				case '{':
					depth++
				case '}':
					depth--
				case '"', '\'', '`':
					end, err := skipString(src, j)
					if err != nil {
						return 0, err
					}
					j = end - 1
				}
				if depth == 0 {
					break
				}
			}
		case q != '`' && c == '\n':
			return 0, fmt.Errorf("offset %d: string literal not closed on its line", i)
		}
	}
	return 0, fmt.Errorf("offset %d: string literal not closed", i)
}

// unquote returns the text of a '...' or "..." literal, its simple escapes
// resolved.
func unquote(raw string) string {
	body := raw[1 : len(raw)-1]
	if !strings.Contains(body, `\`) {
		return body
	}
	if raw[0] == '"' {
		if s, err := strconv.Unquote(raw); err == nil {
			return s
		}
	}
	return strings.NewReplacer(`\'`, `'`, `\"`, `"`, `\\`, `\`).Replace(body)
}

// objectStart returns the offset of the '{' of the innermost object
// literal that encloses src[i], or -1. It counts braces backwards and
// skips nothing: it is meant for the short, string-light span between an
// object's '{' and one of its properties.
func objectStart(src string, i int) int {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		switch src[j] {
		case '}':
			depth++
		case '{':
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}
