package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/imagectl/imagectl/debug/dap"
	"github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
)

// ExtensionID is the extension whose code the contract is about.
const ExtensionID = "anyscalecompute.ray-distributed-debugger"

// ReadFrom is the version of the extension the contract was read from.
const ReadFrom = "0.1.6"

// maxScript bounds the main script read from a VSIX (0.1.6's is 113 KiB).
const maxScript = 32 << 20

// Difference is one way a version's code differs from what the image
// assumes.
type Difference struct {
	// Item names what the image assumes: "setting", "localRoot default",
	// "attach configuration", "paused-workers query", "worker query",
	// "running-tasks query" or "State API query".
	Item string
	// File is the VSIX entry it was read in.
	File string
	// Detail says what was found and what is expected.
	Detail string
}

func (d Difference) String() string { return d.File + ": " + d.Item + ": " + d.Detail }

// Error is the refusal of a version whose contract differs.
type Error struct {
	ID, Version string
	// Where names the file checked (a VSIX path or a cache entry).
	Where       string
	Differences []Difference
}

func (e *Error) Error() string {
	ds := make([]string, len(e.Differences))
	for i, d := range e.Differences {
		ds[i] = d.String()
	}
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	return fmt.Sprintf("extension %s@%s%s does not behave as the image assumes (contract read from %s %s): %s; read the extension's code, then update extensions/contract, the image's settings and the smoke probe together, or keep the catalog on a version that passes",
		e.ID, e.Version, where, ExtensionID, ReadFrom, strings.Join(ds, "; "))
}

// CheckVSIX reads the VSIX in r (size bytes) under the archive limits lim
// and checks its contract (Check). It returns an *Error naming every
// difference, or nil when the contract holds; any other error means the
// VSIX could not be read.
func CheckVSIX(ctx context.Context, r io.ReaderAt, size int64, lim vsix.Limits) error {
	info, err := vsix.IdentifyWithin(ctx, r, size, lim)
	if err != nil {
		return err
	}
	files, err := vsix.ReadFiles(ctx, r, size, lim, maxScript, vsix.PackageJSONPath)
	if err != nil {
		return err
	}
	pj, ok := files[vsix.PackageJSONPath]
	if !ok {
		return fmt.Errorf("no %s in the VSIX", vsix.PackageJSONPath)
	}
	main, err := mainPath(pj)
	if err != nil {
		return err
	}
	files, err = vsix.ReadFiles(ctx, r, size, lim, maxScript, main)
	if err != nil {
		return err
	}
	js, ok := files[main]
	if !ok {
		return fmt.Errorf("%s: main names %s, which the VSIX does not hold", vsix.PackageJSONPath, main)
	}
	if ds := Check(pj, main, js); len(ds) > 0 {
		return &Error{ID: info.ID(), Version: info.Version, Differences: ds}
	}
	return nil
}

// mainPath is the VSIX entry of package.json's main script.
func mainPath(pj []byte) (string, error) {
	var m struct {
		Main string `json:"main"`
	}
	if err := json.Unmarshal(pj, &m); err != nil {
		return "", fmt.Errorf("%s: %w", vsix.PackageJSONPath, err)
	}
	if m.Main == "" {
		return "", fmt.Errorf("%s has no main script (the code the contract is read from)", vsix.PackageJSONPath)
	}
	p := path.Join(vsix.ExtensionDir, path.Clean("/" + m.Main)[1:])
	if !strings.HasSuffix(p, ".js") {
		p += ".js"
	}
	return p, nil
}

// Check checks package.json (the VSIX's extension/package.json) and the
// main script js (its VSIX entry name is mainFile) against what the image
// assumes, and returns every difference (none: the contract holds).
func Check(packageJSON []byte, mainFile string, js []byte) []Difference {
	c := &checker{file: mainFile, js: string(js)}
	c.setting(packageJSON)
	c.localRootDefault()
	c.attach()
	c.queries()
	return c.diffs
}

type checker struct {
	file  string
	js    string
	diffs []Difference
}

