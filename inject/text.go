package inject

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

var (
	docStart = regexp.MustCompile(`^---(\s.*)?$`)
	docEnd   = regexp.MustCompile(`^\.\.\.(\s+#.*)?\s*$`)
	// yamlDirective is a %YAML directive; group 1 is its version.
	yamlDirective = regexp.MustCompile(`^%YAML[ \t]+(\S+)[ \t]*(#.*)?$`)
)

// splitDocuments splits a YAML stream into documents at "---" lines; each
// chunk keeps its separator line, so joining the chunks gives the input.
// Directives (%YAML, %TAG) stay with the document they precede: a chunk
// is the document's directives, its "---" line and its content.
func splitDocuments(data []byte) [][]byte {
	var chunks [][]byte
	start := 0
	// prelude: the lines since start are blank, comments or directives;
	// directive: one of them is a directive; between: no content since
	// the start of the stream or the last "..." line, where a directive
	// may come.
	prelude, directive, between := true, false, true
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		line := strings.TrimRight(string(data[off:next]), "\r\n")
		if off == 0 {
			// A byte order mark may start the stream (yaml.v3 reads it);
			// the line is what follows it.
			line = strings.TrimPrefix(line, bom)
		}
		trimmed := strings.TrimSpace(line)
		switch {
		case docStart.MatchString(line):
			if off > start && !(prelude && directive) {
				chunks = append(chunks, data[start:off])
				start = off
			}
			prelude, directive, between = false, false, false
		case between && strings.HasPrefix(line, "%"):
			if off > start && !prelude {
				chunks = append(chunks, data[start:off])
				start = off
			}
			prelude, directive = true, true
		case docEnd.MatchString(line):
			prelude, between = false, true
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		default:
			prelude, between = false, false
		}
		off = next
	}
	if start < len(data) || len(chunks) == 0 {
		chunks = append(chunks, data[start:])
	}
	return chunks
}

// bom is the UTF-8 byte order mark, which may start a YAML stream.
const bom = "\ufeff"

// maskDirectives returns chunk (one of splitDocuments') for yaml.v3, which
// reads YAML 1.2 documents but refuses their "%YAML 1.2" directive: in the
// chunk's directives, that line becomes a comment of the same length, so
// lines and columns do not move. A %YAML directive of another version
// than 1.1 or 1.2 is an error naming its line.
func maskDirectives(chunk []byte) ([]byte, error) {
	var out []byte
	for off, line := 0, 1; off < len(chunk); line++ {
		end := bytes.IndexByte(chunk[off:], '\n')
		next := len(chunk)
		if end >= 0 {
			next = off + end + 1
		}
		l := strings.TrimRight(string(chunk[off:next]), "\r\n")
		at := off // where the line's text starts
		if off == 0 && strings.HasPrefix(l, bom) {
			// A byte order mark before the first line: the line is what
			// follows it, and the mark stays for yaml.v3.
			l, at = l[len(bom):], len(bom)
		}
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(l, "%") {
			break // the directives end here
		}
		if m := yamlDirective.FindStringSubmatch(l); m != nil {
			switch m[1] {
			case "1.1":
			case "1.2":
				if out == nil {
					out = bytes.Clone(chunk)
				}
				out[at] = '#'
			default:
				return nil, &lineError{line: line, err: fmt.Errorf("%%YAML %s: inject reads YAML 1.1 and 1.2 documents", m[1])}
			}
		}
		off = next
	}
	if out == nil {
		return chunk, nil
	}
	return out, nil
}

// text is one document as lines, with the edits to make to it. Each line
// keeps its own ending, so a file with \r\n (or mixed) line endings keeps
// them on every line inject does not touch.
type text struct {
	lines []string // without the line ending
	ends  []string // each line's ending: "\n", "\r\n", or "" for a last line without one
	// eol is the document's ending, for the lines inject adds: the more
	// frequent of "\n" and "\r\n" ("\n" on a tie).
	eol      string
	finalEOL bool // the last line ends with a line break
	// edits, applied together by render
	deleted  map[int]bool
	replaced map[int]string
	inserts  map[int][]string // lines inserted after line i (-1: before the first)
}

