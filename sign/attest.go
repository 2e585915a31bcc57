package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/sigstore/cosign/v2/pkg/cosign/attestation"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	cremote "github.com/sigstore/cosign/v2/pkg/cosign/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/imagectl/imagectl/sbom/document"
)

// cosignType maps a predicate type URI to cosign's statement generator name.
func cosignType(predicateType string) (string, error) {
	switch predicateType {
	case imagespec.PredicateSPDX:
		return "spdxjson", nil
	case imagespec.PredicateCycloneDX:
		return "cyclonedx", nil
	case imagespec.PredicateSLSA02:
		return "slsaprovenance02", nil
	case imagespec.PredicateSLSA1:
		return "slsaprovenance1", nil
	}
	return "", fmt.Errorf("unsupported predicate type %q", predicateType)
}

// PredicateFor returns the predicate function AttestSBOM uses for one target;
// platform is "" for the index.
type PredicateFor func(platform string) ([]byte, error)

// Attest attaches a signed in-toto attestation (DSSE envelope, cosign's
// .att tag) with the given predicate to the image's index and, with
// WithAllManifests (default), to each platform manifest. An attestation of
// the same predicate type from an earlier run is replaced.
func Attest(ctx context.Context, ref string, s *Signer, predicateType string, predicate PredicateFor, opts ...Option) (*Result, error) {
	if s == nil {
		return nil, errors.New("attest: no signer")
	}
	typ, err := cosignType(predicateType)
	if err != nil {
		return nil, err
	}
	o := makeOptions(ctx, opts)
	targets, root, err := resolveTargets(ref, o)
	if err != nil {
		return nil, err
	}
	res := &Result{Ref: root.String()}
	for _, t := range targets {
		pred, err := predicate(t.Platform)
		if err != nil {
			return res, fmt.Errorf("building %s predicate for %s: %w", predicateType, describe(t), err)
		}
		d := root.Context().Digest(t.Digest)
		tag, err := attestDigest(ctx, d, s, typ, predicateType, pred, o)
		if err != nil {
			return res, fmt.Errorf("attesting %s: %w", describe(t), err)
		}
		t.Tag = tag
		res.Targets = append(res.Targets, t)
	}
	return res, nil
}

func attestDigest(ctx context.Context, d name.Digest, s *Signer, typ, predicateType string, predicate []byte, o *options) (string, error) {
	h := d.DigestStr()
	st, err := attestation.GenerateStatement(attestation.GenerateOpts{
		Predicate: bytes.NewReader(predicate),
		Type:      typ,
		Digest:    h[len("sha256:"):],
		Repo:      d.Repository.String(),
	})
	if err != nil {
		return "", fmt.Errorf("building in-toto statement: %w", err)
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	env, err := dsse.WrapSigner(s.sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(payload), sigopts.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("signing attestation: %w", err)
	}
	sopts, err := s.certAndLogOptions(ctx, func(signerPEM []byte) (*bundle.RekorBundle, error) { return s.tlog.uploadDSSE(ctx, env, signerPEM) },
		static.WithLayerMediaType(types.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": predicateType}))
	if err != nil {
		return "", err
	}
	att, err := static.NewAttestation(env, sopts...)
	if err != nil {
		return "", err
	}
	oo := o.ociOpts()
	se := ociremote.SignedUnknown(d, oo...)
	newSE, err := mutate.AttachAttestationToEntity(se, att,
		mutate.WithDupeDetector(cremote.NewDupeDetector(s.sv)),
		mutate.WithReplaceOp(cremote.NewReplaceOp(predicateType)))
	if err != nil {
		return "", fmt.Errorf("attaching attestation: %w", err)
	}
	if err := ociremote.WriteAttestations(d.Repository, newSE, oo...); err != nil {
		return "", fmt.Errorf("writing attestation: %w", err)
	}
	tag, err := ociremote.AttestationTag(d, oo...)
	if err != nil {
		return "", err
	}
	return tag.String(), nil
}

// AttestSBOM builds an SPDX 2.3 SBOM from what imagectl knows (per platform,
// and one covering all platforms for the index) and attaches it as a signed
// in-toto attestation to the index and every platform manifest.
func AttestSBOM(ctx context.Context, ref string, s *Signer, in document.SBOMInput, opts ...Option) (*Result, error) {
	return Attest(ctx, ref, s, imagespec.PredicateSPDX, func(platform string) ([]byte, error) {
		return document.SPDX(in, platform)
	}, opts...)
}

// AttestSBOMFile attaches an SBOM document the caller already has (SPDX JSON
// or CycloneDX JSON, detected from its content) to the index and every
// platform manifest.
func AttestSBOMFile(ctx context.Context, ref string, s *Signer, doc []byte, opts ...Option) (*Result, error) {
	pt, err := sbomType(doc)
	if err != nil {
		return nil, err
	}
	return Attest(ctx, ref, s, pt, func(string) ([]byte, error) { return doc, nil }, opts...)
}

func sbomType(doc []byte) (string, error) {
	var probe struct {
		SPDXVersion string `json:"spdxVersion"`
		BOMFormat   string `json:"bomFormat"`
	}
	if err := json.Unmarshal(doc, &probe); err != nil {
		return "", fmt.Errorf("SBOM is not JSON: %w", err)
	}
	switch {
	case probe.SPDXVersion != "":
		return imagespec.PredicateSPDX, nil
	case probe.BOMFormat == "CycloneDX":
		return imagespec.PredicateCycloneDX, nil
	}
	return "", errors.New("SBOM is neither SPDX JSON (spdxVersion) nor CycloneDX JSON (bomFormat)")
}