func (c *checker) add(file, item, format string, args ...any) {
	c.diffs = append(c.diffs, Difference{Item: item, File: file, Detail: fmt.Sprintf(format, args...)})
}

// snippet is the script around offset i, for a message.
// maxSnippet bounds the script quoted in one message.
const maxSnippet = 300

// snippet is the script from offset i to j, for a message: at most
// maxSnippet bytes of it.
func (c *checker) snippet(i, j int) string {
	i, j = max(i, 0), min(j, len(c.js))
	if i >= j {
		return ""
	}
	if j-i > maxSnippet {
		return safetext.Sanitize(c.js[i:i+maxSnippet]) + "…"
	}
	return safetext.Sanitize(c.js[i:j])
}

// clip is s for a message: at most maxSnippet bytes of it, sanitized.
func clip(s string) string {
	if len(s) > maxSnippet {
		return safetext.Sanitize(s[:maxSnippet]) + "…"
	}
	return safetext.Sanitize(s)
}

// maxPerSite bounds the differences reported for one attach configuration.
const maxPerSite = 10

const key = imagespec.SettingClusterDashboards

// setting checks the declaration of the clusterDashboards setting and how
// the code reads its entries.
func (c *checker) setting(packageJSON []byte) {
	const item = "setting"
	var pj struct {
		Contributes struct {
			Configuration json.RawMessage `json:"configuration"`
		} `json:"contributes"`
	}
	if err := json.Unmarshal(packageJSON, &pj); err != nil {
		c.add(vsix.PackageJSONPath, item, "does not parse: %v", err)
		return
	}
	// contributes.configuration is one object or a list of them.
	type section struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var sections []section
	raw := bytes.TrimSpace(pj.Contributes.Configuration)
	if len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &sections)
	} else if len(raw) > 0 {
		var s section
		_ = json.Unmarshal(raw, &s)
		sections = []section{s}
	}
	var declared []string
	found := false
	for _, s := range sections {
		for k := range s.Properties {
			declared = append(declared, k)
			if k == key {
				found = true
			}
		}
	}
	if !found {
		sort.Strings(declared)
		c.add(vsix.PackageJSONPath, item, "contributes.configuration declares no %s (it declares %s); the image writes that key into code-server's settings.json",
			key, orNone(declared))
	}

	// The code reads the setting and takes each entry's host and
	// localRoot: getConfiguration().get(KEY) or
	// getConfiguration("anyscalecompute.ray-distributed-debugger").get("clusterDashboards").
	prefix, leaf, _ := strings.Cut(key, ".ray-distributed-debugger.")
	prefix += ".ray-distributed-debugger"
	// The key may also sit in a variable first, as 0.1.6 keeps its other
	// keys: s="…initialized", then getConfiguration().get(s).
	alts := []string{
		`getConfiguration\(\s*\)\s*\.get\(\s*["']` + regexp.QuoteMeta(key) + `["']`,
		`getConfiguration\(\s*["']` + regexp.QuoteMeta(prefix) + `["']\s*\)\s*\.get\(\s*["']` + regexp.QuoteMeta(leaf) + `["']`,
	}
	for _, m := range regexp.MustCompile(`(?:^|[^\w$.])([A-Za-z_$][\w$]*)\s*=\s*["']`+regexp.QuoteMeta(key)+`["']`).FindAllStringSubmatch(c.js, -1) {
		alts = append(alts, `getConfiguration\(\s*\)\s*\.get\(\s*`+regexp.QuoteMeta(m[1])+`\s*[,)]`)
	}
	reads := regexp.MustCompile(strings.Join(alts, "|")).FindAllStringIndex(c.js, -1)
	if len(reads) == 0 {
		c.add(c.file, item, "the code never reads %s (no getConfiguration().get(%q)); the image configures the dashboards only through that key", key, key)
		return
	}
	// Within the statement that follows a read, each entry e is taken as
	// e.host and e.localRoot.
	member := regexp.MustCompile(`([A-Za-z_$][\w$]*)\.(host|localRoot)\b`)
	for _, r := range reads {
		end := min(r[1]+400, len(c.js))
		if k := strings.Index(c.js[r[1]:end], "}()"); k >= 0 {
			end = r[1] + k
		}
		seen := map[string]map[string]bool{}
		for _, m := range member.FindAllStringSubmatch(c.js[r[1]:end], -1) {
			if seen[m[1]] == nil {
				seen[m[1]] = map[string]bool{}
			}
			seen[m[1]][m[2]] = true
		}
		ok := false
		for _, f := range seen {
			ok = ok || f["host"] && f["localRoot"]
		}
		if !ok {
			c.add(c.file, item, "the entries of %s are not read as {host, localRoot} (no entry.host and entry.localRoot after the read: %s…); the image writes [{\"host\": \"127.0.0.1:8265\", \"localRoot\": %q}]",
				key, c.snippet(r[0], end), imagespec.DebuggerLocalRoot)
		}
	}
}

