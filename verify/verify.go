package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/regauth"

	"github.com/imagectl/imagectl/attest"
)

// In-toto predicate types.
const (
	maxStatementLen = 32 << 20
)

// Option configures Image.
type Option func(*options)

type options struct {
	verifier       signature.Verifier
	identities     []cosign.Identity
	remoteOpts     []remote.Option
	nameOpts       []name.Option
	skipContents   bool
	skipSBOM       bool
	skipProvenance bool
	maxFileBytes   int64
	maxImageBytes  int64
	// allowedRepos are signed repositories accepted besides the verified
	// one (mirrors).
	allowedRepos []string
}

// WithVerifier verifies signatures with a public key.
func WithVerifier(v signature.Verifier) Option { return func(o *options) { o.verifier = v } }

// Identity is a keyless signer identity: exact values or regular
// expressions for the certificate subject and the OIDC issuer.
type Identity struct {
	Subject, SubjectRegExp, Issuer, IssuerRegExp string
}

// WithKeylessIdentity accepts signatures made keylessly (Fulcio
// certificate, Rekor entry) by id. Needs the Sigstore public-good trust
// root (TUF, fetched over the network): for CI, not for offline use.
func WithKeylessIdentity(id Identity) Option {
	return func(o *options) {
		o.identities = append(o.identities, cosign.Identity{Subject: id.Subject, SubjectRegExp: id.SubjectRegExp, Issuer: id.Issuer, IssuerRegExp: id.IssuerRegExp})
	}
}

// WithRemoteOptions adds go-containerregistry remote options. The default
// keychain and the context are always set.
func WithRemoteOptions(ro ...remote.Option) Option {
	return func(o *options) { o.remoteOpts = append(o.remoteOpts, ro...) }
}

// WithNameOptions adds reference parsing options (name.Insecure).
func WithNameOptions(no ...name.Option) Option {
	return func(o *options) { o.nameOpts = append(o.nameOpts, no...) }
}

// WithSkipContents skips reading layers (signatures, attestations and the
// labels against each other are still checked). The report lists the skip.
func WithSkipContents(skip bool) Option { return func(o *options) { o.skipContents = skip } }

// WithSkipAttestations skips the SBOM and provenance requirements. The
// report lists the skip.
func WithSkipAttestations(skip bool) Option {
	return func(o *options) { o.skipSBOM, o.skipProvenance = skip, skip }
}

// WithAllowedRepositories accepts signatures whose signed repository
// (critical.identity.docker-reference in the cosign payload) is one of
// repos, besides the repository being verified: for a mirror, name the
// repository the image was signed in. Without it, a copy of an image and
// its signatures in another repository fails verification.
func WithAllowedRepositories(repos ...string) Option {
	return func(o *options) { o.allowedRepos = append(o.allowedRepos, repos...) }
}

// WithLimits bounds reads: one file of interest (package.json, METADATA...)
// and the uncompressed bytes of one platform's layers.
func WithLimits(maxFileBytes, maxImageBytes int64) Option {
	return func(o *options) { o.maxFileBytes, o.maxImageBytes = maxFileBytes, maxImageBytes }
}

// manifestInfo is one manifest to check.
type manifestInfo struct {
	ref      name.Digest
	platform string
	desc     v1.Descriptor
}

// Image verifies the image at ref. The error is for things that stop the
// check itself (bad options, unreachable registry); everything about the
// image goes into the report, and Report.OK is false on any failure.
func Image(ctx context.Context, ref string, opts ...Option) (*Report, error) {
	o := &options{maxFileBytes: 4 << 20, maxImageBytes: 64 << 30}
	for _, opt := range opts {
		opt(o)
	}
	if o.verifier == nil && len(o.identities) == 0 {
		return nil, errors.New("verify: no public key and no keyless identity: nothing to trust")
	}
	o.remoteOpts = regauth.RemoteOptions(ctx, o.remoteOpts...)

	r, err := name.ParseReference(ref, o.nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	desc, err := remote.Get(r, o.remoteOpts...)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", r, err)
	}
	root := r.Context().Digest(desc.Digest.String())
	rep := &Report{Ref: r.String(), Digest: desc.Digest.String()}
	co, err := o.checkOpts(ctx)
	if err != nil {
		return nil, err
	}
	claims, err := newRepositoryClaims(r.Context(), o.allowedRepos, o.nameOpts)
	if err != nil {
		return nil, err
	}
	co.ClaimVerifier = claims.verify

	v := &verifier{o: o, co: co, rep: rep, root: root, claims: claims}
	if desc.MediaType.IsIndex() {
		err = v.index(ctx, desc)
	} else if desc.MediaType.IsImage() {
		err = v.single(ctx, desc)
	} else {
		v.fail(Failure{Check: CheckContents, Digest: root.DigestStr(), Message: fmt.Sprintf("media type %s is neither an image index nor an image manifest", desc.MediaType)})
	}
	if err != nil {
		return nil, err
	}
	if o.skipContents {
		rep.Skipped = append(rep.Skipped, CheckContents, CheckExtensions, CheckPython)
	}
	if o.skipSBOM {
		rep.Skipped = append(rep.Skipped, CheckSBOM)
	}
	if o.skipProvenance {
		rep.Skipped = append(rep.Skipped, CheckProvenance)
	}
	rep.OK = len(rep.Failures) == 0
	return rep, nil
}

