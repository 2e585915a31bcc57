package verify_test

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/verify"
)

// platformless returns spec's platform image with the OS and architecture
// removed from its config, like an image appended onto scratch.
func platformless(t *testing.T, spec imagetest.Spec, platform string) v1.Image {
	t.Helper()
	img, err := spec.Image(platform)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = "", "", ""
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.ConfigFile(); err != nil || got.Platform() != nil {
		t.Fatalf("test image still has a platform: %v, %v", got.Platform(), err)
	}
	return img
}

// An image whose config names no OS or architecture is a failure in the
// report, with and without contents, never a crash (issue 35 item 1).
func TestImageConfigWithoutPlatform(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()

	single := reg + "/noplatform:latest"
	ref, err := name.ParseReference(single)
	if err != nil {
		t.Fatal(err)
	}
	img := platformless(t, spec, "linux/arm64")
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, ctx, ref.Context().Digest(d.String()).String(), k.signer, spec)

	// An index that names linux/arm64 for a manifest whose config names
	// nothing.
	amd, err := spec.Image("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	indexed := reg + "/noplatform-index:latest"
	iref, err := name.ParseReference(indexed)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(iref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	id, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, ctx, iref.Context().Digest(id.String()).String(), k.signer, spec)

	for _, c := range []struct {
		name, ref string
		opts      []verify.Option
		want      []string
	}{
		{"single manifest", single, nil, []string{"(no platform)", "config", "names no OS/architecture", "extensions are not checked"}},
		{"single manifest, skip contents", single, []verify.Option{verify.WithSkipContents(true)}, []string{"(no platform)", "config", "names no OS/architecture"}},
		{"index", indexed, nil, []string{"linux/arm64", "config", "names no OS/architecture", "index says linux/arm64"}},
		{"index, skip contents", indexed, []verify.Option{verify.WithSkipContents(true)}, []string{"linux/arm64", "config", "names no OS/architecture", "index says linux/arm64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := verify.Image(ctx, c.ref, append([]verify.Option{verify.WithVerifier(k.pub), verify.WithSkipAttestations(true)}, c.opts...)...)
			if err != nil {
				t.Fatalf("verify.Image: %v", err)
			}
			if rep.OK {
				t.Fatalf("an image whose config names no platform verified: %+v", rep.Manifests)
			}
			t.Logf("failures: %v", rep.Failures)
			if !rep.HasFailure(verify.CheckPlatforms, c.want...) {
				t.Errorf("no platforms failure mentioning %q in %v", c.want, rep.Failures)
			}
		})
	}
}