// defaultRe matches a localRoot that defaults to "${workspaceFolder}":
// this.localRoot=t ?? "${workspaceFolder}" or r.localRoot ?? "...".
var defaultRe = regexp.MustCompile(`((?:this\.)?localRoot\s*=\s*[A-Za-z_$][\w$]*|[A-Za-z_$][\w$]*\.localRoot)\s*(\?\?|\|\||&&|\?)\s*(?:"\$\{workspaceFolder\}"|'\$\{workspaceFolder\}')`)

// localRootDefault checks that every default of localRoot is `??`.
func (c *checker) localRootDefault() {
	const item = "localRoot default"
	ms := defaultRe.FindAllStringSubmatchIndex(c.js, -1)
	if len(ms) == 0 {
		c.add(c.file, item, `no localRoot ?? "${workspaceFolder}" in the code; the image's localRoot %q (imagespec.DebuggerLocalRoot) reaches the attach only if an empty localRoot is kept`, imagespec.DebuggerLocalRoot)
		return
	}
	for _, m := range ms {
		if op := c.js[m[4]:m[5]]; op != "??" {
			c.add(c.file, item, "%s: localRoot defaults to \"${workspaceFolder}\" with %s, want ??: the image's localRoot %q would become ${workspaceFolder} and the worker's cwd would be mapped onto it",
				c.snippet(m[0], m[1]), op, imagespec.DebuggerLocalRoot)
		}
	}
}

// The sentinels the probe's attach arguments are built with, bound to the
// extension's expressions.
const (
	sentinelHost = "\x00host"
	sentinelPort = -7
	sentinelRoot = "\x00localRoot"
)

var attachRe = regexp.MustCompile(`\brequest\s*:\s*["']attach["']`)

// attach checks every attach configuration in the code against the one the
// probe imitates (dap.ExtensionAttachArguments).
func (c *checker) attach() {
	const item = "attach configuration"
	want := dap.ExtensionAttachArguments(sentinelHost, sentinelPort, sentinelRoot)
	ms := attachRe.FindAllStringIndex(c.js, -1)
	if len(ms) == 0 {
		c.add(c.file, item, `no attach configuration {type:"python", request:"attach", …} in the code`)
		return
	}
	for _, m := range ms {
		start := objectStart(c.js, m[0])
		if start < 0 {
			c.add(c.file, item, "%s: not inside an object literal", c.snippet(m[0]-40, m[1]+40))
			continue
		}
		got, end, err := parseLiteral(c.js, start)
		if err != nil {
			c.add(c.file, item, "%s…: does not parse as an object literal: %v", c.snippet(start, start+200), err)
			continue
		}
		b := &binding{}
		var problems []string
		gm := toMap(got)
		// The configuration's name is only shown to the user.
		if g, ok := gm.(map[string]any); ok {
			delete(g, "name")
		}
		delete(want, "name")
		compare(gm, want, "", b, &problems)
		if b.root != "" && !c.isDefaultedLocalRoot(b.root) {
			problems = append(problems, fmt.Sprintf(`the pathMappings' localRoot %s is not the cluster's localRoot (no %s = ….localRoot ?? "${workspaceFolder}")`, b.root, b.root))
		}
		if len(problems) > maxPerSite {
			problems = append(problems[:maxPerSite], fmt.Sprintf("and %d more", len(problems)-maxPerSite))
		}
		in := c.snippet(start, end)
		for _, p := range problems {
			c.add(c.file, item, "%s (in %s)", p, in)
		}
	}
}

