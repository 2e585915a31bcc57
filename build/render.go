package build

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Params are the values rendered into the definition as ARG defaults, so
// that the rendered bytes, which InputsDigest covers, say where every
// input outside the resolved set comes from.
type Params struct {
	// ToolsImage runs on the build platform and needs python3 with pip.
	ToolsImage string
	// PackageIndex is the PEP 503 index pip installs from, e.g.
	// https://pypi.org/simple.
	PackageIndex string
}

// Render returns definition with "ARG TOOLS_IMAGE", "ARG PIP_INDEX_URL" and
// "ARG PIP_TRUSTED_HOST" given defaults from p. Each must appear exactly once
// in definition. PIP_TRUSTED_HOST is set only for a plain-HTTP index.
func Render(definition []byte, p Params) ([]byte, error) {
	if p.ToolsImage == "" {
		return nil, fmt.Errorf("render: no tools image (a build-platform image with python3 and pip)")
	}
	u, err := url.Parse(p.PackageIndex)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("render: package index %q is not an http(s) URL", p.PackageIndex)
	}
	trusted := ""
	if u.Scheme == "http" {
		trusted = u.Hostname()
	}
	vals := map[string]string{
		"TOOLS_IMAGE":      p.ToolsImage,
		"PIP_INDEX_URL":    p.PackageIndex,
		"PIP_TRUSTED_HOST": trusted,
	}
	for k, v := range vals {
		if strings.ContainsAny(v, "\"\\\n\r$` ") {
			return nil, fmt.Errorf("render: %s value %q contains a quote, backslash, dollar, backtick, space or newline", k, v)
		}
	}
	seen := map[string]int{}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(definition))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "ARG "); ok {
			name = strings.TrimSpace(name)
			if v, ok := vals[name]; ok {
				seen[name]++
				line = fmt.Sprintf("ARG %s=\"%s\"", name, v)
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	names := sortedKeys(vals)
	sort.Strings(names)
	for _, n := range names {
		if seen[n] != 1 {
			return nil, fmt.Errorf("render: the definition declares \"ARG %s\" %d times, want exactly once", n, seen[n])
		}
	}
	return out.Bytes(), nil
}
