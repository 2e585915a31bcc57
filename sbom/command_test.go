package sbom

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sbom/document"
)

// scannedImage is testImage with a dpkg database, a Python distribution
// and an installed extension, pushed to a registry of its own: what the
// build's sign stage scans (a remote image).
func scannedImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, tarLayer(t, map[string]string{
		"etc/os-release":      "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
		"var/lib/dpkg/status": "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.36-9+deb12u7\nDescription: GNU C Library\n\n",
		"opt/imagectl/python/lib/python3.12/site-packages/debugpy-1.8.14.dist-info/METADATA": "Metadata-Version: 2.1\nName: debugpy\nVersion: 1.8.14\n\n",
		imagespec.ExtensionsDir[1:] + "/extensions.json":                                     `[{"identifier":{"id":"ms-python.python"},"version":"2025.10.0","relativeLocation":"ms-python.python-2025.10.0"}]`,
		imagespec.ExtensionsDir[1:] + "/ms-python.python-2025.10.0/package.json":             `{"name":"python","publisher":"ms-python","version":"2025.10.0","license":"MIT"}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(testutil.Registry(t) + "/team/img:t")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	pulled, err := remote.Image(ref.Context().Digest(d.String()))
	if err != nil {
		t.Fatal(err)
	}
	return pulled
}

// tarLayer is a layer of regular files.
func tarLayer(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	img := testImageOf(t, files)
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls[0]
}

// TestCommandScans runs the real scanner on a remote image: the document
// counts what the image holds, names the scanner's tool (MadeBy), is the
// same from a warmed process, and the image was read through the loopback
// registry only.
func TestCommandScans(t *testing.T) {
	ctx := context.Background()
	c, err := NewCommand(testutil.SBOMScanner(t))
	if err != nil {
		t.Fatal(err)
	}
	tool, err := c.Tool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tool, ToolName+"-v") {
		t.Errorf("Tool = %q, want %s-v<syft version>-<digest>", tool, ToolName)
	}
	img := scannedImage(t)
	o := Options{Name: "registry.example/code-server-ray", Version: "t", Platform: "linux/amd64", Created: time.Unix(1752537600, 0)}
	cold, err := c.Scan(ctx, img, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"deb", "python", ExtensionType} {
		if cold.Counts[typ] != 1 {
			t.Errorf("Counts[%s] = %d, want 1 (counts %v)", typ, cold.Counts[typ], cold.Counts)
		}
	}
	if cold.PredicateType != imagespec.PredicateSPDX {
		t.Errorf("PredicateType = %q, want %q", cold.PredicateType, imagespec.PredicateSPDX)
	}
	if err := MadeBy(tool)(cold.Document); err != nil {
		t.Errorf("MadeBy(%s) refuses the scanner's own document: %v", tool, err)
	}
	if err := MadeBy(ToolName + "-v0.0.1-00000000")(cold.Document); err == nil {
		t.Error("MadeBy of another version accepts the document")
	}
	pkgs, err := document.Packages(cold.Document)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := findPackage(pkgs, "debugpy"); !ok {
		t.Errorf("the document lists no debugpy: %v", pkgs)
	}

	c.Warm(ctx, 2)
	warm, err := c.Scan(ctx, img, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(warm.Document, cold.Document) {
		t.Errorf("a warmed scanner wrote another document (%d bytes, %d cold)", len(warm.Document), len(cold.Document))
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close with one warm scanner left (it exits 0 on an empty request): %v", err)
	}

	o.Format = FormatCycloneDX
	cdx, err := c.Scan(ctx, img, o)
	if err != nil {
		t.Fatal(err)
	}
	if cdx.PredicateType != imagespec.PredicateCycloneDX || !bytes.Contains(cdx.Document, []byte(`"bomFormat"`)) {
		t.Errorf("CycloneDX scan: predicate %q, document %.80s", cdx.PredicateType, cdx.Document)
	}
}

func findPackage(pkgs []document.Package, name string) (document.Package, bool) {
	for _, p := range pkgs {
		if p.Name == name {
			return p, true
		}
	}
	return document.Package{}, false
}

// fakeScanner writes an executable shell script standing in for the
// scanner.
func fakeScanner(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ScannerName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The scanner's failures are errors that say what it said, and nothing of
// a failed scan is taken for a document.
func TestCommandFailures(t *testing.T) {
	ctx := context.Background()
	img := testImage(t)
	o := Options{Name: "r/x", Platform: "linux/amd64"}
	for _, c := range []struct {
		name, script, want string
	}{
		{"exits 1", `[ "$1" = scan ] && cat >/dev/null; echo "imagectl-sbom: cataloguing failed: disk full" >&2; exit 1`, "cataloguing failed: disk full"},
		{"answers no JSON", `cat >/dev/null; echo not json`, "scan's answer"},
		{"answers no document", `cat >/dev/null; echo '{"predicateType":"x"}'`, "answered no document"},
		{"answers too much", `cat >/dev/null; head -c 300000000 /dev/zero`, "wrote more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &Command{Path: fakeScanner(t, c.script)}
			res, err := cmd.Scan(ctx, img, o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Scan = %v, %v; want an error containing %q", res, err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name, script, want string
	}{
		{"version fails", `echo "no such verb" >&2; exit 2`, "no such verb"},
		{"version says two words", `echo "v1 and more"`, "want one word"},
		{"version says nothing", `true`, "want one word"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &Command{Path: fakeScanner(t, c.script)}
			if tool, err := cmd.Tool(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Tool = %q, %v; want an error containing %q", tool, err, c.want)
			}
		})
	}
	if _, err := (&Command{}).Scan(ctx, img, Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Errorf("Scan with format xml: %v", err)
	}
}

// A scan ends with its context: the scanner is killed, and Scan returns
// the context's error at once.
func TestCommandScanCancelled(t *testing.T) {
	cmd := &Command{Path: fakeScanner(t, `exec sleep 60`)}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cmd.Scan(ctx, testImage(t), Options{Platform: "linux/amd64"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Scan = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Scan returned after %s, want soon after the deadline", d)
	}
}

func TestNewCommand(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "--sbom-scanner (or $IMAGECTL_SBOM_SCANNER) " + filepath.Join(dir, "missing") + ": stat"},
		{plain, "not an executable file"},
		{dir, "not an executable file"},
	} {
		if _, err := NewCommand(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewCommand(%s) = %v, want an error containing %q", c.path, err, c.want)
		}
	}
	ok := fakeScanner(t, "true")
	if c, err := NewCommand(ok); err != nil || c.Path != ok {
		t.Errorf("NewCommand(%s) = %v, %v", ok, c, err)
	}
	// Without a path: beside the test binary there is none, and PATH has
	// none either.
	t.Setenv("PATH", t.TempDir())
	if _, err := NewCommand(""); err == nil || !strings.Contains(err.Error(), "make build builds it") || !strings.Contains(err.Error(), "--sbom-from-lock") {
		t.Errorf("NewCommand(\"\") without a scanner anywhere: %v", err)
	}
	bin := t.TempDir()
	onPath := filepath.Join(bin, ScannerName)
	if err := os.Rename(ok, onPath); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if c, err := NewCommand(""); err != nil || c.Path != onPath {
		t.Errorf("NewCommand(\"\") with %s on PATH = %v, %v", onPath, c, err)
	}
}

// serveImage serves the image by digest, read-only, under its random name
// only: what go-containerregistry reads from it is the image.
func TestServeImage(t *testing.T) {
	img := testImage(t)
	ref, stop, err := serveImage(img)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatalf("served reference %q: %v", ref, err)
	}
	got, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if gd, _ := got.Digest(); gd.String() != d.DigestStr() {
		t.Errorf("served image digest %s, want %s", gd, d.DigestStr())
	}
	want, _ := img.Layers()
	ls, err := got.Layers()
	if err != nil || len(ls) != len(want) {
		t.Fatalf("served layers: %d, %v (want %d)", len(ls), err, len(want))
	}
	for i, l := range ls {
		if a, b := readAll(t, l.Uncompressed), readAll(t, want[i].Uncompressed); !bytes.Equal(a, b) {
			t.Errorf("layer %d: %d bytes served, want %d", i, len(a), len(b))
		}
	}
	host := "http://" + d.RegistryStr()
	other := strings.Replace(d.RepositoryStr(), "scan/", "scan/0", 1)
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/v2/", http.StatusOK},
		{http.MethodGet, "/v2/" + other + "/manifests/" + d.DigestStr(), http.StatusNotFound},
		{http.MethodGet, "/v2/" + d.RepositoryStr() + "/manifests/latest", http.StatusNotFound},
		{http.MethodGet, "/v2/" + d.RepositoryStr() + "/blobs/sha256:" + strings.Repeat("0", 64), http.StatusNotFound},
		{http.MethodPut, "/v2/" + d.RepositoryStr() + "/manifests/" + d.DigestStr(), http.StatusMethodNotAllowed},
		{http.MethodPost, "/v2/" + d.RepositoryStr() + "/blobs/uploads/", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(c.method, host+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.want)
		}
	}
	stop()
	if _, err := http.Get(host + "/v2/"); err == nil {
		t.Error("the registry still answers after stop")
	}
}

// blockingLayer's content never comes: a scan reading it waits until it
// is cancelled.
type blockingLayer struct {
	v1.Layer
	reading chan struct{}
}

func (l blockingLayer) Compressed() (io.ReadCloser, error) {
	select {
	case l.reading <- struct{}{}:
	default:
	}
	pr, _ := io.Pipe()
	return pr, nil
}

// A scan cancelled while the scanner reads the image ends at once, and the
// scanner, asked to stop, removes its scratch directories (under its
// TMPDIR) before it exits: nothing is left.
func TestCommandCancelledScanLeavesNothing(t *testing.T) {
	c, err := NewCommand(testutil.SBOMScanner(t))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the scanner's, inherited
	img := scannedImage(t)
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	reading := make(chan struct{}, 1)
	blocked, err := mutate.AppendLayers(empty.Image, blockingLayer{Layer: ls[0], reading: reading})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Scan(ctx, blocked, Options{Name: "r/x", Platform: "linux/amd64"})
		done <- err
	}()
	select {
	case <-reading:
	case err := <-done:
		t.Fatalf("the scan ended before reading the layer: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the scanner did not read the layer within 2 minutes")
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) == 0 {
		t.Fatal("the scanner made no scratch directory under its TMPDIR: the test proves nothing")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Scan = %v, want context.Canceled", err)
		}
	case <-time.After(stopDelay + 5*time.Second):
		t.Fatal("Scan did not return after the cancel")
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the cancelled scanner left %v under its TMPDIR", names)
	}
}
