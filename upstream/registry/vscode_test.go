package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/testutil"
)

// entry is one tar entry of a test layer: a regular file with body, a
// directory (name ending in /) or a symlink (link set).
type entry struct {
	name, body, link string
}

func layerOf(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body)), ModTime: time.Unix(0, 0)}
		switch {
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// vscodeJSON is code-server's lib/vscode/package.json (the merged remote
// and web package.json, name code-oss), cut down.
func vscodeJSON(version string) string {
	return `{"name":"code-oss","version":"` + version + `","distro":"a1b2c3","author":{"name":"Microsoft Corporation"},"license":"MIT","type":"module","dependencies":{"@vscode/proxy-agent":"^0.32.0"}}`
}

// lsioBase is the lower layers of a linuxserver image: the Ubuntu base and
// docker-baseimage-ubuntu's s6 files.
func lsioBase(t *testing.T) []v1.Layer {
	return []v1.Layer{
		layerOf(t, entry{name: "bin/"}, entry{name: "bin/sh", body: "#!"}, entry{name: "etc/"}, entry{name: "etc/os-release", body: "ID=ubuntu\nVERSION_CODENAME=noble\n"}),
		layerOf(t, entry{name: "init", body: "#!/bin/sh"}, entry{name: "lsiopy/"}),
	}
}

// codeServerLayer is the layer of linuxserver's RUN that unpacks
// code-server's release tarball into /app/code-server.
func codeServerLayer(t *testing.T, csVersion, vscodeBody string) v1.Layer {
	files := []entry{
		{name: "app/"}, {name: "app/code-server/"}, {name: "app/code-server/bin/"},
		{name: "app/code-server/bin/code-server", body: "#!/usr/bin/env sh"},
		{name: "app/code-server/lib/"}, {name: "app/code-server/lib/node", body: "ELF"},
		{name: "app/code-server/lib/vscode/"},
		{name: "app/code-server/lib/vscode/node_modules/"},
		{name: "app/code-server/lib/vscode/node_modules/x/package.json", body: `{"version":"9.9.9"}`},
	}
	if vscodeBody != "" {
		files = append(files, entry{name: "app/code-server/lib/vscode/package.json", body: vscodeBody})
	}
	files = append(files,
		entry{name: "app/code-server/lib/vscode/product.json", body: `{"nameShort":"code-server","codeServerVersion":"` + csVersion + `"}`},
		entry{name: "app/code-server/package.json", body: `{"name":"code-server","version":"` + csVersion + `"}`},
		entry{name: "build_version", body: "Linuxserver.io version: " + csVersion + "-ls300"},
	)
	return layerOf(t, files...)
}

// rootLayer is linuxserver's COPY /root / (s6 service files).
func rootLayer(t *testing.T, extra ...entry) v1.Layer {
	return layerOf(t, append([]entry{{name: "etc/"}, {name: "etc/s6-overlay/"}, {name: "etc/s6-overlay/s6-rc.d/svc-code-server/run", body: "#!/usr/bin/with-contenv bash"}}, extra...)...)
}

// lsioImage is a linuxserver-like image of arch with layers on top of
// lsioBase, labelled as linuxserver labels its images.
func lsioImage(t *testing.T, arch, csVersion string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), append(lsioBase(t), layers...)...)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Env = []string{"HOME=/config", "VIRTUAL_ENV=/lsiopy"}
	cf.Config.Entrypoint = []string{"/init"}
	cf.Config.Labels = map[string]string{
		"build_version":                  "Linuxserver.io version:- " + csVersion + "-ls300 Build-date:- 2026-04-06T00:00:00+00:00",
		"maintainer":                     "aptalca",
		"org.opencontainers.image.title": "Code-server",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// lsioIndex is a multi-arch index of an amd64 and an arm64 image.
func lsioIndex(amd, arm v1.Image) v1.ImageIndex {
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
	)
}

