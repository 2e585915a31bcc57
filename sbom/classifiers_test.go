package sbom

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/anchore/syft/syft/file"
	"github.com/anchore/syft/syft/pkg"
	"github.com/anchore/syft/syft/pkg/cataloger/binary"
	"github.com/anchore/syft/syft/source"
	"github.com/anchore/syft/syft/source/directorysource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// firstRead is the end of containsAny's first read with nodeOldLiterals
// (the longest is 9 bytes): 1 MiB and 8 bytes; each later read ends 1 MiB
// further, after the last 8 bytes of the one before. A literal across
// that end is found only through that overlap.
const firstRead = 1<<20 + 8

// binaryLike is n bytes that look like an executable to the Node.js
// classifier's first pattern: about one byte in four a NUL, the rest
// printable, with no "v" after a NUL (so none of nodeOldLiterals).
func binaryLike(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		if r.IntN(4) == 0 {
			b[i] = 0
		} else {
			b[i] = byte('A' + r.IntN(26))
		}
	}
	return b
}

// splice returns b with s written at off.
func splice(b []byte, off int, s string) []byte {
	b = bytes.Clone(b)
	copy(b[off:], s)
	return b
}

// classify runs syft's binary classifier cataloger with cfg over a
// directory holding content as usr/bin/node, and returns what it finds.
func classify(t testing.TB, cfg binary.ClassifierCatalogerConfig, content []byte) []pkg.Package {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr", "bin", "node"), content, 0o755); err != nil {
		t.Fatal(err)
	}
	return classifyDir(t, cfg, dir)
}

