package publish

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec"
)

// The bytes the index, the referrer and the OCI archive had before they
// were built with go-containerregistry: a published index digest must not
// change because the code that writes it did (the end-to-end test compares
// index digests across rebuilds and against recorded ones).

func pinnedDescriptors() (amd, arm v1.Descriptor) {
	amd = v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: 10, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("1", 64)},
		Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}, Annotations: map[string]string{"x": "y"}, ArtifactType: "application/x-dropped"}
	arm = amd
	arm.Digest.Hex = strings.Repeat("2", 64)
	arm.Platform = &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	return amd, arm
}

func TestNewIndexBytesPinned(t *testing.T) {
	amd, arm := pinnedDescriptors()
	raw, h, err := newIndex([]v1.Descriptor{amd, arm})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":10,"digest":"sha256:` + strings.Repeat("1", 64) + `","platform":{"architecture":"amd64","os":"linux"}},` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":10,"digest":"sha256:` + strings.Repeat("2", 64) + `","platform":{"architecture":"arm64","os":"linux","variant":"v8"}}]}`
	if diff := cmp.Diff(want, string(raw)); diff != "" {
		t.Errorf("index bytes (-want +got):\n%s", diff)
	}
	sum := sha256.Sum256([]byte(want))
	if got := h.String(); got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("index digest %s, want the sha256 of its bytes", got)
	}
}

func TestReferrerBytesPinned(t *testing.T) {
	amd, _ := pinnedDescriptors()
	raw := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","size":2,"digest":"sha256:` + strings.Repeat("3", 64) + `"},"layers":[],"annotations":{"b":"2","a":"1"}}`
	got, err := referrer([]byte(raw), amd)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"annotations":{"a":"1","b":"2"},"artifactType":"` + imagespec.ProvenanceArtifactType + `",` +
		`"config":{"digest":"sha256:` + strings.Repeat("3", 64) + `","mediaType":"application/vnd.oci.image.config.v1+json","size":2},"layers":[],` +
		`"mediaType":"application/vnd.oci.image.manifest.v1+json","schemaVersion":2,` +
		`"subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":10,"digest":"sha256:` + strings.Repeat("1", 64) + `"}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("referrer bytes (-want +got):\n%s", diff)
	}
}

