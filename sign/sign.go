package sign

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	cremote "github.com/sigstore/cosign/v2/pkg/cosign/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/regauth"
)

// Option configures Image and AttestSBOM.
type Option func(*options)

type options struct {
	remoteOpts      []remote.Option
	nameOpts        []name.Option
	allManifests    bool
	attestManifests bool
	annotations     map[string]any
}

func makeOptions(ctx context.Context, opts []Option) *options {
	o := &options{allManifests: true}
	for _, opt := range opts {
		opt(o)
	}
	// Context and default keychain first; callers' options override them.
	o.remoteOpts = regauth.RemoteOptions(ctx, o.remoteOpts...)
	return o
}

// WithRemoteOptions adds go-containerregistry remote options (auth,
// transport). The default keychain and the call's context are always set.
func WithRemoteOptions(ro ...remote.Option) Option {
	return func(o *options) { o.remoteOpts = append(o.remoteOpts, ro...) }
}

// WithNameOptions adds reference parsing options, e.g. name.Insecure for a
// plain-HTTP registry (localhost and 127.0.0.1 use HTTP without it).
func WithNameOptions(no ...name.Option) Option {
	return func(o *options) { o.nameOpts = append(o.nameOpts, no...) }
}

// WithAllManifests chooses whether the platform manifests of an index are
// signed too (default true). Without them only the index is signed, which
// leaves per-platform digests unverifiable: only turn it off knowingly.
func WithAllManifests(all bool) Option {
	return func(o *options) { o.allManifests = all }
}

// WithAttestationManifests also signs BuildKit's attestation manifests
// (unknown/unknown). Off by default; see the package documentation.
func WithAttestationManifests(on bool) Option {
	return func(o *options) { o.attestManifests = on }
}

// WithAnnotations adds optional annotations to every signed payload
// (cosign's -a key=value).
func WithAnnotations(ann map[string]string) Option {
	return func(o *options) {
		if o.annotations == nil {
			o.annotations = map[string]any{}
		}
		for k, v := range ann {
			o.annotations[k] = v
		}
	}
}

func (o *options) ociOpts() []ociremote.Option {
	return []ociremote.Option{ociremote.WithRemoteOptions(o.remoteOpts...), ociremote.WithNameOptions(o.nameOpts...)}
}

// Target is one manifest that was signed or attested.
type Target struct {
	// Digest is the manifest digest (sha256:...).
	Digest string `json:"digest"`
	// Platform is os/arch[/variant]; empty for the index itself.
	Platform string `json:"platform,omitempty"`
	// MediaType is the manifest media type.
	MediaType string `json:"mediaType"`
	// Tag is where the signature or attestation was stored
	// (repo:sha256-<hex>.sig or .att).
	Tag string `json:"tag"`
}

// Result lists what was signed.
type Result struct {
	// Ref is the signed image as repo@digest.
	Ref     string   `json:"ref"`
	Targets []Target `json:"targets"`
}

