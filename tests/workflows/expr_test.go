package workflowstest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This file evaluates the subset of the GitHub Actions expression language
// the workflows use in `if:`, `with:` and `outputs:` (literals, property
// paths, !, ==, !=, &&, ||, parentheses and the status functions), so that
// the workflow tests can follow what a run does under each trigger.

// exprEnv is what an expression can read: inputs and needs are known;
// every other context (matrix, steps, github, secrets, vars, env, runner)
// is a value the test cannot know and stands for a non-empty string unequal
// to every literal, "<path>".
type exprEnv struct {
	inputs map[string]any
	needs  map[string]jobRun
	// status is what success(), failure(), always() and cancelled() give.
	status map[string]bool
}

type jobRun struct {
	result  string // success or skipped
	outputs map[string]any
}

type exprToken struct {
	kind string // str, num, ident, op
	text string
}

func lexExpr(s string) ([]exprToken, error) {
	var out []exprToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string in %q", s)
			}
			out = append(out, exprToken{"str", b.String()})
			i = j + 1
		case strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "!=") || strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			out = append(out, exprToken{"op", s[i : i+2]})
			i += 2
		case strings.ContainsRune("!().", rune(c)):
			out = append(out, exprToken{"op", string(c)})
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			out = append(out, exprToken{"num", s[i:j]})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '-' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, exprToken{"ident", s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unsupported character %q in %q", c, s)
		}
	}
	return out, nil
}

type exprParser struct {
	toks []exprToken
	pos  int
	env  exprEnv
	src  string
}

func (p *exprParser) peek(text string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == "op" && p.toks[p.pos].text == text
}

func (p *exprParser) or() (any, error) {
	v, err := p.and()
	for err == nil && p.peek("||") {
		p.pos++
		var r any
		if r, err = p.and(); err == nil && !truthy(v) {
			v = r
		}
	}
	return v, err
}

func (p *exprParser) and() (any, error) {
	v, err := p.cmp()
	for err == nil && p.peek("&&") {
		p.pos++
		var r any
		if r, err = p.cmp(); err == nil && truthy(v) {
			v = r
		}
	}
	return v, err
}

func (p *exprParser) cmp() (any, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.peek("==") || p.peek("!=") {
		op := p.toks[p.pos].text
		p.pos++
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		return looseEqual(l, r) == (op == "=="), nil
	}
	return l, nil
}

func (p *exprParser) unary() (any, error) {
	if p.peek("!") {
		p.pos++
		v, err := p.unary()
		return !truthy(v), err
	}
	return p.primary()
}

func (p *exprParser) primary() (any, error) {
	if p.pos >= len(p.toks) {
		return nil, fmt.Errorf("%q: unexpected end", p.src)
	}
	t := p.toks[p.pos]
	p.pos++
	switch {
	case t.kind == "op" && t.text == "(":
		v, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(")") {
			return nil, fmt.Errorf("%q: missing )", p.src)
		}
		p.pos++
		return v, nil
	case t.kind == "str":
		return t.text, nil
	case t.kind == "num":
		return strconv.ParseFloat(t.text, 64)
	case t.kind == "ident":
		switch t.text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		if p.peek("(") {
			p.pos++
			if !p.peek(")") {
				return nil, fmt.Errorf("%q: function %s with arguments is not supported here", p.src, t.text)
			}
			p.pos++
			v, ok := p.env.status[t.text]
			if !ok {
				return nil, fmt.Errorf("%q: function %s() is not supported here", p.src, t.text)
			}
			return v, nil
		}
		path := []string{t.text}
		for p.peek(".") {
			p.pos++
			if p.pos >= len(p.toks) || p.toks[p.pos].kind != "ident" {
				return nil, fmt.Errorf("%q: want a property name after .", p.src)
			}
			path = append(path, p.toks[p.pos].text)
			p.pos++
		}
		return p.env.lookup(path), nil
	}
	return nil, fmt.Errorf("%q: unexpected %q", p.src, t.text)
}

