package verify_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrmutate "github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrstatic "github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sbom/document"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

const (
	statementV01  = "https://in-toto.io/Statement/v0.1"
	statementV1   = "https://in-toto.io/Statement/v1"
	statementEvil = "https://evil.example/Statement/v9"
)

// rawSigner is a key whose signer verify trusts and with which a test can
// sign DSSE envelopes of its own making.
type rawSigner struct {
	sv     signature.SignerVerifier
	signer *sign.Signer
}

func newRawSigner(t *testing.T) rawSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(k, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return rawSigner{sv: sv, signer: sign.NewSigner(sv, "test key")}
}

// statement is an in-toto statement of type typ about subject.
func statement(t *testing.T, typ, predicateType string, subject v1.Hash, predicate []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"_type":         typ,
		"predicateType": predicateType,
		"subject":       []any{map[string]any{"name": "pkg:docker/example/image", "digest": map[string]string{"sha256": subject.Hex}}},
		"predicate":     json.RawMessage(predicate),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// attachStatement signs st (a DSSE envelope of the in-toto payload type) and
// adds it to d's cosign attestations, keeping those already there.
func attachStatement(t *testing.T, ctx context.Context, d name.Digest, s rawSigner, predicateType string, st []byte) {
	t.Helper()
	env, err := dsse.WrapSigner(s.sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	att, err := static.NewAttestation(env, static.WithLayerMediaType(types.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": predicateType}))
	if err != nil {
		t.Fatal(err)
	}
	se, err := mutate.AttachAttestationToEntity(ociremote.SignedUnknown(d), att)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteAttestations(d.Repository, se); err != nil {
		t.Fatal(err)
	}
}

// platformDigests returns the platform manifests of the index at root.
func platformDigests(t *testing.T, root name.Digest) map[string]v1.Hash {
	t.Helper()
	im, err := imagetest.PushedIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Hash{}
	for _, d := range im.Manifests {
		if !imagespec.IsAttestationManifest(d) && d.Platform != nil {
			out[d.Platform.String()] = d.Digest
		}
	}
	return out
}

// spdxFor is the SBOM imagectl writes for one platform of spec.
func spdxFor(t *testing.T, spec imagetest.Spec, platform string) []byte {
	t.Helper()
	b, err := document.SPDX(document.SBOMInputFromLock(spec.Lock(), "example/code-server-ray", testTime), platform)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// attestationManifestOf is a BuildKit-style attestation manifest holding
// the SPDX statement st.
func attestationManifestOf(t *testing.T, st []byte) v1.Image {
	t.Helper()
	img := ggcrmutate.MediaType(empty.Image, ggcrtypes.OCIManifestSchema1)
	img = ggcrmutate.ConfigMediaType(img, ggcrtypes.OCIConfigJSON)
	img, err := ggcrmutate.Append(img, ggcrmutate.Addendum{Layer: ggcrstatic.NewLayer(st, "application/vnd.in-toto+json"),
		Annotations: map[string]string{imagespec.AnnotationPredicateType: imagespec.PredicateSPDX}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// pushWithBuildKitSBOMs pushes spec's index with, for each platform, one
// BuildKit attestation manifest holding an SPDX statement of type typ
// whose predicate doc(platform) gives, and signs the index and its
// manifests. It returns the index's tag reference.
func pushWithBuildKitSBOMs(t *testing.T, ctx context.Context, ref string, spec imagetest.Spec, s *sign.Signer, typ string, doc func(platform string) []byte) string {
	t.Helper()
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
		st := statement(t, typ, imagespec.PredicateSPDX, d.Digest, doc(d.Platform.String()))
		adds = append(adds, ggcrmutate.IndexAddendum{Add: attestationManifestOf(t, st), Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
			Annotations: map[string]string{
				imagespec.AnnotationReferenceDigest: d.Digest.String(),
				imagespec.AnnotationReferenceType:   imagespec.ReferenceTypeAttestation,
			},
		}})
	}
	idx = ggcrmutate.AppendManifests(idx, adds...)
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	dg, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Image(ctx, tag.Context().Digest(dg.String()).String(), s); err != nil {
		t.Fatal(err)
	}
	return tag.String()
}

// A statement whose _type is not an in-toto Statement type is no SBOM,
// signed or not, in a cosign attestation or a BuildKit attestation
// manifest (issue 35 item 5); both in-toto Statement versions are.
func TestImageInTotoStatementType(t *testing.T) {
	ctx := context.Background()
	s := newRawSigner(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()
	for i, typ := range []string{statementV01, statementV1, statementEvil} {
		t.Run("cosign "+typ, func(t *testing.T) {
			root, err := spec.Push(ctx, fmt.Sprintf("%s/cosign%d:latest", reg, i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sign.Image(ctx, root.String(), s.signer); err != nil {
				t.Fatal(err)
			}
			for p, d := range platformDigests(t, root) {
				attachStatement(t, ctx, root.Context().Digest(d.String()), s, imagespec.PredicateSPDX,
					statement(t, typ, imagespec.PredicateSPDX, d, spdxFor(t, spec, p)))
			}
			checkStatementType(t, ctx, root.Context().Tag("latest").String(), s, typ)
		})
		t.Run("buildkit "+typ, func(t *testing.T) {
			ref := pushWithBuildKitSBOMs(t, ctx, fmt.Sprintf("%s/buildkit%d:latest", reg, i), spec, s.signer, typ,
				func(p string) []byte { return spdxFor(t, spec, p) })
			checkStatementType(t, ctx, ref, s, typ)
		})
	}
}

func checkStatementType(t *testing.T, ctx context.Context, ref string, s rawSigner, typ string) {
	t.Helper()
	rep, err := verify.Image(ctx, ref, verify.WithVerifier(s.sv))
	if err != nil {
		t.Fatal(err)
	}
	if typ != statementEvil {
		if !rep.OK {
			t.Fatalf("an SBOM in a %s statement did not verify: %v", typ, rep.Err())
		}
		return
	}
	t.Logf("%v", rep.Err())
	if rep.OK {
		t.Fatalf("an SBOM in a statement of _type %s verified: %+v", typ, rep.Manifests)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if !rep.HasFailure(verify.CheckSBOM, p, `_type "`+statementEvil+`"`, statementV01, statementV1) {
			t.Errorf("no sbom failure for %s naming the statement's _type and the accepted ones in %v", p, rep.Failures)
		}
	}
}

// Every SBOM of a platform is checked against the lock, not only the
// first one found (issue 35 item 5): a second, empty, SBOM fails, whether
// it is a second cosign attestation or a BuildKit attestation manifest.
func TestImageEverySBOMIsChecked(t *testing.T) {
	ctx := context.Background()
	s := newRawSigner(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()

	t.Run("two cosign attestations", func(t *testing.T) {
		root, err := spec.Push(ctx, reg+"/two-cosign:latest")
		if err != nil {
			t.Fatal(err)
		}
		signAll(t, ctx, root.String(), s.signer, spec)
		ref := root.Context().Tag("latest").String()
		if rep, err := verify.Image(ctx, ref, verify.WithVerifier(s.sv)); err != nil || !rep.OK {
			t.Fatalf("the image with one good SBOM must verify (else this test proves nothing): %v %v", err, rep.Err())
		}
		for _, d := range platformDigests(t, root) {
			attachStatement(t, ctx, root.Context().Digest(d.String()), s, imagespec.PredicateSPDX,
				statement(t, statementV01, imagespec.PredicateSPDX, d, []byte(emptySPDX)))
		}
		checkSecondSBOM(t, ctx, ref, s)
	})
	t.Run("cosign attestation and BuildKit attestation manifest", func(t *testing.T) {
		ref := pushWithBuildKitSBOMs(t, ctx, reg+"/cosign-and-buildkit:latest", spec, s.signer, statementV01,
			func(string) []byte { return []byte(emptySPDX) })
		if _, err := sign.AttestSBOM(ctx, ref, s.signer, document.SBOMInputFromLock(spec.Lock(), "example/code-server-ray", testTime)); err != nil {
			t.Fatal(err)
		}
		checkSecondSBOM(t, ctx, ref, s)
	})
}

func checkSecondSBOM(t *testing.T, ctx context.Context, ref string, s rawSigner) {
	t.Helper()
	rep, err := verify.Image(ctx, ref, verify.WithVerifier(s.sv))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", rep.Err())
	if rep.OK {
		t.Fatalf("an image with a second, empty, SBOM verified: %+v", rep.Manifests)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if !rep.HasFailure(verify.CheckSBOM, p, "ray", "is not in the SBOM") {
			t.Errorf("no sbom failure for %s saying the second SBOM lacks ray, in %v", p, rep.Failures)
		}
	}
}
