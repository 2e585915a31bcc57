package scan

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sbom/document"
)

// TestScanRecordsTheLicencesOfVSIXFixtures installs the vsce-built fixtures
// (extensions/testdata/vsix, made by mkvsix.sh) as code-server does
// (vsix.Extract) and checks that the SBOM records each licence as the VSIX
// declares it: ms-python.python's package.json says MIT; the
// ray-distributed-debugger's, like the real 0.1.6, says nothing, and its
// LICENSE.txt is titled "AS License".
func TestScanRecordsTheLicencesOfVSIXFixtures(t *testing.T) {
	installed := []struct{ file, id, version, dir string }{
		{"ms-python.python-2025.8.0@linux-arm64.vsix", "ms-python.python", "2025.8.0", "ms-python.python-2025.8.0-linux-arm64"},
		{"anyscalecompute.ray-distributed-debugger-0.1.6.vsix", "anyscalecompute.ray-distributed-debugger", "0.1.6", "anyscalecompute.ray-distributed-debugger-0.1.6"},
	}
	root := t.TempDir()
	files := map[string]string{}
	var entries []string
	for _, in := range installed {
		f, err := os.Open(filepath.Join("..", "..", "..", "extensions", "testdata", "vsix", in.file))
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(root, in.dir)
		err = vsix.Extract(context.Background(), f, st.Size(), dest, vsix.Limits{}, time.Unix(1700000000, 0))
		f.Close()
		if err != nil {
			t.Fatalf("installing %s: %v", in.file, err)
		}
		err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			files["config/extensions/"+filepath.ToSlash(rel)] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, `{"identifier":{"id":"`+in.id+`"},"version":"`+in.version+`","relativeLocation":"`+in.dir+`"}`)
	}
	files["config/extensions/extensions.json"] = "[" + strings.Join(entries, ",") + "]"
	img, err := mutate.AppendLayers(empty.Image, layer(t, files))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Scan(context.Background(), img, sbom.Options{Name: "r/x", Platform: "linux/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := document.Packages(res.Document)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range pkgs {
		if strings.Contains(p.PURL, "type=vscode-extension") {
			got[p.Name+"@"+p.Version] = p.License + " | " + p.LicenseComment
		}
	}
	want := map[string]string{
		"ms-python.python@2025.8.0":                      `MIT | licence declared in package.json: MIT; licence file /config/extensions/ms-python.python-2025.8.0-linux-arm64/LICENSE.txt ("MIT License")`,
		"anyscalecompute.ray-distributed-debugger@0.1.6": `"AS License" (LicenseRef-AS-License) | licence file /config/extensions/anyscalecompute.ray-distributed-debugger-0.1.6/LICENSE.txt ("AS License"); package.json states no licence`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("extension licences in the SBOM (-want +got):\n%s", diff)
	}
}
