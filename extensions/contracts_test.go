package extensions_test

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/contract"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/vsix"
)

// writeDebuggerVSIX writes a VSIX of the debugger extension at version
// from the stand-in in 0.1.6's shapes (extensions/contract/testdata), with
// edit applied to its main script, and returns its path.
func writeDebuggerVSIX(t *testing.T, version string, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join("contract", "testdata", "shape-0.1.6", "extension")
	pj, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "dist", "extension.js"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := `<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata><Identity Language="en-US" Id="ray-distributed-debugger" Version="` + version + `" Publisher="anyscalecompute" /></Metadata></PackageManifest>`
	p := filepath.Join(t.TempDir(), "debugger-"+version+".vsix")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(out)
	for _, f := range []struct{ name, body string }{
		{vsix.ManifestPath, manifest},
		{vsix.PackageJSONPath, strings.Replace(string(pj), `"version": "0.1.6"`, `"version": "`+version+`"`, 1)},
		{"extension/dist/extension.js", edit(string(js))},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckContracts: a fetched debugger file whose code differs from what
// the image assumes is refused before it is pinned, naming the version, the
// file's digest and the change; one whose code holds, and the files of
// other extensions, pass.
func TestCheckContracts(t *testing.T) {
	ctx := context.Background()
	same := func(s string) string { return s }
	good := extensions.Fetched{ID: contract.ExtensionID, Version: "0.1.6", TargetPlatform: "universal", SHA256: strings.Repeat("a", 64), Path: writeDebuggerVSIX(t, "0.1.6", same)}
	other := extensions.Fetched{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "universal", Path: filepath.Join(t.TempDir(), "not-read")}
	if err := extensions.CheckContracts(ctx, []extensions.Fetched{good, other}, vsix.Limits{}); err != nil {
		t.Errorf("CheckContracts(0.1.6's shape, another extension) = %v, want nil", err)
	}

	bad := extensions.Fetched{ID: contract.ExtensionID, Version: "0.1.7", TargetPlatform: "universal", SHA256: strings.Repeat("b", 64),
		Path: writeDebuggerVSIX(t, "0.1.7", func(s string) string {
			return strings.ReplaceAll(s, `r.localRoot??"${workspaceFolder}"`, `r.localRoot||"${workspaceFolder}"`)
		})}
	err := extensions.CheckContracts(ctx, []extensions.Fetched{good, bad, other}, vsix.Limits{})
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Version != "0.1.7" {
		t.Fatalf("CheckContracts(0.1.7 with ||) = %v, want a *contract.Error for 0.1.7", err)
	}
	for _, w := range []string{
		"extension anyscalecompute.ray-distributed-debugger@0.1.7 (universal file, sha256 " + bad.SHA256 + ") does not behave as the image assumes",
		`extension/dist/extension.js: localRoot default: r.localRoot||"${workspaceFolder}"`, "with ||, want ??",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}

	// A file that cannot be read is an error naming it, not a pass.
	gone := bad
	gone.Path = filepath.Join(t.TempDir(), "missing.vsix")
	if err := extensions.CheckContracts(ctx, []extensions.Fetched{gone}, vsix.Limits{}); err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "extension anyscalecompute.ray-distributed-debugger@0.1.7 (universal file, sha256 "+bad.SHA256+"): checking what the image assumes of its code") {
		t.Errorf("CheckContracts(missing file) = %v", err)
	}
}

// TestFixturesHoldTheContract: the VSIX fixtures the gallery fake serves
// (extensions/testdata/mkvsix.sh) hold the debugger's contract, so that a
// pin or fetch that runs CheckContracts over them passes; fetched through
// the fake as pin fetches them.
func TestFixturesHoldTheContract(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	fe, _ := newFetcher(t, f, t.TempDir())
	got, err := fe.FetchExtensions(context.Background(), testSet(t, builds, false), platforms, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range got {
		if g.ID == contract.ExtensionID {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the test set fetched no %s file", contract.ExtensionID)
	}
	if err := extensions.CheckContracts(context.Background(), got, vsix.Limits{}); err != nil {
		t.Errorf("CheckContracts over the fixtures: %v", err)
	}
}

// TestUncheckedVersions: a refresh that brings in a debugger version the
// old catalog did not list names it (its code is checked when pinned);
// versions already listed, and other extensions, are not named.
func TestUncheckedVersions(t *testing.T) {
	rec := func(id string, versions ...string) catalog.ExtensionRecord {
		r := catalog.ExtensionRecord{ID: id, Source: "marketplace"}
		for _, v := range versions {
			r.Versions = append(r.Versions, catalog.ExtensionVersion{Version: v, Engine: "^1.66.0", Files: map[string]catalog.File{"universal": {}}})
		}
		return r
	}
	old := &catalog.Catalog{Extensions: []catalog.ExtensionRecord{rec(contract.ExtensionID, "0.1.4"), rec("ms-python.debugpy", "2025.10.0")}}
	fresh := &catalog.Catalog{Extensions: []catalog.ExtensionRecord{rec(contract.ExtensionID, "0.1.7", "0.1.6", "0.1.4"), rec("ms-python.debugpy", "2025.12.0")}}
	want := []string{contract.ExtensionID + "@0.1.7", contract.ExtensionID + "@0.1.6"}
	if got := extensions.UncheckedVersions(old, fresh); !slices.Equal(got, want) {
		t.Errorf("UncheckedVersions = %q, want %q", got, want)
	}
	if got := extensions.UncheckedVersions(nil, old); !slices.Equal(got, []string{contract.ExtensionID + "@0.1.4"}) {
		t.Errorf("UncheckedVersions(nil, old) = %q, want the debugger's 0.1.4", got)
	}
}