func (e exprEnv) lookup(path []string) any {
	switch path[0] {
	case "inputs":
		if len(path) == 2 {
			return e.inputs[path[1]]
		}
	case "needs":
		j, ok := e.needs[path[1]]
		switch {
		case len(path) == 3 && path[2] == "result" && ok:
			return j.result
		case len(path) == 4 && path[2] == "outputs":
			return j.outputs[path[3]]
		case !ok || len(path) < 3:
			return nil
		}
	}
	return "<" + strings.Join(path, ".") + ">"
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// looseEqual is GitHub's ==: strings compare ignoring case; other types
// are coerced to numbers (null and ” are 0, true is 1, a non-numeric
// string is NaN).
func looseEqual(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.EqualFold(as, bs)
	}
	an, bn := toNumber(a), toNumber(b)
	return !math.IsNaN(an) && an == bn
}

func toNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	return math.NaN()
}

// evalExpr evaluates one expression, with or without its ${{ }}.
func evalExpr(expr string, env exprEnv) (any, error) {
	s := strings.TrimSpace(expr)
	if strings.HasPrefix(s, "${{") && strings.HasSuffix(s, "}}") && strings.Count(s, "${{") == 1 {
		s = strings.TrimSpace(s[3 : len(s)-2])
	}
	toks, err := lexExpr(s)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks, env: env, src: s}
	v, err := p.or()
	if err == nil && p.pos != len(toks) {
		err = fmt.Errorf("%q: unexpected %q", s, toks[p.pos].text)
	}
	return v, err
}

// interpolate renders a value that may hold ${{ }} expressions among text,
// as GitHub renders with:, env: and outputs: values.
func interpolate(v any, env exprEnv) (any, error) {
	s, ok := v.(string)
	if !ok {
		return v, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("%q: unterminated ${{", s)
		}
		r, err := evalExpr(s[i+3:i+j], env)
		if err != nil {
			return nil, err
		}
		b.WriteString(s[:i])
		switch r := r.(type) {
		case nil:
		case string:
			b.WriteString(r)
		default:
			b.WriteString(fmt.Sprint(r))
		}
		s = s[i+j+2:]
	}
}

func TestEvalExpr(t *testing.T) {
	env := exprEnv{
		inputs: map[string]any{"catalog-artifact": "catalog", "ray": ""},
		needs:  map[string]jobRun{"catalog": {result: "success", outputs: map[string]any{"artifact": "catalog"}}, "release": {result: "skipped"}},
		status: map[string]bool{"success": true, "failure": false, "always": true, "cancelled": false},
	}
	for _, tc := range []struct {
		expr string
		want any
	}{
		{"${{ inputs.catalog-artifact != '' }}", true},
		{"${{ inputs.catalog-artifact == '' }}", false},
		{"inputs.ray == ''", true},
		{"${{ inputs.missing == '' }}", true}, // null == '' (both 0)
		{"${{ inputs.missing || 'catalog' }}", "catalog"},
		{"${{ inputs.catalog-artifact || 'other' }}", "catalog"},
		{"${{ needs.catalog.outputs.artifact }}", "catalog"},
		{"${{ !cancelled() && needs.catalog.result == 'SUCCESS' && needs.release.result != 'failure' }}", true},
		{"${{ needs.plan.outputs.count != '0' }}", false}, // null == '0'
		{"${{ matrix.count != '0' }}", true},
		{"${{ matrix.entry }}", "<matrix.entry>"},
		{"${{ (inputs.ray == '' || false) && 'yes' }}", "yes"},
		{"${{ 'it''s' }}", "it's"},
		{"${{ 0 == '' }}", true},
		{"${{ 'abc' == 0 }}", false},
	} {
		got, err := evalExpr(tc.expr, env)
		if err != nil {
			t.Errorf("evalExpr(%q): %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("evalExpr(%q) (-want +got):\n%s", tc.expr, diff)
		}
	}
	for _, bad := range []string{"${{ hashFiles('go.sum') }}", "${{ inputs.ray < 1 }}", "${{ (inputs.ray }}", "${{ 'open }}", "${{ inputs.ray inputs.ray }}"} {
		if v, err := evalExpr(bad, env); err == nil {
			t.Errorf("evalExpr(%q) = %v, want an error", bad, v)
		}
	}
	got, err := interpolate("smoke-logs-${{ matrix.kuberay }}-${{ inputs.catalog-artifact }}", env)
	if err != nil || got != "smoke-logs-<matrix.kuberay>-catalog" {
		t.Errorf("interpolate = %v, %v", got, err)
	}
}
