package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/registry"
	"github.com/imagectl/imagectl/verify"
)

// publishedImage is an image already in the registry under the versioned
// tag of the inputs being built.
type publishedImage struct {
	index     v1.Hash
	platforms []PlatformOutput
	why       string
}

// published returns the image the versioned tag names when building would
// change nothing: the tag exists, its image carries the inputs digest
// (dev.imagectl.inputs.digest, read as imagectl plan reads it) and holds
// exactly the set's platforms, and, when req signs, it passes imagectl
// verify with req.Sign.VerifyKey or else the signer's public key without reading
// layers
// (signatures of the index and of every platform manifest; the SBOM and,
// when req.Solve.Provenance, the provenance attestations; the labels). It returns
// nil when the build must run: the tag is absent or names other inputs, or
// the registry refuses to let these credentials read it (the push preflight
// then says so), or a signature does not verify (a line on req.Warnings
// says which). Only manifests and config blobs are read.
func published(ctx context.Context, req *Request, tag name.Tag, inputs string, platforms []string) (*publishedImage, error) {
	ropts := regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...)
	reg, err := registry.New(ropts...)
	if err != nil {
		return nil, err
	}
	pub, err := reg.Inspect(ctx, tag)
	if err != nil {
		if refused(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("checking whether %s is already published: %w", tag, err)
	}
	if pub == nil || pub.Inputs != inputs {
		return nil, nil
	}
	ref := tag.Context().Digest(pub.Digest.String())
	out, got, err := publishedPlatforms(ref, ropts)
	if err != nil {
		return nil, err
	}
	out.index = pub.Digest
	want := slices.Sorted(slices.Values(platforms))
	if slices.Sort(got); !slices.Equal(got, want) {
		fmt.Fprintf(req.Warnings, "%s names %s with platforms %s, want %s: rebuilding\n", tag, pub.Digest, strings.Join(got, ","), strings.Join(want, ","))
		return nil, nil
	}
	out.why = fmt.Sprintf("%s already names %s, built from inputs %s", tag, pub.Digest, inputs)
	if !req.signs() {
		out.why += "; nothing built or pushed (--force rebuilds)"
		return out, nil
	}
	keyName, problem, err := publishedSignatures(ctx, req, ref, out.platforms, ropts)
	if err != nil {
		return nil, err
	}
	if problem != "" {
		fmt.Fprintf(req.Warnings, "%s names %s of these inputs, but %s: rebuilding, pushing and signing it\n", tag, pub.Digest, problem)
		return nil, nil
	}
	what := "signatures verify with %s and its SBOM and provenance attestations are there"
	if !req.Solve.Provenance {
		what = "signatures verify with %s and its SBOM attestations are there"
	}
	out.why += fmt.Sprintf(" and its "+what+"; nothing built, pushed or signed (--force rebuilds)", keyName)
	return out, nil
}

// publishedPlatforms reads the published index ref: its platform images
// (attestation manifests left out) and their platforms.
func publishedPlatforms(ref name.Digest, ropts []remote.Option) (*publishedImage, []string, error) {
	idx, err := remote.Index(ref, ropts...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the published index %s: %w", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the published index %s: %w", ref, err)
	}
	out := &publishedImage{}
	var got []string
	for _, m := range im.Manifests {
		if m.Platform == nil || imagespec.IsAttestationManifest(m) || !m.MediaType.IsImage() {
			continue
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		if m.Platform.Variant != "" {
			p += "/" + m.Platform.Variant
		}
		got = append(got, p)
		out.platforms = append(out.platforms, PlatformOutput{Digest: m.Digest.String(), PlatformResult: build.PlatformResult{Platform: p}})
	}
	return out, got, nil
}

// publishedSignatures checks the published image ref with req.Sign.VerifyKey,
// or else the signer's public key (named keyName): its signatures verify
// and every platform manifest has its attestations. problem says what is
// wrong ("" when nothing is).
func publishedSignatures(ctx context.Context, req *Request, ref name.Digest, platforms []PlatformOutput, ropts []remote.Option) (keyName, problem string, err error) {
	// The attestations are looked for first, every platform at once: that
	// needs no key, so it runs while the key is still being decrypted.
	missing := make([]string, len(platforms))
	var g errgroup.Group
	for i, p := range platforms {
		g.Go(func() (err error) {
			missing[i], err = missingAttestations(ctx, ref.Context().Digest(p.Digest), req.Solve.Provenance, ropts)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", "", err
	}
	pk, keyName := req.Sign.VerifyKey, req.Sign.VerifyKeyName
	if pk == nil {
		s, err := req.signer(ctx)
		if err != nil {
			return "", "", err
		}
		pem, err := s.PublicKeyPEM()
		if err != nil {
			return "", "", fmt.Errorf("public key of %s: %w", s, err)
		}
		if pk, err = keys.PublicFromPEM(pem); err != nil {
			return "", "", err
		}
		keyName = s.String()
	}
	// Signatures are verified; the attestations are only looked for (their
	// predicate types, from the attestation image's manifest): verifying
	// them downloads every SBOM document, megabytes per platform, which is
	// imagectl verify's job. A build that stopped between signing and
	// attesting is found all the same.
	rep, err := verify.Image(ctx, ref.String(), verify.WithVerifier(pk), verify.WithSkipContents(true),
		verify.WithSkipAttestations(true), verify.WithRemoteOptions(req.Publish.RemoteOptions...), verify.WithNameOptions(nameOpts(req.Publish.Insecure)...))
	if err != nil {
		return "", "", fmt.Errorf("verifying the published %s: %w", ref, err)
	}
	switch {
	case !rep.OK && len(rep.Failures) > 0:
		return keyName, fmt.Sprintf("it does not verify with %s (%d problems, first: %s)", keyName, len(rep.Failures), rep.Failures[0]), nil
	case !rep.OK:
		return keyName, fmt.Sprintf("it does not verify with %s", keyName), nil
	}
	for i, p := range platforms {
		if missing[i] != "" {
			return keyName, fmt.Sprintf("its %s manifest %s has no %s attestation", p.Platform, p.Digest, missing[i]), nil
		}
	}
	return keyName, "", nil
}

// missingAttestations names the attestation kind the manifest d lacks
// ("SBOM", "provenance"; "" when none), read from the predicateType
// annotations of its cosign attestation image (tag sha256-<hex>.att) without
// downloading the attestations.
func missingAttestations(ctx context.Context, d name.Digest, provenance bool, ropts []remote.Option) (string, error) {
	att := d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1) + ".att")
	var types []string
	desc, err := remote.Get(att, ropts...)
	switch {
	case registry.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("reading the attestations of %s: %w", d, err)
	default:
		m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return "", fmt.Errorf("reading the attestations of %s: %w", d, err)
		}
		for _, l := range m.Layers {
			types = append(types, l.Annotations["predicateType"])
		}
	}
	has := func(pred func(string) bool) bool { return slices.ContainsFunc(types, pred) }
	if !has(imagespec.IsSBOM) {
		return "SBOM", nil
	}
	if provenance && !has(imagespec.IsProvenance) {
		return "provenance", nil
	}
	return "", nil
}

// refused reports whether the registry refused to read (401, 403): the
// credentials are missing or may not read; the push preflight explains.
func refused(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden)
}