func (o *options) checkOpts(ctx context.Context) (*cosign.CheckOpts, error) {
	co := &cosign.CheckOpts{
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(o.remoteOpts...), ociremote.WithNameOptions(o.nameOpts...)},
		ClaimVerifier:      cosign.SimpleClaimVerifier,
	}
	if o.verifier != nil {
		// Key mode: signatures are made offline, with no transparency log
		// entry and no certificate.
		co.SigVerifier = o.verifier
		co.IgnoreTlog = true
		co.IgnoreSCT = true
		return co, nil
	}
	// Keyless: certificates chain to Fulcio and entries are in Rekor,
	// checked against the Sigstore trust root from TUF.
	tr, err := cosign.TrustedRoot()
	if err != nil {
		return nil, fmt.Errorf("loading the Sigstore trust root for keyless verification (needs network access to the TUF mirror): %w", err)
	}
	co.TrustedMaterial = tr
	co.Identities = o.identities
	return co, nil
}

type verifier struct {
	o      *options
	co     *cosign.CheckOpts
	rep    *Report
	root   name.Digest
	claims *repositoryClaims
	// sbomDocs are the verified SBOM documents by manifest digest.
	sbomDocs map[string][]sbomDoc
}

func (v *verifier) fail(f Failure) { v.rep.Failures = append(v.rep.Failures, f) }

// index checks an image index and its platform manifests.
func (v *verifier) index(ctx context.Context, desc *remote.Descriptor) error {
	idx, err := desc.ImageIndex()
	if err != nil {
		return fmt.Errorf("reading index %s: %w", v.root, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading index %s: %w", v.root, err)
	}
	rootM := Manifest{Digest: v.root.DigestStr(), MediaType: string(desc.MediaType)}
	rootM.Signatures = v.signatures(ctx, manifestInfo{ref: v.root})
	v.rep.Manifests = append(v.rep.Manifests, rootM)

	// Attestation manifests by the digest they describe.
	attFor := map[string][]v1.Descriptor{}
	var platforms []manifestInfo
	for _, d := range im.Manifests {
		if imagespec.IsAttestationManifest(d) {
			// One without BuildKit's annotations names no subject: it is
			// no runnable image, and no platform's attestation either.
			if s := imagespec.AttestationSubject(d); s != "" {
				attFor[s] = append(attFor[s], d)
			}
			continue
		}
		mi := manifestInfo{ref: v.root.Context().Digest(d.Digest.String()), desc: d}
		if d.Platform == nil {
			v.fail(Failure{Check: CheckPlatforms, Digest: d.Digest.String(), Where: "index " + short(v.root.DigestStr()), Message: "manifest has no platform in the index"})
		} else {
			mi.platform = d.Platform.String()
		}
		if !d.MediaType.IsImage() {
			v.fail(Failure{Check: CheckContents, Platform: mi.platform, Digest: d.Digest.String(), Message: fmt.Sprintf("media type %s: nested indexes are not supported", d.MediaType)})
			continue
		}
		platforms = append(platforms, mi)
	}
	if len(platforms) == 0 {
		v.fail(Failure{Check: CheckPlatforms, Digest: v.root.DigestStr(), Message: "index has no platform manifests"})
	}

	var lockPlatforms []string
	var lockFrom string
	for _, mi := range platforms {
		m := Manifest{Digest: mi.ref.DigestStr(), Platform: mi.platform, MediaType: string(mi.desc.MediaType)}
		m.Signatures = v.signatures(ctx, mi)
		img, err := idx.Image(mi.desc.Digest)
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", mi.platform, mi.ref.DigestStr(), err)
		}
		v.attestations(ctx, mi, &m, idx, attFor[mi.ref.DigestStr()])
		lock := v.platform(ctx, mi, img, &m)
		v.checkSBOMs(mi, &m, lock)
		if lock != nil && lockPlatforms == nil {
			lockPlatforms, lockFrom = sortedCopy(lock.Platforms), mi.platform
		}
		v.rep.Manifests = append(v.rep.Manifests, m)
	}
	if lockPlatforms != nil {
		var got []string
		for _, mi := range platforms {
			got = append(got, mi.platform)
		}
		got = sortedCopy(got)
		if strings.Join(got, ",") != strings.Join(lockPlatforms, ",") {
			v.fail(Failure{Check: CheckPlatforms, Digest: v.root.DigestStr(), Where: "label " + imagespec.LabelLock + " (" + lockFrom + ")",
				Message: fmt.Sprintf("lock platforms %s, index has %s", strings.Join(lockPlatforms, ","), strings.Join(got, ","))})
		}
	}
	return nil
}