// isDefaultedLocalRoot reports whether the variable v is assigned a
// defaulted localRoot (`let o=r.localRoot??"${workspaceFolder}"`).
func (c *checker) isDefaultedLocalRoot(v string) bool {
	re := regexp.MustCompile(`(?:^|[^\w$.])` + regexp.QuoteMeta(v) + `\s*=\s*[A-Za-z_$][\w$]*\.localRoot\s*(?:\?\?|\|\|)`)
	return re.MatchString(c.js)
}

// binding holds the extension's expressions bound to the sentinels.
type binding struct{ host, port, root string }

// toMap turns parsed literals into the shapes of the probe's arguments
// (map[string]any, []any, string, bool, float64, expr).
func toMap(v any) any {
	switch v := v.(type) {
	case object:
		m := make(map[string]any, len(v))
		for _, p := range v {
			m[p.key] = toMap(p.val)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = toMap(e)
		}
		return out
	}
	return v
}

// compare appends a sentence to problems for every way got differs from
// want at path at; an expression stands for a sentinel, the same one
// everywhere.
func compare(got, want any, at string, b *binding, problems *[]string) {
	name := strings.TrimPrefix(at, ".")
	bind := func(slot *string, what string) {
		e, ok := got.(expr)
		switch {
		case !ok:
			*problems = append(*problems, fmt.Sprintf("%s is %s, want the %s", name, show(got), what))
		case *slot == "":
			*slot = string(e)
		case *slot != string(e):
			*problems = append(*problems, fmt.Sprintf("%s is %s, want %s, the %s used elsewhere", name, e, *slot, what))
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s is %s, want an object", name, show(got)))
			return
		}
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				*problems = append(*problems, fmt.Sprintf("%s has no %s, want %s", orTop(name), k, show(w[k])))
				continue
			}
			compare(g[k], w[k], at+"."+k, b, problems)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				*problems = append(*problems, fmt.Sprintf("%s has %s: %s, which the image does not expect", orTop(name), k, show(g[k])))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s is %s, want a list of %d", name, show(got), len(w)))
			return
		}
		if len(g) != len(w) {
			*problems = append(*problems, fmt.Sprintf("%s has %d entries, want %d", name, len(g), len(w)))
		}
		for i := range min(len(g), len(w)) {
			compare(g[i], w[i], fmt.Sprintf("%s[%d]", at, i), b, problems)
		}
	case string:
		switch w {
		case sentinelHost:
			bind(&b.host, "worker's host")
		case sentinelRoot:
			bind(&b.root, "cluster's localRoot")
		default:
			if got != w {
				*problems = append(*problems, fmt.Sprintf("%s is %s, want %q", name, show(got), w))
			}
		}
	case int:
		if w == sentinelPort {
			bind(&b.port, "worker's debugger port")
		} else if got != float64(w) {
			*problems = append(*problems, fmt.Sprintf("%s is %s, want %d", name, show(got), w))
		}
	default:
		if got != want {
			*problems = append(*problems, fmt.Sprintf("%s is %s, want %v", name, show(got), want))
		}
	}
}

func orTop(name string) string {
	if name == "" {
		return "the configuration"
	}
	return name
}

