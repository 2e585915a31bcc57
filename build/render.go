package build

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
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
	// PythonRuntime is "base" (the base image ships python3 of the set's
	// version) or "standalone" (StandaloneURL, a python-build-standalone
	// install_only tarball, fetched and unpacked on the build platform).
	PythonRuntime string
	// StandaloneURL may contain {arch} (x86_64 or aarch64).
	StandaloneURL string
	// StandaloneSHA256 maps x86_64 and aarch64 to the tarball's sha256.
	StandaloneSHA256 map[string]string
	// Extensions are the ids (publisher.name) of the extensions, in install
	// order: the definition's ExtensionsMarker line becomes one COPY --link
	// per extension, from its own context ExtensionContext(id)
	// (PrepareContexts), so each extension is its own layer.
	Extensions []string
}

// ExtensionsMarker is the definition's line that Render replaces with one
// COPY --link per extension.
const ExtensionsMarker = "# imagectl:extensions"

// extensionID is what an extension id must look like to name a context and
// a path in the definition: publisher.name, alphanumeric runs joined by '.',
// '_', "__" or dashes (a docker reference path component once lower-cased,
// as BuildKit parses context names), never "..", "/" or a space.
var extensionID = regexp.MustCompile(`^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$`)

// extensionCopies returns the COPY --link lines of ids.
func extensionCopies(ids []string) (string, error) {
	var b strings.Builder
	seen := map[string]bool{}
	for _, id := range ids {
		if !extensionID.MatchString(id) || !strings.Contains(id, ".") {
			return "", fmt.Errorf("render: extension id %q is not publisher.name (letters and digits joined by '.', '_' or '-')", id)
		}
		if seen[strings.ToLower(id)] {
			return "", fmt.Errorf("render: extension %q is listed twice", id)
		}
		seen[strings.ToLower(id)] = true
		fmt.Fprintf(&b, "COPY --link --chown=911:911 --from=%s / /\n", ExtensionContext(id))
	}
	return b.String(), nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// globalArgs are the default values Render gives the global ARGs, checked.
func globalArgs(p Params) (map[string]string, error) {
	if p.ToolsImage == "" {
		return nil, fmt.Errorf("render: no tools image (a build-platform image with python3 and pip)")
	}
	u, err := url.Parse(p.PackageIndex)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("render: package index %q is not an http(s) URL", p.PackageIndex)
	}
	if u.User != nil {
		// A build argument is recorded in the image's history and
		// provenance: no password may go there.
		bare := *u
		bare.User = nil
		return nil, fmt.Errorf("render: package index %s carries credentials (user:password@ before the host), which a build argument would record in the image; give the index without them", bare.String())
	}
	trusted := ""
	if u.Scheme == "http" {
		trusted = u.Hostname()
	}
	vals := map[string]string{
		"TOOLS_IMAGE":                      p.ToolsImage,
		"PIP_INDEX_URL":                    p.PackageIndex,
		"PIP_TRUSTED_HOST":                 trusted,
		"PYTHON_RUNTIME":                   p.PythonRuntime,
		"PYTHON_STANDALONE_URL":            "",
		"PYTHON_STANDALONE_SHA256_X86_64":  "",
		"PYTHON_STANDALONE_SHA256_AARCH64": "",
	}
	for _, platform := range imagespec.Platforms() {
		arch, ok := imagespec.WheelArch(platform)
		if !ok {
			return nil, fmt.Errorf("render: platform %s has no wheel architecture", platform)
		}
		tags, err := imagespec.ManylinuxTags(platform)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		vals["PIP_PLATFORMS_"+strings.ToUpper(arch)] = strings.Join(tags, ",")
	}
	switch p.PythonRuntime {
	case imagespec.PythonRuntimeBase:
	case imagespec.PythonRuntimeStandalone:
		su, err := url.Parse(strings.ReplaceAll(p.StandaloneURL, "{arch}", "x86_64"))
		if err != nil || (su.Scheme != "http" && su.Scheme != "https") || su.Host == "" {
			return nil, fmt.Errorf("render: python-build-standalone URL %q is not an http(s) URL", p.StandaloneURL)
		}
		vals["PYTHON_STANDALONE_URL"] = p.StandaloneURL
		for _, arch := range []string{"x86_64", "aarch64"} {
			sum := p.StandaloneSHA256[arch]
			if !sha256Hex.MatchString(sum) {
				return nil, fmt.Errorf("render: python-build-standalone sha256 for %s is %q, want 64 hex digits", arch, sum)
			}
			vals["PYTHON_STANDALONE_SHA256_"+strings.ToUpper(arch)] = sum
		}
	default:
		return nil, fmt.Errorf("render: Python runtime %q: want %q or %q", p.PythonRuntime, imagespec.PythonRuntimeBase, imagespec.PythonRuntimeStandalone)
	}
	for k, v := range vals {
		if strings.ContainsAny(v, "\"\\\n\r$` ") {
			return nil, fmt.Errorf("render: %s value %q contains a quote, backslash, dollar, backtick, space or newline", k, v)
		}
	}
	return vals, nil
}

// Render returns definition with the global ARGs (declared before the first
// FROM) TOOLS_IMAGE, PIP_INDEX_URL, PIP_TRUSTED_HOST, PYTHON_RUNTIME and
// PYTHON_STANDALONE_* given defaults from p, and PIP_PLATFORMS_X86_64 and
// PIP_PLATFORMS_AARCH64 the comma-separated imagespec.ManylinuxTags of
// linux/amd64 and linux/arm64; stages re-declare them as plain
// "ARG NAME" and so inherit the defaults. Each must be declared exactly once
// in the global scope. PIP_TRUSTED_HOST is set only for a plain-HTTP index.
// The ExtensionsMarker line, which must appear exactly once, becomes one
// "COPY --link --chown=911:911 --from=ext-<id> / /" per p.Extensions.
func Render(definition []byte, p Params) ([]byte, error) {
	vals, err := globalArgs(p)
	if err != nil {
		return nil, err
	}
	copies, err := extensionCopies(p.Extensions)
	if err != nil {
		return nil, err
	}
	markers := 0
	seen := map[string]int{}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(definition))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	global := true
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(line)), "FROM ") {
			global = false
		}
		if strings.TrimSpace(line) == ExtensionsMarker {
			markers++
			out.WriteString(copies)
			continue
		}
		if name, ok := strings.CutPrefix(line, "ARG "); ok && global {
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
	if markers != 1 {
		return nil, fmt.Errorf("render: the definition has %d %q lines, want exactly one (where each extension's COPY --link goes)", markers, ExtensionsMarker)
	}
	names := slices.Sorted(maps.Keys(vals))
	for _, n := range names {
		if seen[n] != 1 {
			return nil, fmt.Errorf("render: the definition declares the global \"ARG %s\" %d times, want exactly once", n, seen[n])
		}
	}
	return out.Bytes(), nil
}