// single checks a single-platform image (no index).
func (v *verifier) single(ctx context.Context, desc *remote.Descriptor) error {
	img, err := desc.Image()
	if err != nil {
		return fmt.Errorf("reading image %s: %w", v.root, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading config of %s: %w", v.root, err)
	}
	// A config without OS/architecture (an image appended onto scratch)
	// names no platform; platform() records the failure.
	plat, ok := configPlatform(cf)
	if !ok {
		plat = noPlatform
	}
	mi := manifestInfo{ref: v.root, platform: plat, desc: desc.Descriptor}
	m := Manifest{Digest: v.root.DigestStr(), Platform: mi.platform, MediaType: string(desc.MediaType)}
	m.Signatures = v.signatures(ctx, mi)
	v.attestations(ctx, mi, &m, nil, nil)
	lock := v.platform(ctx, mi, img, &m)
	v.checkSBOMs(mi, &m, lock)
	if lock != nil && ok && !contains(lock.Platforms, mi.platform) {
		v.fail(Failure{Check: CheckPlatforms, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: "label " + imagespec.LabelLock,
			Message: fmt.Sprintf("image platform %s is not among the lock platforms %s", mi.platform, strings.Join(lock.Platforms, ","))})
	}
	v.rep.Manifests = append(v.rep.Manifests, m)
	return nil
}

// signatures verifies the cosign signatures of one manifest and returns how
// many verified; a failure is recorded when none does.
func (v *verifier) signatures(ctx context.Context, mi manifestInfo) int {
	sigs, _, err := cosign.VerifyImageSignatures(ctx, mi.ref, v.co)
	if err == nil {
		return len(sigs)
	}
	tag, _ := ociremote.SignatureTag(mi.ref, v.co.RegistryClientOpts...)
	f := Failure{Check: CheckSignature, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: tag.String()}
	var noSigs *cosign.ErrNoSignaturesFound
	var noMatch *cosign.ErrNoMatchingSignatures
	signedFor := v.claims.rejected(mi.ref.DigestStr())
	switch {
	case errors.As(err, &noSigs):
		f.Message = "not signed: no signatures found"
	case errors.As(err, &noMatch) && len(signedFor) > 0:
		f.Message = fmt.Sprintf("signed for repository %s, not %s: the trusted signature's critical.identity.docker-reference names another repository (to verify a mirror, accept it with --allow-repository %s)",
			strings.Join(signedFor, ", "), v.claims.verified, signedFor[0])
	case errors.As(err, &noMatch):
		f.Message = "no valid signature from the trusted key/identity: " + oneLine(err.Error())
	default:
		f.Message = "verifying signatures: " + oneLine(err.Error())
	}
	v.fail(f)
	return 0
}

// attestations finds SBOM and provenance for one platform manifest: verified
// cosign attestations on its digest, and BuildKit attestation manifests in
// the (signed) index.
func (v *verifier) attestations(ctx context.Context, mi manifestInfo, m *Manifest, idx v1.ImageIndex, bk []v1.Descriptor) {
	if v.o.skipSBOM && v.o.skipProvenance {
		return
	}
	aco := *v.co
	aco.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	atts, _, err := cosign.VerifyImageAttestations(ctx, mi.ref, &aco)
	var attErr string
	if err != nil {
		var noMatch *cosign.ErrNoMatchingAttestations
		if !errors.As(err, &noMatch) || !strings.HasSuffix(strings.TrimSpace(err.Error()), "no matching attestations:") {
			attErr = oneLine(err.Error())
		}
	}
	for _, a := range atts {
		st, err := cosignStatement(a)
		if err != nil {
			continue
		}
		pt := st.PredicateType
		where := "cosign attestation " + pt
		if err := st.CheckType(); err != nil {
			// A signed statement that is no in-toto Statement is never an
			// SBOM or provenance, and is reported.
			if c := attestationCheck(pt); c != "" {
				v.fail(Failure{Check: c, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: where, Message: err.Error()})
			}
			continue
		}
		switch {
		case imagespec.IsSBOM(pt):
			v.acceptSBOM(mi, m, where, cosignLayer(a), st.Predicate)
		case imagespec.IsProvenance(pt) && m.Provenance == "":
			m.Provenance = where
		}
	}
	for _, d := range bk {
		sts, problems, err := buildkitStatements(idx, d, mi.ref.DigestStr())
		where := "attestation manifest " + d.Digest.String()
		if err != nil {
			v.fail(Failure{Check: CheckProvenance, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: where, Message: err.Error()})
			continue
		}
		for _, p := range problems {
			v.fail(Failure{Check: p.check, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: where, Message: p.err.Error()})
		}
		for _, st := range sts {
			switch pt := st.PredicateType; {
			case pt == imagespec.PredicateSPDX:
				v.acceptSBOM(mi, m, "buildkit attestation manifest "+d.Digest.String(), "layer "+short(st.layer.String()), st.Predicate)
			case imagespec.IsProvenance(pt) && m.Provenance == "":
				m.Provenance = "buildkit attestation manifest " + d.Digest.String() + " (" + pt + ")"
			}
		}
	}
	tag, _ := ociremote.AttestationTag(mi.ref, v.co.RegistryClientOpts...)
	suffix := ""
	if attErr != "" {
		suffix = " (attestations present but none verified: " + attErr + ")"
	}
	if len(v.sbomDocs[mi.ref.DigestStr()]) == 0 && !v.o.skipSBOM {
		v.fail(Failure{Check: CheckSBOM, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: tag.String(),
			Message: "no verified SBOM attestation (SPDX or CycloneDX)" + suffix})
	}
	if m.Provenance == "" && !v.o.skipProvenance {
		v.fail(Failure{Check: CheckProvenance, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: tag.String(),
			Message: "no provenance: neither a BuildKit attestation manifest in the index nor a verified SLSA provenance attestation" + suffix})
	}
}

// attestationCheck is the check an attestation of predicate type pt
// counts for: sbom, provenance, or none (a type verify does not read).
func attestationCheck(pt string) Check {
	switch {
	case imagespec.IsSBOM(pt):
		return CheckSBOM
	case imagespec.IsProvenance(pt):
		return CheckProvenance
	}
	return ""
}

// bkStatement is one in-toto statement of a BuildKit attestation manifest.
type bkStatement struct {
	*attest.Statement
	layer v1.Hash
}

// bkProblem is a layer of a BuildKit attestation manifest that is not a
// statement verify can use, and the check it fails.
type bkProblem struct {
	check Check
	err   error
}

// buildkitStatements reads a BuildKit attestation manifest and returns its
// in-toto statements, each of an in-toto Statement _type whose subjects
// (when given) name the platform digest, and what is wrong with each other
// layer that has a predicate type. The error is for a manifest that cannot
// be read at all.
func buildkitStatements(idx v1.ImageIndex, d v1.Descriptor, subject string) ([]bkStatement, []bkProblem, error) {
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, nil, fmt.Errorf("reading attestation manifest: %w", err)
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("reading attestation manifest: %w", err)
	}
	var out []bkStatement
	var problems []bkProblem
	for _, l := range mf.Layers {
		pt := l.Annotations[imagespec.AnnotationPredicateType]
		if pt == "" {
			continue
		}
		st, err := buildkitStatement(img, l, pt, subject)
		if err != nil {
			c := CheckProvenance
			if pt == imagespec.PredicateSPDX || imagespec.IsSBOM(pt) {
				c = CheckSBOM
			}
			problems = append(problems, bkProblem{check: c, err: fmt.Errorf("layer %s: %w", l.Digest, err)})
			continue
		}
		out = append(out, bkStatement{Statement: st, layer: l.Digest})
	}
	return out, problems, nil
}

