package imagectl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/testutil"
)

// The import rules of the tree, read from one `go list -deps -json ./...`
// (the package graph of the host platform, test files' imports included):
//
//   - internal/ holds ground helpers only: a package under internal/ imports
//     nothing of the project but other internal/ packages (its tests
//     included), and no fake lives there — a fake sits beside the package it
//     fakes, as a Go-style xxxtest package (build/buildtest,
//     extensions/gallerytest, ...);
//   - no production package (outside tests/, not a fake, not a test helper)
//     imports a fake, a test helper (internal/testutil) or a package under
//     tests/, so the shipped binary links no test code; no package at all
//     imports internal/testutil from a non-test file;
//   - the arrows that must not exist: the packages that read or publish
//     images (imagespec, extensions, sign, verify, release, resolve,
//     matrix, publish) link neither BuildKit nor build; verify and smoke
//     link no syft (only the scanner, sbom, does); build/... does not
//     depend on release; build does not depend on upstream/ (pip's report
//     is read through pylock); verify does not depend on extensions/
//     (it reads manifests with vscode/vsixmanifest); imagespec stays a leaf, and pylock imports
//     imagespec only;
//   - between top-level folders the production imports form no circle,
//     so the folders stack into floors and no package imports one on a
//     higher floor;
//   - the CLI links no sigs.k8s.io/kind (the kind harness runs the kind
//     CLI), and only package sbom, the scanner, imports syft; only the
//     build pipeline (and the CLI's options, which make it from the
//     flags) import package sbom;
//   - the CLI's verb packages (cmd/imagectl/app/<verb>) import
//     cmd/imagectl/app/options (and options/base), their own subpackages
//     and the libraries, never each other;
//   - the probe binary, cmd/imagectl-probe (smoke attach alone, copied into
//     the code-server sidecar), links none of what the rest of imagectl
//     needs (client-go, syft, BuildKit, sigstore, gRPC, the registry client,
//     cmd/imagectl/app/options) and stays under 15 MB.

const module = "github.com/imagectl/imagectl"

// listedPackage is what go list -json says of one package.
type listedPackage struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

var graph struct {
	once sync.Once
	pkgs map[string]*listedPackage
	err  error
}

// loadGraph runs go list once per test binary, skipping (or failing with
// IMAGECTL_REQUIRE_TOOLS=1) when the go command is not on PATH.
func loadGraph(t *testing.T) map[string]*listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testutil.SkipOrFail(t, "go command not found on PATH: go list is needed to read the import graph")
	}
	graph.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps,TestImports,XTestImports", "./...")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			graph.err = fmt.Errorf("go list -deps -json ./...: %w\n%s", err, stderr.Bytes())
			return
		}
		graph.pkgs, graph.err = decodeGraph(out)
	})
	if graph.err != nil {
		t.Fatal(graph.err)
	}
	return graph.pkgs
}

// decodeGraph reads go list's stream of JSON objects.
func decodeGraph(out []byte) (map[string]*listedPackage, error) {
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list -json output: %w", err)
		}
		pkgs[p.ImportPath] = &p
	}
	var ours int
	for ip := range pkgs {
		if isOurs(ip) {
			ours++
		}
	}
	// The tree has some 60 packages: far fewer means go list did not read
	// the whole module, and every rule below would pass vacuously.
	if ours < 40 {
		return nil, fmt.Errorf("go list named only %d packages of %s, want the whole module", ours, module)
	}
	return pkgs, nil
}

func isOurs(ip string) bool { return ip == module || strings.HasPrefix(ip, module+"/") }

func under(ip, dir string) bool {
	return ip == module+"/"+dir || strings.HasPrefix(ip, module+"/"+dir+"/")
}

// notFakes are production packages whose name happens to end in "test".
var notFakes = map[string]bool{
	module + "/attest": true,
}

// isFake reports whether ip is test code other packages import: a Go-style
// xxxtest package (a fake beside what it fakes, or internal/testutil's
// kubetest), internal/testutil, or a package under internal/fakes (which
// TestInternalIsGround refuses: a fake sits beside what it fakes).
func isFake(ip string) bool {
	if !isOurs(ip) || notFakes[ip] {
		return false
	}
	return strings.HasSuffix(path.Base(ip), "test") || under(ip, "internal/fakes") || under(ip, "internal/testutil")
}

