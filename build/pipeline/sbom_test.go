package pipeline

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/internal/testimage"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sign"
)

// A platform manifest that already carries the SBOM (signed by the key, of
// the requested predicate type, made the same way) is neither scanned nor
// attested again: a forced rebuild of the same image uploads no SBOM.
// Another key or another source attaches a new one (another predicate
// type: sign's TestAttested).
func TestAttachSBOMsKeepsWhatIsThere(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := strings.TrimPrefix(srv.URL, "http://")
	spec := testimage.Default()
	root, err := spec.Push(ctx, host+"/team/img:t")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(root)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	set := spec.Lock()
	set.Tags = []string{"t"}
	res := &Result{Ref: root.String(), Set: set, signing: signing{repo: root.Context(), epoch: time.Unix(1752537600, 0)}}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS != "unknown" {
			res.Platforms = append(res.Platforms, PlatformOutput{Digest: d.Digest.String()})
			res.Platforms[len(res.Platforms)-1].Platform = d.Platform.OS + "/" + d.Platform.Architecture
		}
	}
	if len(res.Platforms) != 2 {
		t.Fatalf("test image has %d platforms, want 2", len(res.Platforms))
	}
	key, other := signerForTest(t), signerForTest(t)
	// attTags are the digests of the index's and every platform's
	// attestation image (what changes when anything is attached).
	attTags := func() []string {
		var out []string
		for _, d := range append([]string{root.DigestStr()}, res.Platforms[0].Digest, res.Platforms[1].Digest) {
			desc, err := remote.Head(root.Context().Tag(strings.Replace(d, ":", "-", 1) + ".att"))
			if err != nil {
				t.Fatalf("attestations of %s: %v", d, err)
			}
			out = append(out, desc.Digest.String())
		}
		return out
	}
	run := func(t *testing.T, s *sign.Signer, format string, lock, wantReused bool) {
		t.Helper()
		res.signing.sbomFormat, res.signing.sbomLock = format, lock
		for i := range res.Platforms {
			res.Platforms[i].SBOM = nil
		}
		if err := res.attachSBOMs(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Platforms {
			if p.SBOM == nil {
				t.Fatalf("%s: no SBOM output", p.Platform)
			}
			if got := p.SBOM.Reused != ""; got != wantReused {
				t.Errorf("%s (format %q, lock %v): reused %q, want reused %v", p.Platform, format, lock, p.SBOM.Reused, wantReused)
			}
			if !wantReused && !lock && p.SBOM.Packages[string(sbom.ExtensionType)] == 0 {
				t.Errorf("%s: scanned SBOM counts no extensions: %v", p.Platform, p.SBOM.Packages)
			}
		}
	}
	run(t, key, "", false, false)
	before := attTags()
	run(t, key, "", false, true)
	if after := attTags(); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("a build of the same image attached again: attestation images %v, then %v", before, after)
	}
	run(t, other, "", true, false) // another key (and the lock's SBOM)
	run(t, key, "", true, false)   // the key's again: the other key's replaced it
	run(t, key, "", true, true)
	run(t, key, "", false, false) // a scan replaces the lock's SBOM
}