// ociPart writes a per-platform OCI layout tarball as BuildKit's oci
// exporter does: index.json naming one exported index, which lists the
// image manifest and an attestation manifest (with big, a layer above
// maxIndexBytes, which WriteArchive copies from the part). It returns the
// tarball's path.
func ociPart(t *testing.T, dir, platform string, big bool) string {
	t.Helper()
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{}
	put := func(b []byte) v1.Hash {
		sum := sha256.Sum256(b)
		h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
		blobs[blobPath(h)] = b
		return h
	}
	layer := []byte("layer of " + platform)
	if big {
		// Above maxIndexBytes: copied from the part, not kept in memory.
		layer = bytes.Repeat([]byte(platform), maxIndexBytes/len(platform)+1)
	}
	lh := put(layer)
	cfg := []byte(`{"architecture":"` + p.Architecture + `","os":"linux"}`)
	ch := put(cfg)
	man := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + ch.String() + `","size":` + itoa(len(cfg)) + `},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"` + lh.String() + `","size":` + itoa(len(layer)) + `}]}`)
	mh := put(man)
	att := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + ch.String() + `","size":` + itoa(len(cfg)) + `},"layers":[]}`)
	ah := put(att)
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{
		{MediaType: types.OCIManifestSchema1, Digest: mh, Size: int64(len(man)), Platform: p, Annotations: map[string]string{"org.opencontainers.image.created": "2025-06-01T00:00:00Z"}},
		{MediaType: types.OCIManifestSchema1, Digest: ah, Size: int64(len(att)), Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{imagespec.AnnotationReferenceType: imagespec.ReferenceTypeAttestation, "vnd.docker.reference.digest": mh.String()}},
	}}
	ib, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	ih := put(ib)
	top, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{MediaType: types.OCIImageIndex, Digest: ih, Size: int64(len(ib))}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-")+".tar")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(name string, b []byte, typ byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: typ}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write("blobs/", nil, tar.TypeDir)
	write("blobs/sha256/", nil, tar.TypeDir)
	for _, n := range sortedBlobNames(blobs) {
		write(n, blobs[n], tar.TypeReg)
	}
	write("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`), tar.TypeReg)
	write("index.json", top, tar.TypeReg)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortedBlobNames(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestWriteArchiveBytesPinned(t *testing.T) {
	dir := t.TempDir()
	results := []Export{{Platform: "linux/amd64", Archive: ociPart(t, dir, "linux/amd64", true)}, {Platform: "linux/arm64/v8", Archive: ociPart(t, dir, "linux/arm64/v8", false)}}
	dst := filepath.Join(dir, "out", "image.tar")
	h, plats, err := WriteArchive(context.Background(), dst, results, "registry.example/img", "1.0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	// Recorded from the hand-written index and top-level index.json.
	const (
		wantArchive = "d16925d5350c272e31d3082e0dfa447a6e855251fe5b91bc41bf29aa6dddfaca"
		wantIndex   = "sha256:cf249e62bdc176614d7872c755dbe1bcdd57543e8dfec0241e3c07775186e658"
	)
	if got := hex.EncodeToString(sum[:]); got != wantArchive {
		t.Errorf("archive sha256 %s, want %s", got, wantArchive)
	}
	if h.String() != wantIndex {
		t.Errorf("index digest %s, want %s", h, wantIndex)
	}
	if len(plats) != 2 || plats["linux/arm64/v8"].Platform.Variant != "v8" {
		t.Errorf("platforms %+v", plats)
	}
	// The archive holds oci-layout, index.json naming the index with the
	// image name, and every blob once.
	tr := tar.NewReader(bytes.NewReader(b))
	var names []string
	var top []byte
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Name == "index.json" {
			top, _ = io.ReadAll(tr)
		}
	}
	if len(names) < 2 || names[0] != "oci-layout" || names[1] != "index.json" {
		t.Errorf("entries %v: want oci-layout, index.json, then blobs", names)
	}
	wantTop := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","size":SIZE,"digest":"` + h.String() + `","annotations":{"io.containerd.image.name":"registry.example/img:1.0","org.opencontainers.image.ref.name":"1.0"}}]}`
	var im v1.IndexManifest
	if err := json.Unmarshal(top, &im); err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", top, err)
	}
	wantTop = strings.Replace(wantTop, "SIZE", itoa(int(im.Manifests[0].Size)), 1)
	if diff := cmp.Diff(wantTop, string(top)); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
}

func TestNewIndexAndReferrer(t *testing.T) {
	amd := v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Size: 10, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("1", 64)}, Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}, Annotations: map[string]string{"x": "y"}}
	arm := amd
	arm.Digest.Hex = strings.Repeat("2", 64)
	arm.Platform = &v1.Platform{OS: "linux", Architecture: "arm64"}
	raw1, h1, err := newIndex([]v1.Descriptor{amd, arm})
	if err != nil {
		t.Fatal(err)
	}
	raw2, h2, _ := newIndex([]v1.Descriptor{amd, arm})
	if h1 != h2 || string(raw1) != string(raw2) {
		t.Fatal("newIndex is not deterministic")
	}
	if strings.Contains(string(raw1), `"x"`) {
		t.Error("newIndex kept BuildKit's descriptor annotations")
	}
	bkIndex := &v1.IndexManifest{Manifests: []v1.Descriptor{
		amd,
		{MediaType: amd.MediaType, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("7", 64)}, Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{imagespec.AnnotationReferenceType: imagespec.ReferenceTypeAttestation, "vnd.docker.reference.digest": amd.Digest.String()}},
	}}
	e, err := splitExported(bkIndex, "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	if e.image.Digest != amd.Digest || len(e.attestations) != 1 {
		t.Errorf("splitExported = %+v", e)
	}
	if _, err := splitExported(bkIndex, "linux/arm64"); err == nil {
		t.Error("splitExported accepted an amd64 image for linux/arm64")
	}
	ref, err := referrer([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[]}`), amd)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Subject      v1.Descriptor `json:"subject"`
		ArtifactType string        `json:"artifactType"`
	}
	if err := json.Unmarshal(ref, &m); err != nil {
		t.Fatal(err)
	}
	if m.Subject.Digest != amd.Digest || m.ArtifactType != imagespec.ProvenanceArtifactType || m.Subject.Platform != nil {
		t.Errorf("referrer = %s", ref)
	}
}