func classifyDir(t testing.TB, cfg binary.ClassifierCatalogerConfig, dir string) []pkg.Package {
	t.Helper()
	pkgs, _, err := binary.NewClassifierCataloger(cfg).Catalog(context.Background(), dirResolver(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// dirResolver is syft's file resolver of dir, as a directory source sees
// it.
func dirResolver(t testing.TB, dir string) file.Resolver {
	t.Helper()
	src, err := directorysource.NewFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := src.FileResolver(source.SquashedScope)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// filesResolver writes files (name -> content) into a new directory and
// returns dirResolver of it.
func filesResolver(t testing.TB, files map[string][]byte) file.Resolver {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dirResolver(t, dir)
}

// TestNodeClassifierFindsWhatSyftFinds runs syft's classifier cataloger
// with its own classifiers and with classifierConfig's over node files
// made to match either pattern, both, neither, or a literal without the
// rest of the pattern: the packages are the same, and one is found where
// syft finds one.
func TestNodeClassifierFindsWhatSyftFinds(t *testing.T) {
	const size = 3<<20 + 12345 // several of syft's 1 MiB chunks and of containsAny's
	body := binaryLike(size, 1)
	cases := []struct {
		name    string
		content []byte
		version string // what syft finds; "" for nothing
	}{
		{"current node.js", splice(body, size-4096, "node.js/v22.9.0"), "22.9.0"},
		{"node 0.10", splice(body, 4096, "\x00node v0.10.48\x00"), "0.10.48"},
		{"node 4", splice(body, 2<<20, "\x00v4.9.1\x00"), "4.9.1"},
		{"old pattern across containsAny's first read", splice(body, firstRead-5, "\x00node v6.17.1\x00"), "6.17.1"},
		{"old pattern at the very end", splice(body, size-len("\x00v5.12.0\x00"), "\x00v5.12.0\x00"), "5.12.0"},
		{"both: the old pattern first, as in syft", splice(splice(body, 100, "node.js/v22.9.0"), size-100, "\x00v6.1.0\x00"), "6.1.0"},
		{"an old literal without the pattern", splice(splice(body, 100, "\x00v4.x\x00"), 5000, "node.js/v20.20.2"), "20.20.2"},
		{"neither", body, ""},
		{"empty", nil, ""},
	}
	defaults := binary.DefaultClassifierCatalogerConfig()
	fast := classifierConfig()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := classify(t, defaults, c.content)
			got := classify(t, fast, c.content)
			if diff := cmp.Diff(summarize(want), summarize(got)); diff != "" {
				t.Errorf("packages (-syft's classifiers +classifierConfig's):\n%s", diff)
			}
			var versions []string
			for _, p := range got {
				versions = append(versions, p.Name+"@"+p.Version)
			}
			var wantVersions []string
			if c.version != "" {
				wantVersions = []string{"node@" + c.version}
			}
			if diff := cmp.Diff(wantVersions, versions); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
		})
	}
}

// summarize is what a package says in an SBOM: its identity, locations,
// PURL, CPEs and metadata.
func summarize(pkgs []pkg.Package) []string {
	var out []string
	for _, p := range pkgs {
		var locs []string
		for _, l := range p.Locations.ToSlice() {
			locs = append(locs, l.RealPath+" "+l.AccessPath+" "+strings.Join(mapKeys(l.Annotations), ","))
		}
		var cpes []string
		for _, c := range p.CPEs {
			cpes = append(cpes, c.Attributes.BindToFmtString())
		}
		out = append(out, strings.Join([]string{string(p.ID()), p.Name, p.Version, p.PURL, string(p.Type), p.FoundBy, strings.Join(locs, ";"), strings.Join(cpes, ";"), reflect.TypeOf(p.Metadata).String(), stringOf(p.Metadata)}, " | "))
	}
	return out
}

func mapKeys(m map[string]string) []string {
	var ks []string
	for k, v := range m {
		ks = append(ks, k+"="+v)
	}
	return ks
}

func stringOf(v any) string {
	var b strings.Builder
	b.WriteString(reflect.ValueOf(v).String())
	if m, ok := v.(pkg.BinarySignature); ok {
		for _, e := range m.Matches {
			b.WriteString(" " + e.Classifier + " " + e.Location.RealPath)
		}
	}
	return b.String()
}

// TestNodeClassifierSkipsTheOldPattern reads a file through syft's own
// matcher context type (the second parameter of its EvidenceMatcher,
// made by reflection): lacksAll reads it, so the first pattern is skipped
// for a file without its literals, and not for one with them.
func TestNodeClassifierSkipsTheOldPattern(t *testing.T) {
	res := filesResolver(t, map[string][]byte{
		"current": splice(binaryLike(1<<20, 2), 10, "node.js/v22.9.0"),
		"old":     splice(binaryLike(1<<20, 2), 1<<19, "\x00node v0.10.48\x00"),
	})
	//lint:ignore SA1019 the type of syft's classifiers' matchers (binutils is internal to syft)
	var matcher binary.EvidenceMatcher
	ctxType := reflect.TypeOf(matcher).In(1)
	for name, wantAbsent := range map[string]bool{"current": true, "old": false} {
		locs, err := res.FilesByPath("/" + name)
		if err != nil || len(locs) != 1 {
			t.Fatalf("%s: %v %v", name, locs, err)
		}
		c := reflect.New(ctxType).Elem()
		c.FieldByName("Resolver").Set(reflect.ValueOf(res))
		c.FieldByName("Location").Set(reflect.ValueOf(locs[0]))
		absent, err := lacksAll(c.Interface(), nodeOldLiterals)
		if err != nil || absent != wantAbsent {
			t.Errorf("%s: lacksAll = %v, %v; want %v, nil", name, absent, err, wantAbsent)
		}
	}
}

// TestScanUsesTheFastNodeClassifier scans an image with a node binary:
// syft's classifier finds it (a binary package) through fastNodeMatcher,
// which skipped the first pattern.
func TestScanUsesTheFastNodeClassifier(t *testing.T) {
	img, err := mutate.AppendLayers(testImage(t), layer(t, map[string]string{
		"usr/bin/node": string(splice(binaryLike(1<<20, 4), 1000, "node.js/v20.20.2")),
	}))
	if err != nil {
		t.Fatal(err)
	}
	before := nodeOldSkipped.Load()
	res, err := Scan(context.Background(), img, Options{Name: "example/x", Platform: "linux/amd64", Extensions: testExtensions()})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeOldSkipped.Load() - before; got != 1 {
		t.Errorf("fastNodeMatcher skipped the first pattern for %d files, want 1 (usr/bin/node)", got)
	}
	if !bytes.Contains(res.Document, []byte(`"pkg:generic/node@20.20.2"`)) {
		t.Errorf("the SBOM has no pkg:generic/node@20.20.2:\n%.2000s", res.Document)
	}
}

// testContext has the shape of syft's binutils.MatcherContext.
type testContext struct {
	Resolver  file.Resolver
	Location  file.Location
	GetReader func(testContext) (io.ReadCloser, error)
}

// TestFastNodeMatcher: the first matcher is skipped only for a file that
// was read and lacks the literals; it runs as in MatchAny for a file with
// one, one that cannot be read, and a context with a GetReader or of
// another shape; its packages and errors are MatchAny's.
func TestFastNodeMatcher(t *testing.T) {
	res := filesResolver(t, map[string][]byte{"plain": []byte("node.js/v22.9.0"), "literal": []byte("x\x00v6.1.0\x00")})
	at := func(name string) file.Location {
		locs, err := res.FilesByPath("/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if len(locs) == 0 {
			return file.NewLocation("/" + name)
		}
		return locs[0]
	}
	oldPkg, newPkg := []pkg.Package{{Name: "old"}}, []pkg.Package{{Name: "new"}}
	boom := errors.New("boom")
	cases := []struct {
		name     string
		ctx      testContext
		old, new func() ([]pkg.Package, error)
		want     []pkg.Package
		wantErr  error
		wantOld  bool // the first matcher ran
	}{
		{name: "no literal: old skipped", ctx: testContext{Resolver: res, Location: at("plain")}, want: newPkg},
		{name: "a literal: old runs first", ctx: testContext{Resolver: res, Location: at("literal")}, old: func() ([]pkg.Package, error) { return oldPkg, nil }, want: oldPkg, wantOld: true},
		{name: "a literal, old finds nothing", ctx: testContext{Resolver: res, Location: at("literal")}, want: newPkg, wantOld: true},
		{name: "old fails", ctx: testContext{Resolver: res, Location: at("literal")}, old: func() ([]pkg.Package, error) { return oldPkg, boom }, wantErr: boom, wantOld: true},
		{name: "new fails", ctx: testContext{Resolver: res, Location: at("plain")}, new: func() ([]pkg.Package, error) { return newPkg, boom }, wantErr: boom},
		{name: "unreadable: old runs", ctx: testContext{Resolver: res, Location: at("missing")}, want: newPkg, wantOld: true},
		{name: "no resolver: old runs", ctx: testContext{Location: at("plain")}, want: newPkg, wantOld: true},
		{name: "a GetReader: old runs", ctx: testContext{Resolver: res, Location: at("plain"), GetReader: func(testContext) (io.ReadCloser, error) { return nil, boom }}, want: newPkg, wantOld: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ranOld := false
			old := func(string, testContext) ([]pkg.Package, error) {
				ranOld = true
				if c.old != nil {
					return c.old()
				}
				return nil, nil
			}
			current := func(string, testContext) ([]pkg.Package, error) {
				if c.new != nil {
					return c.new()
				}
				return newPkg, nil
			}
			got, err := fastNodeMatcher(old, current)("node", c.ctx)
			if !errors.Is(err, c.wantErr) {
				t.Errorf("err = %v, want %v", err, c.wantErr)
			}
			if c.wantErr != nil && got != nil {
				t.Errorf("packages %v with an error", got)
			}
			if diff := cmp.Diff(pkgNames(c.want), pkgNames(got)); diff != "" {
				t.Errorf("packages (-want +got):\n%s", diff)
			}
			if ranOld != c.wantOld {
				t.Errorf("first matcher ran: %v, want %v", ranOld, c.wantOld)
			}
		})
	}
	if _, err := lacksAll("not a struct", nodeOldLiterals); err == nil {
		t.Error("lacksAll accepted a string as a matcher context")
	}
}