func pushIndex(t *testing.T, repo, tag string, idx v1.ImageIndex) {
	t.Helper()
	ref, err := name.ParseReference(repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

func quietRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	var h http.Handler = testutil.RegistryHandler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/linuxserver/code-server"
}

func TestCodeServersReadVSCodeFromImage(t *testing.T) {
	both := func(img func(arch string) v1.Image) v1.ImageIndex { return lsioIndex(img("amd64"), img("arm64")) }
	same := func(cs, vs string, upper ...v1.Layer) func(string) v1.Image {
		return func(arch string) v1.Image {
			return lsioImage(t, arch, cs, append([]v1.Layer{codeServerLayer(t, cs, vscodeJSON(vs))}, upper...)...)
		}
	}
	tests := []struct {
		name      string
		version   string
		overrides map[string]string
		index     func() v1.ImageIndex
		// want is the entry's VS Code and VSCodeFrom; wantOut, the
		// entry left out.
		want, wantFrom string
		wantOut        bool
		wantWarn       []string
	}{
		{name: "4.113.1 bundles 1.113.0", version: "4.113.1",
			index: func() v1.ImageIndex { return both(same("4.113.1", "1.113.0", rootLayer(t))) },
			want:  "1.113.0", wantFrom: catalog.VSCodeFromImage},
		{name: "the image wins over an override", version: "4.114.1", overrides: map[string]string{"4.114.1": "1.114.9"},
			index: func() v1.ImageIndex { return both(same("4.114.1", "1.114.0", rootLayer(t))) },
			want:  "1.114.0", wantFrom: catalog.VSCodeFromImage},
		{name: "an upper layer replaces the file", version: "4.114.1",
			index: func() v1.ImageIndex {
				return both(same("4.114.0", "1.113.0", rootLayer(t, entry{name: "app/code-server/lib/vscode/package.json", body: vscodeJSON("1.114.0")})))
			},
			want: "1.114.0", wantFrom: catalog.VSCodeFromImage},
		{name: "file whited out above", version: "4.113.1", overrides: map[string]string{"4.113.1": "1.113.0"},
			index: func() v1.ImageIndex {
				return both(same("4.113.1", "1.113.0", rootLayer(t, entry{name: "app/code-server/lib/vscode/.wh.package.json"})))
			},
			want: "1.113.0", wantWarn: []string{"code-server 4.113.1", VSCodePackageJSON, "not in the image", "using 1.113.0 from base.vscodeOverrides"}},
		{name: "directory whited out above", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(same("4.113.1", "1.113.0", rootLayer(t, entry{name: "app/.wh.code-server"})))
			},
			want: "1.113.1", wantWarn: []string{"not in the image", "using 1.113.1"}},
		{name: "opaque directory above", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(same("4.113.1", "1.113.0", rootLayer(t, entry{name: "app/code-server/lib/vscode/"}, entry{name: "app/code-server/lib/vscode/.wh..wh..opq"})))
			},
			want: "1.113.1", wantWarn: []string{"not in the image"}},
		{name: "opaque directory above, file in the same layer", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(same("4.113.1", "1.112.0", rootLayer(t, entry{name: "app/code-server/lib/"}, entry{name: "app/code-server/lib/.wh..wh..opq"},
					entry{name: "app/code-server/lib/vscode/package.json", body: vscodeJSON("1.113.0")})))
			},
			want: "1.113.0", wantFrom: catalog.VSCodeFromImage},
		{name: "directory above replaced by a symlink", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(same("4.113.1", "1.113.0", rootLayer(t, entry{name: "app/code-server", link: "/opt/code-server"})))
			},
			want: "1.113.1", wantWarn: []string{"not in the image"}},
		{name: "missing file", version: "4.113.1", overrides: map[string]string{"4.113.1": "1.113.0"},
			index: func() v1.ImageIndex {
				return both(func(arch string) v1.Image {
					return lsioImage(t, arch, "4.113.1", codeServerLayer(t, "4.113.1", ""), rootLayer(t))
				})
			},
			want: "1.113.0", wantWarn: []string{"linux/amd64: " + VSCodePackageJSON, "not in the image", "using 1.113.0"}},
		{name: "missing file, no 4.X.Y rule", version: "5.0.0",
			index: func() v1.ImageIndex {
				return both(func(arch string) v1.Image {
					return lsioImage(t, arch, "5.0.0", codeServerLayer(t, "5.0.0", ""), rootLayer(t))
				})
			},
			wantOut: true, wantWarn: []string{"code-server 5.0.0", "left out", "not in the image", "add it to base.vscodeOverrides"}},
		{name: "bad JSON", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(func(arch string) v1.Image {
					return lsioImage(t, arch, "4.113.1", codeServerLayer(t, "4.113.1", `{"name":"code-oss","version":`), rootLayer(t))
				})
			},
			want: "1.113.1", wantWarn: []string{VSCodePackageJSON, "unexpected end of JSON input", "using 1.113.1"}},
		{name: "no version", version: "4.113.1",
			index: func() v1.ImageIndex {
				return both(func(arch string) v1.Image {
					return lsioImage(t, arch, "4.113.1", codeServerLayer(t, "4.113.1", `{"name":"code-oss"}`), rootLayer(t))
				})
			},
			want: "1.113.1", wantWarn: []string{`no "version" field`}},
		{name: "not a VS Code version", version: "4.113.1",
			index: func() v1.ImageIndex { return both(same("4.113.1", "1.113", rootLayer(t))) },
			want:  "1.113.1", wantWarn: []string{`"1.113"`, "want MAJOR.MINOR.PATCH"}},
		{name: "disagreeing platforms", version: "4.113.1", overrides: map[string]string{"4.113.1": "1.113.0"},
			index: func() v1.ImageIndex {
				return lsioIndex(same("4.113.1", "1.113.0", rootLayer(t))("amd64"), same("4.113.1", "1.112.0", rootLayer(t))("arm64"))
			},
			wantOut: true, wantWarn: []string{"code-server 4.113.1", "left out", "linux/amd64 1.113.0, linux/arm64 1.112.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := quietRegistry(t, nil)
			pushIndex(t, repo, tc.version, tc.index())
			var warn bytes.Buffer
			src, err := New(repo, `^(\d+\.\d+\.\d+)$`, tc.overrides, WithWarnings(&warn))
			if err != nil {
				t.Fatal(err)
			}
			got, err := src.CodeServers(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var gotVS []string
			for _, cs := range got {
				gotVS = append(gotVS, cs.Version+" "+cs.VSCode+" "+cs.VSCodeFrom)
			}
			var want []string
			if !tc.wantOut {
				want = []string{tc.version + " " + tc.want + " " + tc.wantFrom}
			}
			if diff := cmp.Diff(want, gotVS); diff != "" {
				t.Errorf("version, VS Code, from (-want +got):\n%s", diff)
			}
			for _, w := range tc.wantWarn {
				if !strings.Contains(warn.String(), w) {
					t.Errorf("warnings %q do not say %q", warn.String(), w)
				}
			}
			if len(tc.wantWarn) == 0 && warn.Len() > 0 {
				t.Errorf("unexpected warnings: %s", warn.String())
			}
		})
	}
}