func newText(chunk []byte) *text {
	s := string(chunk)
	t := &text{eol: "\n", deleted: map[int]bool{}, replaced: map[int]string{}, inserts: map[int][]string{}}
	t.finalEOL = strings.HasSuffix(s, "\n")
	if s == "" {
		return t
	}
	crlf := 0
	for s != "" {
		l, end := s, ""
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			l, end, s = s[:i], "\n", s[i+1:]
		} else {
			s = ""
		}
		if end != "" && strings.HasSuffix(l, "\r") {
			l, end = l[:len(l)-1], "\r\n"
			crlf++
		}
		t.lines = append(t.lines, l)
		t.ends = append(t.ends, end)
	}
	if lf := len(t.lines) - crlf - boolInt(!t.finalEOL); crlf > lf {
		t.eol = "\r\n"
	}
	return t
}

// render applies the edits: lines kept or replaced end as they did, lines
// added end with eol, and the last line ends with a line break only if
// the document's last line did.
func (t *text) render() []byte {
	type line struct{ s, end string }
	var out []line
	add := func(ls []string) {
		for _, l := range ls {
			out = append(out, line{l, t.eol})
		}
	}
	add(t.inserts[-1])
	for i, l := range t.lines {
		switch r, ok := t.replaced[i]; {
		case ok:
			out = append(out, line{r, t.ends[i]})
		case !t.deleted[i]:
			out = append(out, line{l, t.ends[i]})
		}
		add(t.inserts[i])
	}
	var b strings.Builder
	for i, l := range out {
		b.WriteString(l.s)
		switch {
		case i == len(out)-1 && !t.finalEOL:
		case l.end == "":
			b.WriteString(t.eol)
		default:
			b.WriteString(l.end)
		}
	}
	return []byte(b.String())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// insertAfter inserts lines after line i (0-based); several inserts after
// the same line keep the order they were made in.
func (t *text) insertAfter(i int, lines ...string) {
	t.inserts[i] = append(t.inserts[i], lines...)
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// lastLine is the index of the last line that belongs to the block that
// starts on line start (0-based) and whose continuation lines are indented
// more than indent; with dashes, lines at indent starting with "-" belong
// too (the items of a sequence whose dashes sit at indent). Comment lines at
// or left of indent, and blank lines, belong only between content lines.
func (t *text) lastLine(start, indent int, dashes bool) int {
	return t.blockEnd(start, indent, dashes, true)
}

// blockEnd is lastLine; without comments, a comment line belongs to the
// block only when a content line of the block follows it.
func (t *text) blockEnd(start, indent int, dashes, comments bool) int {
	last := start
	for i := start + 1; i < len(t.lines); i++ {
		l := t.lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		in := indentOf(l)
		s := strings.TrimSpace(l)
		if in == 0 && (s == "..." || docStart.MatchString(s)) {
			break // the document ends
		}
		if strings.HasPrefix(s, "#") {
			if in > indent && comments {
				last = i
			}
			continue
		}
		if in > indent || (dashes && in == indent && (s == "-" || strings.HasPrefix(s, "- "))) {
			last = i
			continue
		}
		break
	}
	return last
}

// nodeEnd is the last line of a block collection node.
func (t *text) nodeEnd(n *yaml.Node) int {
	switch n.Kind {
	case yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 {
			return n.Line - 1
		}
		return t.lastLine(n.Line-1, n.Column-1, true)
	case yaml.MappingNode:
		if n.Style&yaml.FlowStyle != 0 {
			return n.Line - 1
		}
		// Keys sit at Column-1; the first line may start with "- ".
		return t.lastLine(n.Line-1, n.Column-2, false)
	}
	return n.Line - 1
}

// pairRange is the lines of the key k (at its column) and its value,
// without the comment lines after it.
func (t *text) pairRange(k, v *yaml.Node) (int, int) {
	start := k.Line - 1
	in := k.Column - 1
	dashes := v.Kind == yaml.SequenceNode && v.Column == k.Column && v.Style&yaml.FlowStyle == 0
	return start, t.blockEnd(start, in, dashes, false)
}

// itemRange is the lines of the sequence item n of seq, without the
// comment lines after it.
func (t *text) itemRange(seq, n *yaml.Node) (int, int) {
	start := n.Line - 1
	for start > seq.Line-1 && !strings.HasPrefix(strings.TrimSpace(t.lines[start]), "-") {
		start--
	}
	return start, t.blockEnd(start, seq.Column-1, false, false)
}

func (t *text) deleteLines(from, to int) {
	for i := from; i <= to; i++ {
		t.deleted[i] = true
	}
}

// style is how a document lays out block collections.
type style struct {
	step    int  // spaces per nesting level of mappings
	compact bool // sequences under a key start at the key's column
}

// detectStyle reads the layout from a key whose value is a block sequence
// of mappings (containers, volumes, ...), else uses 2 and compact.
func detectStyle(root *yaml.Node) style {
	st := style{step: 2, compact: true}
	var found bool
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if found {
			return
		}
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Line > k.Line {
					it := v.Content[0]
					if it.Kind == yaml.MappingNode && it.Style&yaml.FlowStyle == 0 && it.Column > v.Column {
						st.compact = v.Column == k.Column
						st.step = it.Column - v.Column
						if st.step < 2 {
							st.step = 2
						}
						found = true
						return
					}
				}
				if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && v.Line > k.Line && v.Column > k.Column && len(v.Content) > 0 {
					st.step = v.Column - k.Column
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return st
}

// item is a value inject writes: an ordered mapping, a list or a scalar.
type item struct {
	kv     []kv
	list   []item
	scalar any
	isList bool
	isMap  bool
}

type kv struct {
	k string
	v item
}

func mapOf(pairs ...kv) item    { return item{kv: pairs, isMap: true} }
func listOf(items ...item) item { return item{list: items, isList: true} }
func scalar(v any) item         { return item{scalar: v} }
func pair(k string, v any) kv   { return kv{k, toItem(v)} }
func emptyMap() item            { return item{isMap: true} }
func (i item) empty() bool      { return (i.isMap && len(i.kv) == 0) || (i.isList && len(i.list) == 0) }
func toItem(v any) item {
	if it, ok := v.(item); ok {
		return it
	}
	return scalar(v)
}

// scalarText renders a scalar as yaml.v3 would (quoted where needed), on
// one line whatever it holds: a string yaml.v3 would write as a block
// scalar (a newline in it) is written double-quoted with escapes instead
// (Go's ASCII quoting is valid YAML double-quoted).
func scalarText(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("inject: marshalling %v: %v", v, err))
	}
	out := strings.TrimSuffix(string(b), "\n")
	if s, ok := v.(string); ok && (strings.ContainsAny(out, "\n\r") || strings.IndexFunc(s, needsEscape) >= 0) {
		return strconv.QuoteToASCII(s)
	}
	return out
}

// needsEscape reports a character a plain or single-quoted YAML scalar
// cannot hold as it is.
func needsEscape(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == utf8.RuneError
}

// emitValue renders "key: value" lines for a mapping entry at indent.
func (st style) emitPair(indent int, p kv, comment string) []string {
	pad := strings.Repeat(" ", indent)
	c := ""
	if comment != "" {
		c = " " + comment
	}
	switch {
	case p.v.empty() && p.v.isMap:
		return []string{pad + p.k + ": {}" + c}
	case p.v.empty() && p.v.isList:
		return []string{pad + p.k + ": []" + c}
	case p.v.isMap:
		return append([]string{pad + p.k + ":" + c}, st.emitMap(indent+st.step, p.v)...)
	case p.v.isList:
		in := indent
		if !st.compact {
			in += st.step
		}
		return append([]string{pad + p.k + ":" + c}, st.emitList(in, p.v, "")...)
	}
	return []string{pad + p.k + ": " + scalarText(p.v.scalar) + c}
}

func (st style) emitMap(indent int, m item) []string {
	var out []string
	for _, p := range m.kv {
		out = append(out, st.emitPair(indent, p, "")...)
	}
	return out
}

// emitList renders the items of a list with their dashes at indent; the
// first line of the first item gets comment.
func (st style) emitList(indent int, l item, comment string) []string {
	var out []string
	for n, it := range l.list {
		c := ""
		if n == 0 && comment != "" {
			c = " " + comment
		}
		out = append(out, st.emitItem(indent, it, c)...)
	}
	return out
}

// emitItem renders one sequence item with its dash at indent; comment (with
// its leading space) ends its first line.
func (st style) emitItem(indent int, it item, comment string) []string {
	pad := strings.Repeat(" ", indent)
	switch {
	case it.isMap && !it.empty():
		lines := st.emitMap(indent+st.step, it)
		lines[0] = pad + "-" + strings.Repeat(" ", st.step-1) + strings.TrimLeft(lines[0], " ")
		// The comment goes on the first line, after a scalar or a key.
		lines[0] += comment
		return lines
	case it.isList && !it.empty():
		return append([]string{pad + "-" + comment}, st.emitList(indent+st.step, it, "")...)
	case it.isMap:
		return []string{pad + "- {}" + comment}
	case it.isList:
		return []string{pad + "- []" + comment}
	}
	return []string{pad + "- " + scalarText(it.scalar) + comment}
}
