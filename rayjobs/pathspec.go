package rayjobs

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// pattern is one compiled line of a gitwildmatch PathSpec, as the pathspec
// 0.8.1 that Ray vendors (python/ray/_private/thirdparty/pathspec,
// patterns/gitwildmatch.py) compiles it: include true excludes the path
// (it "matches"), false re-includes it (a "!" line).
type pattern struct {
	re      *regexp.Regexp
	include bool
	source  string
}

// pathSpec is an ordered list of patterns; the last pattern that matches a
// path decides (util.match_file).
type pathSpec []pattern

// compilePathSpec compiles lines as PathSpec.from_lines("gitwildmatch",
// lines) does: empty strings are skipped, every line is stripped of
// surrounding white space, comments ("#"), blank lines and a lone "/" are
// no-ops.
func compilePathSpec(lines []string) (pathSpec, error) {
	var ps pathSpec
	for _, line := range lines {
		if line == "" {
			continue
		}
		expr, include, ok := gitWildMatchRegex(line)
		if !ok {
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", strings.TrimSpace(line), err)
		}
		ps = append(ps, pattern{re: re, include: include, source: line})
	}
	return ps, nil
}

// match reports whether the normalised relative path p is matched (and so
// excluded), as util.match_file: every pattern is tried, the last match wins.
func (ps pathSpec) match(p string) bool {
	p = strings.TrimPrefix(p, "./")
	matched := false
	for _, pat := range ps {
		if pat.re.MatchString(p) {
			matched = pat.include
		}
	}
	return matched
}

// pyStrip is Python's str.strip(): it removes the characters for which
// str.isspace() is true, which includes the ASCII separators 0x1c-0x1f that
// Go's unicode.IsSpace leaves.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// gitWildMatchRegex is GitWildMatchPattern.pattern_to_regex of pathspec
// 0.8.1, producing an RE2 expression: ok is false for a line that is a no-op.
func gitWildMatchRegex(line string) (expr string, include bool, ok bool) {
	p := pyStrip(line)
	if strings.HasPrefix(p, "#") || p == "/" || p == "" {
		return "", false, false
	}
	include = true
	if strings.HasPrefix(p, "!") {
		include = false
		p = p[1:]
	}
	p = strings.TrimPrefix(p, `\`)
	segs := strings.Split(p, "/")
	switch {
	case segs[0] == "":
		// A leading slash anchors the pattern at the root.
		segs = segs[1:]
	case len(segs) == 1 || (len(segs) == 2 && segs[1] == ""):
		// A single segment (or "dir/") matches at any depth.
		if segs[0] != "**" {
			segs = append([]string{"**"}, segs...)
		}
	}
	if len(segs) > 1 && segs[len(segs)-1] == "" {
		// A trailing slash matches everything below the directory.
		segs[len(segs)-1] = "**"
	}
	var b strings.Builder
	b.WriteString("^")
	needSlash := false
	end := len(segs) - 1
	for i, seg := range segs {
		switch {
		case seg == "**":
			switch {
			case i == 0 && i == end:
				b.WriteString(".+")
			case i == 0:
				b.WriteString("(?:.+/)?")
				needSlash = false
			case i == end:
				b.WriteString("/.*")
			default:
				b.WriteString("(?:/.+)?")
				needSlash = true
			}
		case seg == "*":
			if needSlash {
				b.WriteString("/")
			}
			b.WriteString("[^/]+")
			needSlash = true
		default:
			if needSlash {
				b.WriteString("/")
			}
			b.WriteString(translateSegmentGlob(seg))
			if i == end && include {
				b.WriteString("(?:/.*)?")
			}
			needSlash = true
		}
	}
	// Python's "$" also matches before a final newline; a path never ends
	// in one here, so "$" and RE2's "$" agree.
	b.WriteString("$")
	return b.String(), include, true
}

// translateSegmentGlob is GitWildMatchPattern._translate_segment_glob: "*"
// and "?" never match "/", "[...]" is a bracket expression ("[!...]"
// negated, a leading "^" literal), "\" escapes the next character, an
// unclosed "[" is literal.
func translateSegmentGlob(pat string) string {
	rs := []rune(pat)
	var b strings.Builder
	escape := false
	for i, end := 0, len(rs); i < end; {
		c := rs[i]
		i++
		switch {
		case escape:
			escape = false
			b.WriteString(regexp.QuoteMeta(string(c)))
		case c == '\\':
			escape = true
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := i
			if j < end && rs[j] == '!' {
				j++
			}
			if j < end && rs[j] == ']' {
				j++
			}
			for j < end && rs[j] != ']' {
				j++
			}
			if j >= end {
				b.WriteString(`\[`)
				continue
			}
			j++ // one past the closing bracket
			b.WriteString("[")
			if rs[i] == '!' {
				b.WriteString("^")
				i++
			} else if rs[i] == '^' {
				b.WriteString(`\^`)
				i++
			}
			// Python passes the expression through with backslashes
			// doubled; RE2 needs "[" and a leading "]" escaped inside a
			// class, which Python's re takes literally there.
			body := rs[i : j-1]
			for k, r := range body {
				switch {
				case r == '\\':
					b.WriteString(`\\`)
				case r == '[' || (r == ']' && k == 0):
					b.WriteString(`\` + string(r))
				default:
					b.WriteRune(r)
				}
			}
			b.WriteString("]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}