func show(v any) string {
	switch v := v.(type) {
	case string:
		if v == sentinelHost || v == sentinelRoot {
			return "an expression"
		}
		return clip(fmt.Sprintf("%q", v))
	case expr:
		return clip(string(v))
	case map[string]any:
		return "{" + strings.Join(sortedKeys(v), ", ") + "}"
	case []any:
		return fmt.Sprintf("a list of %d", len(v))
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// queryRe finds a State API list query in the code.
var queryRe = regexp.MustCompile(`/api/v0/(workers|tasks)\?`)

// literalAround returns the string or template literal that holds offset
// i: from the nearest quote before i (a URL holds none) to its end.
func literalAround(js string, i int) (string, bool) {
	start := strings.LastIndexAny(js[:i], "`\"'")
	if start < 0 {
		return "", false
	}
	end, err := skipString(js, start)
	if err != nil || end <= i {
		return "", false
	}
	return js[start+1 : end-1], true
}

// placeholderRe is a template literal's ${...}.
var placeholderRe = regexp.MustCompile(`\$\{[^}]*\}`)

// workerID stands for the worker id the extension interpolates.
const workerID = "WORKER_ID"

// queries checks the State API queries the code polls against the ones
// the probe sends.
func (c *checker) queries() {
	type kind struct{ item, endpoint, wantName, want string }
	kinds := []kind{
		{"paused-workers query", "workers", "debug/dashboard.PausedWorkersQuery", dashboard.PausedWorkersQuery},
		{"worker query", "workers", "debug/dashboard.WorkerQuery", dashboard.WorkerQuery(workerID)},
		{"running-tasks query", "tasks", "debug/dashboard.RunningTasksQuery", dashboard.RunningTasksQuery(workerID)},
	}
	seen := make([]bool, len(kinds))
	for _, m := range queryRe.FindAllStringSubmatchIndex(c.js, -1) {
		endpoint := c.js[m[2]:m[3]]
		lit, ok := literalAround(c.js, m[0])
		if !ok {
			c.add(c.file, "State API query", "%s…: a query to /api/v0/%s not written as one string or template literal", c.snippet(m[0]-60, m[1]+60), endpoint)
			continue
		}
		_, q, _ := strings.Cut(lit, "/api/v0/"+endpoint+"?")
		q = placeholderRe.ReplaceAllString(q, workerID)
		got, err := url.ParseQuery(q)
		q = strings.ReplaceAll(q, workerID, "{worker_id}")
		if err != nil {
			c.add(c.file, "State API query", "GET /api/v0/%s?%s does not parse: %v", endpoint, clip(q), err)
			continue
		}
		k := -1
		switch {
		case endpoint == "tasks":
			k = 2
		case slices.Contains(got["filter_keys"], "num_paused_threads"):
			k = 0
		case slices.Contains(got["filter_keys"], "worker_id"):
			k = 1
		}
		if k < 0 {
			c.add(c.file, "State API query", "GET /api/v0/%s?%s is a query the probe does not copy (it copies the paused-workers, worker and running-tasks queries of %s)", endpoint, clip(q), ReadFrom)
			continue
		}
		seen[k] = true
		want, _ := url.ParseQuery(kinds[k].want)
		if d := queryDiff(got, want); d != "" {
			c.add(c.file, kinds[k].item, "GET /api/v0/%s?%s differs from %s, what the probe sends: %s", endpoint, clip(q), kinds[k].wantName, d)
		}
	}
	for i, k := range kinds {
		if !seen[i] {
			c.add(c.file, k.item, "the code sends no GET /api/v0/%s?%s (%s, what the probe sends)", k.endpoint, strings.ReplaceAll(k.want, workerID, "{worker_id}"), k.wantName)
		}
	}
}

// queryDiff names every parameter whose values (in order: filter_keys,
// filter_predicates and filter_values pair up by position) differ.
func queryDiff(got, want url.Values) string {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	for _, k := range names {
		g, w := got[k], want[k]
		switch {
		case g == nil:
			out = append(out, fmt.Sprintf("%s is missing, want %s", k, showValues(w)))
		case w == nil:
			out = append(out, fmt.Sprintf("%s=%s is new", k, showValues(g)))
		case !slices.Equal(g, w):
			out = append(out, fmt.Sprintf("%s is %s, want %s", k, showValues(g), showValues(w)))
		}
	}
	return strings.Join(out, ", ")
}

func showValues(v []string) string {
	s := strings.ReplaceAll(strings.Join(v, ","), workerID, "{worker_id}")
	if len(v) > 1 {
		s = "[" + s + "]"
	}
	return safetext.Sanitize(s)
}
