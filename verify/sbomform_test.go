package verify_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrmutate "github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

// emptySPDX is an SPDX document that lists nothing.
const emptySPDX = `{"spdxVersion":"SPDX-2.3","dataLicense":"CC0-1.0","SPDXID":"SPDXRef-DOCUMENT","name":"empty","packages":[]}`

// spdxAttestationManifest builds a BuildKit-style attestation manifest for
// subject holding one in-toto SPDX statement with predicate doc.
func spdxAttestationManifest(t *testing.T, subject v1.Hash, doc string) v1.Image {
	t.Helper()
	st, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"predicateType": imagespec.PredicateSPDX,
		"subject":       []any{map[string]any{"name": "pkg:docker/example/image", "digest": map[string]string{"sha256": subject.Hex}}},
		"predicate":     json.RawMessage(doc),
	})
	if err != nil {
		t.Fatal(err)
	}
	img := ggcrmutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = ggcrmutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = ggcrmutate.Append(img, ggcrmutate.Addendum{Layer: static.NewLayer(st, "application/vnd.in-toto+json"),
		Annotations: map[string]string{"in-toto.io/predicate-type": imagespec.PredicateSPDX}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// sbomFailures returns the SBOM failures of rep as "platform: message".
func sbomFailures(rep *verify.Report) []string {
	var out []string
	for _, f := range rep.Failures {
		if f.Check == verify.CheckSBOM {
			out = append(out, f.Platform+": "+f.Message)
		}
	}
	sort.Strings(out)
	return out
}

// An SBOM in a BuildKit attestation manifest is read and checked against the
// lock like a cosign SBOM attestation: the same empty SPDX document fails
// with the same problems in either form.
func TestImageBuildKitSBOMIsRead(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()

	// Cosign form: the empty document attested for every platform.
	cosignRoot, err := spec.Push(ctx, reg+"/cosign:latest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Image(ctx, cosignRoot.String(), k.signer); err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Attest(ctx, cosignRoot.String(), k.signer, imagespec.PredicateSPDX, func(string) ([]byte, error) { return []byte(emptySPDX), nil }); err != nil {
		t.Fatal(err)
	}

	// BuildKit form: the empty document in an attestation manifest of the
	// signed index, and no cosign SBOM attestation.
	idx, err := spec.Index()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var adds []ggcrmutate.IndexAddendum
	for _, d := range im.Manifests {
		if imagespec.IsAttestationManifest(d) {
			continue
		}
		adds = append(adds, ggcrmutate.IndexAddendum{Add: spdxAttestationManifest(t, d.Digest, emptySPDX), Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{
				imagespec.AnnotationReferenceDigest: d.Digest.String(),
				imagespec.AnnotationReferenceType:   imagespec.ReferenceTypeAttestation,
			},
		}})
	}
	idx = ggcrmutate.AppendManifests(idx, adds...)
	bkTag, err := name.NewTag(reg + "/buildkit:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(bkTag, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	bkDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Image(ctx, bkTag.Context().Digest(bkDigest.String()).String(), k.signer); err != nil {
		t.Fatal(err)
	}

	var got [2][]string
	for i, ref := range []string{cosignRoot.Context().Tag("latest").String(), bkTag.String()} {
		rep, err := verify.Image(ctx, ref, verify.WithVerifier(k.pub))
		if err != nil {
			t.Fatalf("verify.Image(%s): %v", ref, err)
		}
		if rep.OK {
			t.Errorf("%s verified with an empty SBOM", ref)
		}
		got[i] = sbomFailures(rep)
	}
	if len(got[0]) == 0 {
		t.Fatalf("the cosign form gave no SBOM failure")
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("SBOM failures, cosign attestation (-) and BuildKit attestation manifest (+):\n%s", diff)
	}
}
