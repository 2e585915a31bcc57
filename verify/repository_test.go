package verify_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/verify"
)

// copyImage copies the image at src (an index) and the cosign signature and
// attestation tags of it and of its platform manifests to dst, as
// `cosign copy` or a registry mirror would.
func copyImage(t *testing.T, src name.Digest, dst name.Repository) name.Digest {
	t.Helper()
	if err := crane.Copy(src.String(), dst.Digest(src.DigestStr()).String()); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	for _, d := range []name.Digest{src, platformDigest(t, src, "linux/amd64"), platformDigest(t, src, "linux/arm64")} {
		for _, tagOf := range []func(name.Reference, ...ociremote.Option) (name.Tag, error){ociremote.SignatureTag, ociremote.AttestationTag} {
			from, err := tagOf(d)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := crane.Head(from.String()); err != nil {
				continue // not signed or attested
			}
			if err := crane.Copy(from.String(), dst.Tag(from.TagStr()).String()); err != nil {
				t.Fatalf("copying %s: %v", from, err)
			}
		}
	}
	return dst.Digest(src.DigestStr())
}

// An image and its signatures copied to another repository do not verify
// there: the signed payload names the repository it was signed in
// (critical.identity.docker-reference). A mirror verifies only when that
// repository is accepted explicitly, and the failure says which repository
// was signed.
func TestImageSignedRepository(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()
	root, err := spec.Push(ctx, reg+"/code-server-ray:latest")
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, ctx, root.String(), k.signer, spec)
	signed := root.Context().Name()

	mirror, err := name.NewRepository(reg + "/evil/other")
	if err != nil {
		t.Fatal(err)
	}
	copied := copyImage(t, root, mirror)

	for _, tc := range []struct {
		name string
		ref  string
		opts []verify.Option
		// want: substrings of a signature failure on the index and on each
		// platform manifest; empty means the image must verify.
		want []string
	}{
		{name: "the signed repository", ref: root.String()},
		{name: "the signed repository, mirrors allowed too", ref: root.String(), opts: []verify.Option{verify.WithAllowedRepositories(mirror.Name())}},
		{name: "a copy", ref: copied.String(),
			want: []string{"signed for repository " + signed + ", not " + mirror.Name(), "--allow-repository " + signed}},
		{name: "a copy, another repository allowed", ref: copied.String(), opts: []verify.Option{verify.WithAllowedRepositories(reg + "/somewhere/else")},
			want: []string{"signed for repository " + signed + ", not " + mirror.Name()}},
		{name: "a copy by tag", ref: mirror.Tag("latest").String(),
			want: []string{"signed for repository " + signed}},
		{name: "a mirror of the signed repository", ref: copied.String(), opts: []verify.Option{verify.WithAllowedRepositories(signed)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasSuffix(tc.ref, ":latest") {
				if err := crane.Tag(copied.String(), "latest"); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := verify.Image(ctx, tc.ref, append([]verify.Option{verify.WithVerifier(k.pub)}, tc.opts...)...)
			if err != nil {
				t.Fatalf("verify.Image: %v", err)
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("report:\n%s", text.String())
			if len(tc.want) == 0 {
				if !rep.OK {
					t.Fatalf("%s should verify:\n%s", tc.ref, text.String())
				}
				return
			}
			if rep.OK {
				t.Fatalf("%s verified, want signature failures naming %s:\n%s", tc.ref, signed, text.String())
			}
			for _, where := range []string{"index", "linux/amd64", "linux/arm64"} {
				if !rep.HasFailure(verify.CheckSignature, append([]string{where}, tc.want...)...) {
					t.Errorf("no signature failure on %s mentioning %q in:\n%s", where, tc.want, text.String())
				}
			}
		})
	}
}

func TestWithAllowedRepositoriesRejectsBadNames(t *testing.T) {
	k := newKeys(t)
	reg := testutil.Registry(t)
	root, err := imagetest.Default().Push(context.Background(), reg+"/x:latest")
	if err != nil {
		t.Fatal(err)
	}
	_, err = verify.Image(context.Background(), root.String(), verify.WithVerifier(k.pub), verify.WithAllowedRepositories(reg+"/x:latest"))
	if err == nil || !strings.Contains(err.Error(), `allowed repository "`+reg+`/x:latest"`) {
		t.Errorf("verify.Image with a tagged allowed repository: %v, want an error naming it", err)
	}
}