func pkgNames(pkgs []pkg.Package) []string {
	var n []string
	for _, p := range pkgs {
		n = append(n, p.Name)
	}
	return n
}

func TestContainsAny(t *testing.T) {
	lits := [][]byte{[]byte("\x00v4."), []byte("\x00node v6.")}
	big := bytes.Repeat([]byte("ab\x00c"), 3<<18) // 3 MiB
	cases := []struct {
		name string
		r    io.Reader
		want bool
	}{
		{"empty", bytes.NewReader(nil), false},
		{"none", bytes.NewReader(big), false},
		{"at the start", bytes.NewReader(splice(big, 0, "\x00v4.")), true},
		{"at the end", bytes.NewReader(append(bytes.Clone(big), "\x00node v6."...)), true},
		{"across the end of the first read", bytes.NewReader(splice(big, firstRead-3, "\x00node v6.")), true},
		{"across the end of the second read", bytes.NewReader(splice(big, firstRead+1<<20-4, "\x00node v6.")), true},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(splice(big, firstRead-2, "\x00v4."))), true},
		{"a prefix of a literal only", bytes.NewReader(append(bytes.Clone(big), "\x00node v"...)), false},
	}
	for _, c := range cases {
		got, err := containsAny(c.r, lits)
		if err != nil || got != c.want {
			t.Errorf("%s: containsAny = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	boom := errors.New("boom")
	if _, err := containsAny(io.MultiReader(bytes.NewReader(big), iotest.ErrReader(boom)), lits); !errors.Is(err, boom) {
		t.Errorf("a read error: %v, want %v", err, boom)
	}
}

// TestNodeClassifierIsSyfts checks fastNodeMatcher's copy against syft's
// own source at the version go.mod requires: the nodejs-binary classifier
// is MatchAny of the two patterns, in that order.
func TestNodeClassifierIsSyfts(t *testing.T) {
	if syftModuleVersion != nodeClassifierSyftVersion {
		t.Fatalf("syft is %s in go.mod, the Node.js classifier was copied from %s: re-read syft/pkg/cataloger/binary/classifiers.go at %s and update nodeOldPattern, nodeNewPattern and nodeClassifierSyftVersion (classifierConfig uses syft's own classifier until then)", syftModuleVersion, nodeClassifierSyftVersion, syftModuleVersion)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/anchore/syft").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/anchore/syft: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "syft", "pkg", "cataloger", "binary", "classifiers.go"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, `Class:    "`+nodeClass+`"`)
	if i < 0 {
		t.Fatalf("syft's classifiers.go has no %s classifier", nodeClass)
	}
	block := s[i:]
	block = block[:strings.Index(block, "Package:")]
	want := []string{`FileGlob: "**/node"`, "binutils.MatchAny(", "m.FileContentsVersionMatcher(`" + nodeOldPattern + "`),", "m.FileContentsVersionMatcher(`" + nodeNewPattern + "`),", "),"}
	at := 0
	for _, w := range want {
		j := strings.Index(block[at:], w)
		if j < 0 {
			t.Fatalf("syft's %s classifier does not have %q after what came before:\n%s", nodeClass, w, block)
		}
		at += j + len(w)
	}
	if rest := strings.TrimSpace(block[at:]); rest != "" {
		t.Errorf("syft's %s classifier has more than the copy: %q", nodeClass, rest)
	}
	for _, c := range binary.DefaultClassifiers() {
		if c.Class == nodeClass && c.FileGlob != "**/node" {
			t.Errorf("syft's %s classifier globs %q", nodeClass, c.FileGlob)
		}
	}
}

// BenchmarkNodeClassifier classifies a 64 MiB node (NUL-rich, "node.js/v"
// near its end, as a current Node.js) with syft's classifiers and with
// classifierConfig's; the ratio is what the faster matcher saves per node
// binary an image holds.
func BenchmarkNodeClassifier(b *testing.B) {
	content := splice(binaryLike(64<<20, 3), 64<<20-4096, "node.js/v22.9.0")
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "usr", "bin"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr", "bin", "node"), content, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  binary.ClassifierCatalogerConfig
	}{{"syft", binary.DefaultClassifierCatalogerConfig()}, {"imagectl", classifierConfig()}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if got := classifyDir(b, c.cfg, dir); len(got) != 1 || got[0].Version != "22.9.0" {
					b.Fatalf("found %v", got)
				}
			}
		})
	}
}