// buildkitStatement reads one in-toto layer of a BuildKit attestation
// manifest whose annotation says predicate type pt.
func buildkitStatement(img v1.Image, l v1.Descriptor, pt, subject string) (*attest.Statement, error) {
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed() // in-toto layers are stored as is
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxStatementLen+1))
	rc.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > maxStatementLen {
		return nil, fmt.Errorf("in-toto statement larger than %d bytes", maxStatementLen)
	}
	st, err := attest.ParseStatement(b)
	if err != nil {
		return nil, err
	}
	if st.PredicateType != pt {
		return nil, fmt.Errorf("predicate type %q, annotation says %q", st.PredicateType, pt)
	}
	if len(st.Subject) > 0 && !st.Names(subject) {
		return nil, fmt.Errorf("%s statement does not name subject %s", pt, subject)
	}
	return st, nil
}

// noPlatform stands for the platform of a single manifest whose config
// names no OS/architecture, in the report.
const noPlatform = "(no platform)"

// configPlatform returns the platform an image config names and whether it
// names both an OS and an architecture. A config that names neither
// (v1.ConfigFile.Platform is nil) gives "".
func configPlatform(cf *v1.ConfigFile) (string, bool) {
	p := cf.Platform()
	if p == nil {
		return "", false
	}
	return p.String(), p.OS != "" && p.Architecture != ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}
