package sign_test

import (
	"context"
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sign"
)

func newKey(t *testing.T) (*sign.Signer, signature.Verifier, string) {
	t.Helper()
	dir := t.TempDir()
	keyPath, pubPath, err := sign.WriteKeyPair(filepath.Join(dir, "cosign"), []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sign.LoadKey(context.Background(), keyPath, sign.StaticPassword([]byte("s3cret")))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := cosignPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return s, pk, pubPath
}

func cosignPublicKey(pemBytes []byte) (signature.Verifier, error) {
	pk, err := cosign.PemToECDSAKey(pemBytes)
	if err != nil {
		return nil, err
	}
	return signature.LoadVerifier(pk, crypto.SHA256)
}

func TestLoadKeyWrongPassword(t *testing.T) {
	dir := t.TempDir()
	keyPath, _, err := sign.WriteKeyPair(filepath.Join(dir, "cosign"), []byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sign.LoadKey(context.Background(), keyPath, sign.StaticPassword([]byte("wrong")))
	if err == nil {
		t.Fatal("LoadKey with the wrong password succeeded")
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error %q leaks the password", err)
	}
	if _, _, err := sign.WriteKeyPair(filepath.Join(dir, "cosign"), []byte("x")); err == nil {
		t.Error("WriteKeyPair overwrote an existing key")
	}
}

func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "pw")
	if err := os.WriteFile(pf, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := sign.PasswordFromFile(pf)()
	if err != nil || string(got) != "from-file" {
		t.Errorf("PasswordFromFile = %q, %v; want from-file", got, err)
	}
	t.Setenv(sign.PasswordEnv, "from-env")
	got, err = sign.PasswordFromEnv()()
	if err != nil || string(got) != "from-env" {
		t.Errorf("PasswordFromEnv = %q, %v; want from-env", got, err)
	}
}

func TestImageSignsIndexAndEveryPlatform(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	spec := imagetest.Default()
	root, err := spec.Push(ctx, reg+"/code-server-ray:test")
	if err != nil {
		t.Fatal(err)
	}
	s, pk, _ := newKey(t)

	res, err := sign.Image(ctx, reg+"/code-server-ray:test", s)
	if err != nil {
		t.Fatalf("sign.Image: %v", err)
	}
	im, err := imagetest.PushedIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{root.DigestStr()}
	for _, d := range im.Manifests {
		if d.Platform.OS == "unknown" {
			continue // attestation manifests are not signed by default
		}
		want = append(want, d.Digest.String())
	}
	var got []string
	for _, tg := range res.Targets {
		got = append(got, tg.Digest)
		// The signature is at the tag plain `cosign verify` reads.
		wantTag := root.Context().Tag(strings.Replace(tg.Digest, ":", "-", 1) + ".sig").String()
		if tg.Tag != wantTag {
			t.Errorf("%s signature tag = %s, want %s", tg.Digest, tg.Tag, wantTag)
		}
		if _, err := remote.Head(root.Context().Tag(strings.Replace(tg.Digest, ":", "-", 1) + ".sig")); err != nil {
			t.Errorf("no signature manifest at sha256-<hex>.sig for %s: %v", tg.Digest, err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signed digests (-want +got):\n%s", diff)
	}
	if len(want) != 3 {
		t.Fatalf("test image should have an index and two platforms, got %d targets", len(want))
	}

	// cosign's own verification accepts every signature with the public key.
	for _, d := range want {
		ref := root.Context().Digest(d)
		sigs, _, err := cosign.VerifyImageSignatures(ctx, ref, &cosign.CheckOpts{
			SigVerifier: pk, IgnoreTlog: true, IgnoreSCT: true, ClaimVerifier: cosign.SimpleClaimVerifier,
		})
		if err != nil {
			t.Errorf("cosign.VerifyImageSignatures(%s): %v", d, err)
		} else if len(sigs) != 1 {
			t.Errorf("%s has %d signatures, want 1", d, len(sigs))
		}
	}

	// Signing again with the same key does not duplicate the signature.
	if _, err := sign.Image(ctx, root.String(), s); err != nil {
		t.Fatal(err)
	}
	st, err := ociremote.SignatureTag(root)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := ociremote.Signatures(st)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := sigs.Get(); len(l) != 1 {
		t.Errorf("after re-signing, index has %d signatures, want 1", len(l))
	}

	// A second key appends, it does not replace.
	s2, _, _ := newKey(t)
	if _, err := sign.Image(ctx, root.String(), s2, sign.WithAllManifests(false)); err != nil {
		t.Fatal(err)
	}
	sigs, err = ociremote.Signatures(st)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := sigs.Get(); len(l) != 2 {
		t.Errorf("after signing with a second key, index has %d signatures, want 2", len(l))
	}
}

func TestImageAttestationManifestsOptIn(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	root, err := imagetest.Default().Push(ctx, reg+"/img:att")
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := newKey(t)
	res, err := sign.Image(ctx, root.String(), s, sign.WithAttestationManifests(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 5 {
		t.Errorf("with attestation manifests, signed %d manifests, want 5 (index, 2 platforms, 2 attestations)", len(res.Targets))
	}
}

func TestImageSinglePlatform(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	d, err := imagetest.Default().PushImage(ctx, reg+"/single:1", "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	s, pk, _ := newKey(t)
	res, err := sign.Image(ctx, reg+"/single:1", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Digest != d.DigestStr() {
		t.Fatalf("targets = %+v, want only %s", res.Targets, d.DigestStr())
	}
	if _, _, err := cosign.VerifyImageSignatures(ctx, d, &cosign.CheckOpts{SigVerifier: pk, IgnoreTlog: true, ClaimVerifier: cosign.SimpleClaimVerifier}); err != nil {
		t.Error(err)
	}
}

// An index that lists one manifest twice (for two platform descriptors) gets
// one signature for it: the targets are signed concurrently, and two
// writers of one .sig tag would race.
func TestImageSignsAManifestListedTwiceOnce(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	d, err := imagetest.Default().PushImage(ctx, reg+"/single:1", "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	ref, err := name.ParseReference(reg + "/single:twice")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	s, pk, _ := newKey(t)
	res, err := sign.Image(ctx, ref.String(), s)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tg := range res.Targets {
		if tg.Digest == d.DigestStr() {
			n++
		}
	}
	if n != 1 || len(res.Targets) != 2 {
		t.Fatalf("targets = %+v, want the index and %s once", res.Targets, d.DigestStr())
	}
	sigs, _, err := cosign.VerifyImageSignatures(ctx, d, &cosign.CheckOpts{SigVerifier: pk, IgnoreTlog: true, ClaimVerifier: cosign.SimpleClaimVerifier})
	if err != nil {
		t.Fatal(err)
	}
	if len(sigs) != 1 {
		t.Errorf("%d signatures of the manifest listed twice, want 1", len(sigs))
	}
}
