package scan

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anchore/syft/syft/pkg"
	"github.com/anchore/syft/syft/pkg/cataloger/binary"
	"github.com/anchore/syft/syft/source"
	"github.com/anchore/syft/syft/source/directorysource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sbom/document"
)

// classify runs syft's binary classifier cataloger with cfg over a
// directory holding content as usr/bin/node, and returns the name@version
// of what it finds.
func classify(t testing.TB, cfg binary.ClassifierCatalogerConfig, content []byte) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr", "bin", "node"), content, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := directorysource.NewFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := src.FileResolver(source.SquashedScope)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, _, err := binary.NewClassifierCataloger(cfg).Catalog(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	return names(pkgs)
}

func names(pkgs []pkg.Package) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p.Name+"@"+p.Version)
	}
	return out
}

// binaryLike is n bytes that look like an executable to the Node.js
// classifier's legacy pattern: about one byte in four a NUL, the rest
// upper-case letters.
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

// TestNodeClassifier pins what classifierConfig changes in syft's
// defaults: a current Node.js is found as syft finds it; a Node.js 0.x or
// 4–6, which only syft's legacy pattern finds, is not.
func TestNodeClassifier(t *testing.T) {
	body := binaryLike(1<<16, 1)
	current := append(append(body[:1<<15:1<<15], "\x00node.js/v22.9.0\x00"...), body[1<<15:]...)
	legacy := append(append(body[:1<<15:1<<15], "\x00v4.9.1\x00"...), body[1<<15:]...)
	for _, c := range []struct {
		name       string
		content    []byte
		syft, ours []string
	}{
		{"node 22", current, []string{"node@22.9.0"}, []string{"node@22.9.0"}},
		{"node 4", legacy, []string{"node@4.9.1"}, nil},
		{"no version", body, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.syft, classify(t, binary.DefaultClassifierCatalogerConfig(), c.content)); d != "" {
				t.Errorf("syft's defaults (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.ours, classify(t, classifierConfig(), c.content)); d != "" {
				t.Errorf("classifierConfig (-want +got):\n%s", d)
			}
		})
	}
}

// TestScanUsesClassifierConfig checks that Scan runs classifierConfig: a
// node holding only the legacy version marker is not listed, though
// syft's defaults would list it.
func TestScanUsesClassifierConfig(t *testing.T) {
	body := binaryLike(1<<12, 2)
	for _, c := range []struct {
		marker string
		want   bool
	}{
		{"\x00node.js/v22.9.0\x00", true},
		{"\x00v4.9.1\x00", false},
	} {
		img, err := mutate.AppendLayers(testImage(t), layer(t, map[string]string{"usr/bin/node": string(body) + c.marker + string(body)}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Scan(context.Background(), img, sbom.Options{Name: "r/x", Platform: "linux/arm64", Created: time.Unix(0, 0), Extensions: testExtensions()})
		if err != nil {
			t.Fatal(err)
		}
		pkgs, err := document.Packages(res.Document)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, p := range pkgs {
			if p.Name == "node" {
				got = true
			}
		}
		if got != c.want {
			t.Errorf("node with %q: listed %v, want %v", c.marker, got, c.want)
		}
	}
}

// BenchmarkNodeClassifier times syft's default binary classifiers against
// classifierConfig on a 64 MiB file named node without a legacy version
// (the shape of code-server's node): the ratio is what an SBOM scan saves.
func BenchmarkNodeClassifier(b *testing.B) {
	content := binaryLike(64<<20, 3)
	content = append(content, "\x00node.js/v22.9.0\x00"...)
	for _, c := range []struct {
		name string
		cfg  binary.ClassifierCatalogerConfig
	}{
		{"syft", binary.DefaultClassifierCatalogerConfig()},
		{"imagectl", classifierConfig()},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if got := classify(b, c.cfg, content); len(got) != 1 {
					b.Fatalf("found %v, want node@22.9.0", got)
				}
			}
		})
	}
}