// isProduction reports whether ip is code a binary of the project may link.
func isProduction(ip string) bool {
	return isOurs(ip) && !isFake(ip) && !under(ip, "tests")
}

// ours returns the module's packages, sorted.
func ours(pkgs map[string]*listedPackage) []*listedPackage {
	var l []*listedPackage
	for ip, p := range pkgs {
		if isOurs(ip) {
			l = append(l, p)
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].ImportPath < l[j].ImportPath })
	return l
}

// TestInternalIsGround: internal/ holds ground helpers that import nothing
// of the project but each other, so every other package may use them and
// none of them closes a circle; fakes live beside what they fake.
func TestInternalIsGround(t *testing.T) {
	pkgs := loadGraph(t)
	checked := 0
	for _, p := range ours(pkgs) {
		if !under(p.ImportPath, "internal") {
			continue
		}
		checked++
		if under(p.ImportPath, "internal/fakes") {
			t.Errorf("%s is a fake under internal/: move it beside the package it fakes, as an xxxtest package (build/buildtest, extensions/gallerytest)", p.ImportPath)
		}
		for kind, imps := range map[string][]string{"": p.Imports, " (test files)": append(append([]string(nil), p.TestImports...), p.XTestImports...)} {
			for _, imp := range imps {
				if isOurs(imp) && !under(imp, "internal") {
					t.Errorf("%s%s imports %s: internal/ is for ground helpers that import nothing of the project but internal/; move the piece that needs %s out of internal/", p.ImportPath, kind, imp, imp)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages under internal/, want the ground helpers (safefile, safetext, ctxio, sourcedate, pep440, testutil, ...)", checked)
	}
}

// TestProductionLinksNoTestCode: no production package imports a fake
// (xxxtest, internal/fakes), a test helper (internal/testutil) or a package
// under tests/, so no binary of the project links test code; no package at
// all imports internal/testutil from a non-test file; and a fake sits
// beside a package, in that package's folder.
func TestProductionLinksNoTestCode(t *testing.T) {
	pkgs := loadGraph(t)
	checked, fakes := 0, 0
	for _, p := range ours(pkgs) {
		for _, imp := range p.Imports {
			if under(imp, "internal/testutil") {
				t.Errorf("%s imports %s outside its test files: testutil is for test files only", p.ImportPath, imp)
			}
		}
		if isFake(p.ImportPath) && !under(p.ImportPath, "internal") {
			fakes++
			if parent := path.Dir(p.ImportPath); pkgs[parent] == nil {
				t.Errorf("fake %s does not sit beside a package: %s is not one; put it in the folder of the package it fakes", p.ImportPath, parent)
			}
		}
		if !isProduction(p.ImportPath) {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			switch {
			case under(imp, "tests"):
				t.Errorf("%s imports %s: move what it needs out of tests/", p.ImportPath, imp)
			case isFake(imp):
				t.Errorf("%s imports %s outside its test files: fakes and test helpers are for tests only", p.ImportPath, imp)
			}
		}
	}
	if checked < 30 || fakes < 5 {
		t.Fatalf("checked %d production packages and %d fakes, want the whole tree (over 30 and over 5)", checked, fakes)
	}
}

// matching returns the packages a pattern (a package, or dir/... for a
// folder, relative to the module) names.
func matching(pkgs map[string]*listedPackage, pattern string) []*listedPackage {
	dir, tree := strings.CutSuffix(pattern, "/...")
	var l []*listedPackage
	for _, p := range ours(pkgs) {
		if p.ImportPath == module+"/"+dir || tree && strings.HasPrefix(p.ImportPath, module+"/"+dir+"/") {
			l = append(l, p)
		}
	}
	return l
}

// TestArrows: dependencies that must not exist. The packages that read or
// publish images know the image through imagespec, not through build, so
// none of them links BuildKit. Reading an SBOM (verify, smoke) does not
// link syft, which only the scanner (package sbom) needs; the build
// pipeline does not depend on release, which adapts it; publish does not
// depend on the build.
func TestArrows(t *testing.T) {
	pkgs := loadGraph(t)
	const buildkit, syft = "github.com/moby/buildkit", "github.com/anchore/syft"
	for _, tc := range []struct {
		pkgs      []string
		forbidden []string
		why       string
	}{
		{[]string{"imagespec", "extensions", "sign", "verify", "release", "resolve", "matrix"}, []string{buildkit, module + "/build"}, "it must know the image through imagespec only"},
		{[]string{"verify", "smoke/..."}, []string{syft}, "only the SBOM scanner (package sbom) links syft; documents are read with sbom/document"},
		{[]string{"build/..."}, []string{module + "/release"}, "release adapts the build pipeline, not the other way round"},
		{[]string{"publish"}, []string{module + "/build"}, "publish knows BuildKit's exports as digests and tarballs, not the build"},
		{[]string{"publish"}, []string{buildkit}, "publish links no BuildKit"},
		{[]string{"verify"}, []string{module + "/extensions"}, "verify reads an installed extension's manifest with vscode/vsixmanifest; fetching and validating VSIX files is extensions'"},
		{[]string{"build"}, []string{module + "/upstream"}, "the build reads pip's hash-mismatch report through pylock, not the locker that runs pip"},
	} {
		for _, pat := range tc.pkgs {
			matched := matching(pkgs, pat)
			if len(matched) == 0 {
				t.Fatalf("%s names no package: fix the rule", pat)
			}
			for _, p := range matched {
				for _, f := range tc.forbidden {
					var bad []string
					for _, d := range append([]string{p.ImportPath}, p.Deps...) {
						if d == f || strings.HasPrefix(d, f+"/") {
							bad = append(bad, d)
						}
					}
					if len(bad) > 0 {
						sort.Strings(bad)
						t.Errorf("%s depends on %s (%d packages: %s): %s", p.ImportPath, f, len(bad), strings.Join(bad[:min(3, len(bad))], ", "), tc.why)
					}
				}
			}
		}
	}
}

// TestImagespecIsLeaf: imagespec imports the standard library,
// go-containerregistry's descriptor types and containerd's platform names
// only, so any package may import it.
func TestImagespecIsLeaf(t *testing.T) {
	pkgs := loadGraph(t)
	allowed := map[string]bool{
		"github.com/google/go-containerregistry/pkg/v1":       true,
		"github.com/google/go-containerregistry/pkg/v1/types": true,
		module + "/imagespec":                                 true,
		// containerd/platforms and what it imports.
		"github.com/containerd/platforms":                  true,
		"github.com/containerd/log":                        true,
		"github.com/sirupsen/logrus":                       true,
		"github.com/opencontainers/go-digest":              true,
		"github.com/opencontainers/image-spec/specs-go":    true,
		"github.com/opencontainers/image-spec/specs-go/v1": true,
		"golang.org/x/sys/unix":                            true,
	}
	p := pkgs[module+"/imagespec"]
	if p == nil {
		t.Fatal("go list named no package imagespec")
	}
	for _, d := range p.Deps {
		if p := pkgs[d]; p == nil {
			t.Errorf("imagespec depends on %s, which go list did not describe", d)
		} else if !p.Standard && !allowed[d] {
			t.Errorf("imagespec depends on %s; it must stay a leaf (standard library, ggcr's pkg/v1 and containerd/platforms only)", d)
		}
	}
}

// TestCLILinks: what the imagectl binary links. The kind harness runs the
// kind CLI and links no sigs.k8s.io/kind; the SBOM scanner is a binary of
// its own, imagectl-sbom (the nested module cmd/imagectl-sbom), so syft
// and what only syft brings (aws-sdk-go-v2 through go-getter) are not
// linked, and no package of this module imports syft, test files
// included (package sbom runs the scanner; sbom/document reads SBOMs).
func TestCLILinks(t *testing.T) {
	pkgs := loadGraph(t)
	const cli = module + "/cmd/imagectl"
	p := pkgs[cli]
	if p == nil {
		t.Fatalf("go list named no package %s", cli)
	}
	for _, banned := range []struct{ path, why string }{
		{"sigs.k8s.io/kind", "the kind harness (smoke/kind) runs the kind CLI, as it runs kubectl"},
		{"github.com/anchore/syft", "the SBOM scanner is imagectl-sbom, run by package sbom"},
		{"github.com/anchore/stereoscope", "the SBOM scanner is imagectl-sbom, run by package sbom"},
		{"github.com/aws/aws-sdk-go-v2", "it came with syft (go-getter); nothing of imagectl talks to AWS"},
		{"k8s.io/client-go/kubernetes", "client-go's typed clientset registers every API group of Kubernetes; debug reads core/v1 through debug.CoreAPI"},
		{"k8s.io/client-go/discovery", "client-go's discovery client registers every API group of Kubernetes; debug maps kinds with its own resource list reader"},
		{"k8s.io/api/apps", "only core/v1 and authorization/v1 of the Kubernetes API are debug's; apps/v1 came with client-go's clientset"},
		{"github.com/spdx/tools-golang/spdx/v3", "sbom/document writes SPDX 2.3 with encoding/json; spdx/tools-golang's json package reads SPDX 3 and links a JSON-LD processor"},
	} {
		for _, d := range p.Deps {
			if d == banned.path || strings.HasPrefix(d, banned.path+"/") {
				t.Errorf("%s links %s: %s", cli, d, banned.why)
				break
			}
		}
	}
	for _, q := range ours(pkgs) {
		for _, imp := range slices.Concat(q.Imports, q.TestImports, q.XTestImports) {
			if strings.HasPrefix(imp, "github.com/anchore/") {
				t.Errorf("%s imports %s: syft is the scanner's (cmd/imagectl-sbom), run through sbom.Command; read SBOMs with sbom/document", q.ImportPath, imp)
				break
			}
		}
	}
}

// TestPylockIsLow: the Python lock (package pylock) imports imagespec and
// the standard library only, so catalog, resolve, release, build and
// upstream/pip all import it without any of them climbing to another.
func TestPylockIsLow(t *testing.T) {
	pkgs := loadGraph(t)
	p := pkgs[module+"/pylock"]
	if p == nil {
		t.Fatal("go list named no package pylock")
	}
	for _, d := range p.Deps {
		if isOurs(d) && d != module+"/imagespec" {
			t.Errorf("pylock depends on %s; it may import imagespec of the project only", d)
		}
	}
	for _, user := range []string{"catalog", "resolve", "release", "build", "upstream/pip"} {
		u := pkgs[module+"/"+user]
		if u == nil {
			t.Fatalf("go list named no package %s", user)
		}
		if !slices.Contains(u.Imports, module+"/pylock") {
			t.Errorf("%s does not import pylock: does it hold a second copy of the lock's types?", user)
		}
	}
}

// TestVerbsStandAlone: each verb package of the CLI (cmd/imagectl/app/<verb>)
// imports options (and options/base, the part of it that links nothing
// heavy), its own subpackages (smoke/attach) and the libraries, never
// another verb nor app, so a verb is added or removed as one package tree
// and one line in app's root command.
func TestVerbsStandAlone(t *testing.T) {
	pkgs := loadGraph(t)
	const app = module + "/cmd/imagectl/app"
	verbs := 0
	for _, p := range matching(pkgs, "cmd/imagectl/app/...") {
		if p.ImportPath == app || isFake(p.ImportPath) {
			// apptest, the verbs' test helper, runs app's command tree.
			continue
		}
		verbs++
		verb, _, _ := strings.Cut(strings.TrimPrefix(p.ImportPath, app+"/"), "/")
		for _, imp := range p.Imports {
			if under(imp, "cmd/imagectl/app") && !under(imp, "cmd/imagectl/app/options") && !under(imp, "cmd/imagectl/app/"+verb) {
				t.Errorf("%s imports %s: a verb imports only cmd/imagectl/app/options (or options/base) and its own subpackages of the CLI", p.ImportPath, imp)
			}
		}
	}
	if verbs < 5 {
		t.Fatalf("found %d packages under cmd/imagectl/app, want the options package and the verbs", verbs)
	}
	// options/base is what a small binary links instead of options: it
	// imports nothing of the CLI.
	b := pkgs[app+"/options/base"]
	if b == nil {
		t.Fatalf("go list named no package %s/options/base", app)
	}
	for _, d := range b.Deps {
		if under(d, "cmd/imagectl") {
			t.Errorf("%s depends on %s: base is the plumbing options re-exports, below every package of the CLI", b.ImportPath, d)
		}
	}
}

// probe is the smoke attach binary copied into the code-server sidecar.
const probe = module + "/cmd/imagectl-probe"

// probeForbidden is what imagectl-probe must not link: what the other verbs
// of imagectl need (TestProbeLinks checks that imagectl links each, so a
// misspelt or vanished name does not pass vacuously).
var probeForbidden = []string{
	"k8s.io/client-go",
	"sigs.k8s.io",
	"github.com/moby/buildkit",
	"github.com/sigstore",
	"github.com/docker",
	"google.golang.org/grpc",
	"go.opentelemetry.io",
	"github.com/google/go-containerregistry/pkg/v1/remote",
	module + "/cmd/imagectl/app/options",
}

// TestProbeLinks: imagectl-probe (go list -deps ./cmd/imagectl-probe) links
// the attach command, its plumbing (cmd/imagectl/app/options/base) and
// smoke/probe, and none of the heavy dependencies of imagectl's other verbs:
// no client-go, no BuildKit, no sigstore, no gRPC, no registry
// client, and not cmd/imagectl/app/options (whose flag groups link them
// all) but only options/base.
func TestProbeLinks(t *testing.T) {
	pkgs := loadGraph(t)
	p, cli := pkgs[probe], pkgs[module+"/cmd/imagectl"]
	if p == nil || cli == nil {
		t.Fatalf("go list named no package %s or %s/cmd/imagectl", probe, module)
	}
	dependsOn := func(deps []string, f string) []string {
		var bad []string
		for _, d := range deps {
			if d == f || (strings.HasPrefix(d, f+"/") && f != module+"/cmd/imagectl/app/options") {
				bad = append(bad, d)
			}
		}
		return bad
	}
	for _, f := range probeForbidden {
		if bad := dependsOn(p.Deps, f); len(bad) > 0 {
			sort.Strings(bad)
			t.Errorf("%s links %s (%d packages: %s): the probe carries smoke attach only; find the import that brings it in (go list -deps) and cut it", probe, f, len(bad), strings.Join(bad[:min(3, len(bad))], ", "))
		}
		if len(dependsOn(cli.Deps, f)) == 0 {
			t.Errorf("imagectl links no %s: the rule guards nothing; update probeForbidden", f)
		}
	}
	for _, want := range []string{module + "/cmd/imagectl/app/smoke/attach", module + "/cmd/imagectl/app/options/base", module + "/smoke/probe"} {
		if !slices.Contains(p.Deps, want) {
			t.Errorf("%s does not link %s: is it still the smoke attach probe?", probe, want)
		}
	}
}

// Size limits, unstripped (CGO_ENABLED=0 go build -trimpath, no
// -ldflags), in decimal megabytes: imagectl-probe is copied into every
// sidecar that runs smoke attach. imagectl is about 62 MB; a fifth of its
// code is client-go's REST, kubeconfig and streaming packages and the
// core/v1 types, which debug needs. Its limit catches growth such as
// client-go's typed clientset or discovery (every API group of
// Kubernetes, about 35 MB) or syft, which only imagectl-sbom links (about
// 40 MB). make build's stripped copies are about a third smaller.
const (
	probeMaxBytes = 15 * 1000 * 1000
	cliMaxBytes   = 65 * 1000 * 1000
)

// TestBinarySizes builds imagectl-probe and imagectl as the issue measures
// them (CGO_ENABLED=0 go build -trimpath, unstripped) and holds each under
// its limit.
func TestBinarySizes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testutil.SkipOrFail(t, "go command not found on PATH: go build measures the binaries")
	}
	for _, b := range []struct {
		pkg   string
		limit int64
	}{{"./cmd/imagectl-probe", probeMaxBytes}, {"./cmd/imagectl", cliMaxBytes}} {
		name := filepath.Base(b.pkg)
		out := filepath.Join(t.TempDir(), name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out2, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("CGO_ENABLED=0 go build -trimpath %s: %v\n%s", b.pkg, err, out2)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes unstripped (limit %d)", name, fi.Size(), b.limit)
		if fi.Size() > b.limit {
			t.Errorf("%s is %d bytes (%.1f MB) unstripped, over the limit of %d: see what it links (go list -deps %s) and what grew (go tool nm -size -sort size)", name, fi.Size(), float64(fi.Size())/1e6, b.limit, b.pkg)
		}
	}
}

// TestScannerReachedThroughPipeline: package sbom runs the SBOM scanner
// (imagectl-sbom). The build pipeline is the one consumer, through its
// Scanner interface; the CLI's options make the scanner from the flags
// (--sbom-scanner, --sbom-format) and hand it over. No other production
// package imports it: verify and smoke read SBOMs with sbom/document.
func TestScannerReachedThroughPipeline(t *testing.T) {
	pkgs := loadGraph(t)
	scanner := module + "/sbom"
	allowed := map[string]bool{
		module + "/build/pipeline":           true,
		module + "/cmd/imagectl/app/options": true,
	}
	importers := 0
	for _, p := range ours(pkgs) {
		if !isProduction(p.ImportPath) || !slices.Contains(p.Imports, scanner) {
			continue
		}
		importers++
		if !allowed[p.ImportPath] {
			t.Errorf("%s imports %s: the scanner is the build pipeline's (pipeline.Scanner), made by the CLI's options; read SBOMs with sbom/document", p.ImportPath, scanner)
		}
	}
	if importers == 0 {
		t.Fatalf("no production package imports %s: the rule checks nothing (was the scanner renamed?)", scanner)
	}
}

// folder is the top-level folder of one of the module's packages (the
// module's root package is "."): the rooms of the tree's floor plan.
func folder(ip string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
	if rest == "" {
		return "."
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// TestFoldersFormNoCircle: between top-level folders, the production
// imports (fakes, test helpers and tests/ aside) form no circle, so the
// folders stack into floors where every arrow points down: no package
// imports one on a higher floor. A circle is named with one import for
// each of its arrows.
func TestFoldersFormNoCircle(t *testing.T) {
	pkgs := loadGraph(t)
	// arrows[a][b] is one import from folder a into folder b.
	arrows := map[string]map[string]string{}
	rooms := map[string]bool{}
	for _, p := range ours(pkgs) {
		if !isProduction(p.ImportPath) {
			continue
		}
		from := folder(p.ImportPath)
		rooms[from] = true
		for _, imp := range p.Imports {
			if !isProduction(imp) {
				continue
			}
			if to := folder(imp); to != from {
				if arrows[from] == nil {
					arrows[from] = map[string]string{}
				}
				if _, ok := arrows[from][to]; !ok {
					arrows[from][to] = strings.TrimPrefix(p.ImportPath, module+"/") + " -> " + strings.TrimPrefix(imp, module+"/")
				}
			}
		}
	}
	if len(rooms) < 15 {
		t.Fatalf("only %d top-level folders hold production packages, want the whole tree (over 15)", len(rooms))
	}
	for _, circle := range circles(rooms, arrows) {
		var via []string
		for i, a := range circle {
			via = append(via, arrows[a][circle[(i+1)%len(circle)]])
		}
		t.Errorf("folders %s import each other in a circle (%s): move the shared piece down, or the importing one up", strings.Join(append(circle, circle[0]), " -> "), strings.Join(via, "; "))
	}
}

// circles returns, for each strongly connected set of more than one room
// (Tarjan's algorithm), one circle in it, rooms visited in sorted order
// for a stable message.
func circles(rooms map[string]bool, arrows map[string]map[string]string) [][]string {
	var names []string
	for r := range rooms {
		names = append(names, r)
	}
	sort.Strings(names)
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	var visit func(string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		var next []string
		for w := range arrows[v] {
			next = append(next, w)
		}
		sort.Strings(next)
		for _, w := range next {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 {
				sccs = append(sccs, scc)
			}
		}
	}
	for _, v := range names {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	// One circle per set: the shortest one through its first room.
	var out [][]string
	for _, scc := range sccs {
		sort.Strings(scc)
		in := map[string]bool{}
		for _, r := range scc {
			in[r] = true
		}
		out = append(out, shortestCircle(scc[0], in, arrows))
	}
	return out
}

// shortestCircle is the shortest path from start back to itself within
// the rooms of in.
func shortestCircle(start string, in map[string]bool, arrows map[string]map[string]string) []string {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		var next []string
		for w := range arrows[v] {
			next = append(next, w)
		}
		sort.Strings(next)
		for _, w := range next {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{v}
				for path[0] != start {
					path = append([]string{prev[path[0]]}, path...)
				}
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start}
}