// Image signs the image at ref: the index (or single manifest) and, with an
// index, every platform manifest. Signatures are appended next to existing
// ones; signing twice with the same key does not duplicate them.
func Image(ctx context.Context, ref string, s *Signer, opts ...Option) (*Result, error) {
	if s == nil {
		return nil, errors.New("sign: no signer")
	}
	o := makeOptions(ctx, opts)
	targets, root, err := resolveTargets(ref, o)
	if err != nil {
		return nil, err
	}
	// The targets are signed concurrently: each signature goes to its own
	// tag (sha256-<hex>.sig).
	res := &Result{Ref: root.String()}
	signed := make([]Target, len(targets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	og := makeOptions(gctx, opts) // the first failure stops the others' requests
	seen := map[string]bool{}
	for i, t := range targets {
		if seen[t.Digest] { // an index may list a manifest twice: one signature
			continue
		}
		seen[t.Digest] = true
		g.Go(func() error {
			tag, err := signDigest(gctx, root.Context().Digest(t.Digest), s, og)
			if err != nil {
				return fmt.Errorf("signing %s: %w", describe(t), err)
			}
			t.Tag = tag
			signed[i] = t
			return nil
		})
	}
	err = g.Wait()
	for _, t := range signed {
		if t.Tag != "" {
			res.Targets = append(res.Targets, t)
		}
	}
	return res, err
}

func describe(t Target) string {
	if t.Platform == "" {
		return t.Digest
	}
	return t.Platform + " " + t.Digest
}

// resolveTargets resolves ref to a digest and lists the manifests to sign:
// the root first, then its platform manifests in index order.
func resolveTargets(ref string, o *options) ([]Target, name.Digest, error) {
	r, err := name.ParseReference(ref, o.nameOpts...)
	if err != nil {
		return nil, name.Digest{}, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	desc, err := remote.Get(r, o.remoteOpts...)
	if err != nil {
		return nil, name.Digest{}, fmt.Errorf("fetching %s: %w", r, err)
	}
	root := r.Context().Digest(desc.Digest.String())
	targets := []Target{{Digest: desc.Digest.String(), MediaType: string(desc.MediaType)}}
	if !desc.MediaType.IsIndex() {
		return targets, root, nil
	}
	if !o.allManifests {
		return targets, root, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, root, fmt.Errorf("reading index %s: %w", root, err)
	}
	children, err := childManifests(idx, o.attestManifests)
	if err != nil {
		return nil, root, fmt.Errorf("reading index %s: %w", root, err)
	}
	return append(targets, children...), root, nil
}

// childManifests lists the manifests of an index, recursing into nested
// indexes, skipping attestation manifests unless withAttest.
func childManifests(idx v1.ImageIndex, withAttest bool) ([]Target, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Target
	for _, d := range im.Manifests {
		if imagespec.IsAttestationManifest(d) && !withAttest {
			continue
		}
		t := Target{Digest: d.Digest.String(), MediaType: string(d.MediaType)}
		if d.Platform != nil {
			t.Platform = d.Platform.String()
		}
		out = append(out, t)
		if d.MediaType.IsIndex() {
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			more, err := childManifests(child, withAttest)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

// signDigest signs one manifest digest and stores the signature at its .sig tag.
func signDigest(ctx context.Context, d name.Digest, s *Signer, o *options) (string, error) {
	payload, err := (&sigpayload.Cosign{Image: d, Annotations: o.annotations}).MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("building signing payload: %w", err)
	}
	sigBytes, err := s.sv.SignMessage(bytes.NewReader(payload), sigopts.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("signing payload: %w", err)
	}
	b64 := base64.StdEncoding.EncodeToString(sigBytes)
	sopts, err := s.certAndLogOptions(ctx, func(signerPEM []byte) (*bundle.RekorBundle, error) {
		return s.tlog.uploadSignature(ctx, sigBytes, payload, signerPEM)
	})
	if err != nil {
		return "", err
	}
	sig, err := static.NewSignature(payload, b64, sopts...)
	if err != nil {
		return "", err
	}
	oo := o.ociOpts()
	se := ociremote.SignedUnknown(d, oo...)
	newSE, err := mutate.AttachSignatureToEntity(se, sig, mutate.WithDupeDetector(cremote.NewDupeDetector(s.sv)))
	if err != nil {
		return "", fmt.Errorf("attaching signature: %w", err)
	}
	if err := ociremote.WriteSignatures(d.Repository, newSE, oo...); err != nil {
		return "", fmt.Errorf("writing signature: %w", err)
	}
	tag, err := ociremote.SignatureTag(d, oo...)
	if err != nil {
		return "", err
	}
	return tag.String(), nil
}

// certAndLogOptions are opts and, for a keyless signer, a certificate chain
// valid for at least its renew margin and the transparency log entry upload
// makes with the signer's certificate (or public key) in PEM (signature and
// attestation alike).
func (s *Signer) certAndLogOptions(ctx context.Context, upload func(signerPEM []byte) (*bundle.RekorBundle, error), opts ...static.Option) ([]static.Option, error) {
	var signerPEM []byte
	if s.certs != nil {
		c, err := s.certs.current(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, static.WithCertChain(c.certPEM, nil))
		signerPEM = c.certPEM
	} else if s.tlog != nil {
		p, err := s.PublicKeyPEM()
		if err != nil {
			return nil, fmt.Errorf("public key of %s: %w", s, err)
		}
		signerPEM = p
	}
	if s.tlog != nil {
		b, err := upload(signerPEM)
		if err != nil {
			return nil, fmt.Errorf("transparency log upload: %w", err)
		}
		opts = append(opts, static.WithBundle(b))
	}
	return opts, nil
}
