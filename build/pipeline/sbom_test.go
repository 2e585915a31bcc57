package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
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
	spec := imagetest.Default()
	root, im := pushTestImage(t, "team/img:t")
	set := spec.Lock()
	set.Tags = []string{"t"}
	res := &Result{Ref: root.String(), Set: set}
	scanner, err := sbom.NewCommand(testutil.SBOMScanner(t))
	if err != nil {
		t.Fatal(err)
	}
	sg := &Signing{res: res, repo: root.Context(), epoch: time.Unix(1752537600, 0), scanner: scanner}
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
		sg.sbomFormat, sg.sbomLock = format, lock
		for i := range res.Platforms {
			res.Platforms[i].SBOM = nil
		}
		if err := sg.attachSBOMs(ctx, s, nil); err != nil {
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

// startBasePrefetch decompresses every platform's base (pulled by digest)
// when the build will scan, and does nothing when it will not.
func TestStartBasePrefetch(t *testing.T) {
	ctx := context.Background()
	root, im := pushTestImage(t, "library/base:1")
	set := &imagespec.Set{}
	set.CodeServer.Base = root.String()
	set.CodeServer.Platforms = map[string]string{}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" {
			p := d.Platform.OS + "/" + d.Platform.Architecture
			set.Platforms = append(set.Platforms, p)
			set.CodeServer.Platforms[p] = d.Digest.String()
		}
	}
	if len(set.Platforms) != 2 {
		t.Fatalf("test base has platforms %v, want 2", set.Platforms)
	}
	scanning := Request{Sign: SignOptions{Signer: signerForTest(t), Scanner: &countingScanner{}}, Publish: PublishOptions{Push: true}}
	for _, c := range []struct {
		name string
		mod  func(*Request)
	}{
		{"not signing", func(r *Request) { r.Sign.Signer = nil }},
		{"the SBOM from the lock", func(r *Request) { r.Sign.SBOMFromLock = true }},
		{"no scanner", func(r *Request) { r.Sign.Scanner = nil }},
		{"not pushing", func(r *Request) { r.Publish.Push = false }},
		{"forced", func(r *Request) { r.Force = true }},
		{"signed later (Build), from the lock", func(r *Request) { r.Sign.Signer, r.signLater, r.Sign.SBOMFromLock = nil, true, true }},
	} {
		req := scanning
		c.mod(&req)
		if bp := startBasePrefetch(ctx, &req, set, t.TempDir()); bp != nil {
			bp.stop()
			t.Errorf("%s: prefetched the base, want nothing (no scan follows)", c.name)
		}
	}
	later := scanning
	later.Sign.Signer, later.signLater = nil, true
	if bp := startBasePrefetch(ctx, &later, set, t.TempDir()); bp == nil {
		t.Error("a build signed later by Build's caller prefetched nothing")
	} else {
		bp.stop()
	}

	bp := startBasePrefetch(ctx, &scanning, set, t.TempDir())
	if bp == nil {
		t.Fatal("a build that scans prefetched nothing")
	}
	defer bp.stop()
	for _, p := range set.Platforms {
		dir, err := bp.layerDir(ctx, p)
		if err != nil || dir == "" {
			t.Fatalf("%s: layer directory %q, %v", p, dir, err)
		}
		img, err := remote.Image(root.Context().Digest(set.CodeServer.Platforms[p]))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range cf.RootFS.DiffIDs {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%d-%s", i, d))); err != nil {
				t.Errorf("%s: base layer %d not prefetched: %v", p, i, err)
			}
		}
	}
	if dir, err := bp.layerDir(ctx, "linux/s390x"); dir != "" || err != nil {
		t.Errorf("a platform not built: %q, %v; want nothing", dir, err)
	}
	bp.stop()
	for _, p := range set.Platforms {
		if _, err := os.Stat(bp.platforms[p].dir); !os.IsNotExist(err) {
			t.Errorf("%s: stop left the prefetched layers: %v", p, err)
		}
	}

	// A base that cannot be pulled: an error for the warning, no directory.
	gone := *set
	gone.CodeServer.Platforms = map[string]string{set.Platforms[0]: "sha256:" + strings.Repeat("0", 64)}
	gone.Platforms = set.Platforms[:1]
	bp2 := startBasePrefetch(ctx, &scanning, &gone, t.TempDir())
	defer bp2.stop()
	if dir, err := bp2.layerDir(ctx, set.Platforms[0]); dir != "" || err == nil || !strings.Contains(err.Error(), strings.Repeat("0", 64)) {
		t.Errorf("prefetch of a missing base: %q, %v; want an error naming it", dir, err)
	}
}

// pushTestImage pushes imagetest.Default() as repoTag to a new in-process
// registry (anonymous: DOCKER_CONFIG is empty) and returns its index.
func pushTestImage(t *testing.T, repoTag string) (name.Digest, *v1.IndexManifest) {
	t.Helper()
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	root, err := imagetest.Default().Push(context.Background(), host+"/"+repoTag)
	if err != nil {
		t.Fatal(err)
	}
	im, err := imagetest.PushedIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, im
}