// TestCodeServersKnownImageNotRead: an entry of the old snapshot whose VS
// Code was read from the same image is reused without reading a layer; one
// for other digests is not.
func TestCodeServersKnownImageNotRead(t *testing.T) {
	var blobs int
	repo := quietRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				blobs++
			}
			h.ServeHTTP(w, r)
		})
	})
	img := func(arch string) v1.Image {
		return lsioImage(t, arch, "4.113.1", codeServerLayer(t, "4.113.1", vscodeJSON("1.113.0")), rootLayer(t))
	}
	idx := lsioIndex(img("amd64"), img("arm64"))
	pushIndex(t, repo, "4.113.1", idx)
	src, err := New(repo, `^(\d+\.\d+\.\d+)$`, nil, WithWarnings(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	first, err := src.CodeServers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].VSCodeFrom != catalog.VSCodeFromImage {
		t.Fatalf("first refresh = %+v, want one entry read from the image", first)
	}
	blobs = 0
	known := first[0]
	known.VSCode = "1.113.7" // tells a reuse from a read
	src, err = New(repo, `^(\d+\.\d+\.\d+)$`, nil, WithKnown([]catalog.CodeServer{known}), WithWarnings(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.CodeServers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].VSCode != "1.113.7" || blobs > 2 { // the two config blobs of the index's images at most
		t.Errorf("with the same digests known: %+v after %d blob GETs, want the known 1.113.7 and no layer read", got, blobs)
	}

	known.Platforms = map[string]string{"linux/amd64": known.Platforms["linux/amd64"]}
	src, err = New(repo, `^(\d+\.\d+\.\d+)$`, nil, WithKnown([]catalog.CodeServer{known}), WithWarnings(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if got, err = src.CodeServers(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].VSCode != "1.113.0" {
		t.Errorf("with other digests known: %+v, want 1.113.0 read from the image", got)
	}
}

// TestCodeServersImageReadTimeout: a registry that stalls on blobs makes the
// read time out and fall back with a warning; a cancelled context fails.
func TestCodeServersImageReadTimeout(t *testing.T) {
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	repo := quietRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				select {
				case <-r.Context().Done():
				case <-stall:
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	img := func(arch string) v1.Image {
		return lsioImage(t, arch, "4.113.1", codeServerLayer(t, "4.113.1", vscodeJSON("1.113.0")))
	}
	// Pushing HEADs blobs and never GETs them: only reads stall.
	pushIndex(t, repo, "4.113.1", lsioIndex(img("amd64"), img("arm64")))

	var warn bytes.Buffer
	src, err := New(repo, `^(\d+\.\d+\.\d+)$`, map[string]string{"4.113.1": "1.113.0"}, WithImageReadTimeout(200*time.Millisecond), WithWarnings(&warn))
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.CodeServers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].VSCode != "1.113.0" || got[0].VSCodeFrom != "" || !strings.Contains(warn.String(), "not read within 200ms") {
		t.Errorf("stalled registry: %+v, warnings %q; want the override with a warning", got, warn.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	src, err = New(repo, `^(\d+\.\d+\.\d+)$`, nil, WithWarnings(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.CodeServers(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
