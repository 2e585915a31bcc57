package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/sign"
)

// Renders renders each set once per command and keeps the render by its
// inputs digest: plan's digests (it is release's InputsDigester), the build
// of each entry (ReleaseBuilder) and release's inputs check (the digest
// carried by the plan's entry) all use that one render.
type Renders struct {
	def      *build.Definition
	mu       sync.Mutex
	byInputs map[string]*build.Rendered
}

// NewRenders returns Renders of def.
func NewRenders(def *build.Definition) *Renders {
	return &Renders{def: def, byInputs: map[string]*build.Rendered{}}
}

// InputsDigest renders set, keeps the render and returns its inputs digest.
func (r *Renders) InputsDigest(set imagespec.Set) (string, error) {
	out, err := r.def.Render(set)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.byInputs[out.Inputs] = out
	r.mu.Unlock()
	return out.Inputs, nil
}

// Rendered returns the render whose inputs digest is inputs, if InputsDigest
// made it.
func (r *Renders) Rendered(inputs string) (*build.Rendered, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out, ok := r.byInputs[inputs]
	return out, ok
}

// ReleaseBuilder is imagectl release's builder and signer (release.Builder
// and release.Signer): Build runs the same pipeline as imagectl build for
// a planned entry, from the render its plan made, and pushes the index by
// digest with no tag and no signature; Sign then signs what Build pushed
// (the index and every platform manifest) and attaches its SBOM and
// provenance, exactly as imagectl build --sign does. Signing happens once,
// in release's sign step.
type ReleaseBuilder struct {
	b       build.Interface
	req     Request
	renders *Renders
	signer  *sign.Signer

	mu    sync.Mutex
	built map[string]*Result // by index digest
}

// NewReleaseBuilder returns a ReleaseBuilder building with b the sets
// renders rendered. req carries everything but the set and repository
// (Matrix, Extensions, Revision, SourceDateEpoch, Solve and Sign's SBOM
// settings); its set, repository and push settings are set by Build.
// settings.json is computed here, once for every entry.
func NewReleaseBuilder(b build.Interface, req Request, renders *Renders, s *sign.Signer) (*ReleaseBuilder, error) {
	settings, err := extensions.SettingsJSON(imagespec.ImageSettings(req.Matrix.Settings))
	if err != nil {
		return nil, fmt.Errorf("settings.json from matrix.yaml settings: %w", err)
	}
	req.settings = settings
	return &ReleaseBuilder{b: b, req: req, renders: renders, signer: s, built: map[string]*Result{}}, nil
}

// Build builds the planned entry e and pushes it to repo by digest only.
func (p *ReleaseBuilder) Build(ctx context.Context, e release.Entry, repo name.Repository) (name.Digest, error) {
	rendered, ok := p.renders.Rendered(e.InputsDigest)
	if !ok {
		return name.Digest{}, fmt.Errorf("%s: inputs %s were not rendered by this plan", e.Name, e.InputsDigest)
	}
	req := p.req
	req.Rendered, req.Set = rendered, nil
	req.Publish.Repo = repo.Name()
	req.Publish.Push, req.Publish.NoTags = true, true
	req.Sign.Signer, req.Sign.LoadSigner = nil, nil
	res, err := Run(ctx, p.b, req)
	if err != nil {
		return name.Digest{}, err
	}
	p.mu.Lock()
	p.built[res.Index] = res
	p.mu.Unlock()
	return repo.Digest(res.Index), nil
}

// Sign signs the image Build pushed as ref, with its attestations.
func (p *ReleaseBuilder) Sign(ctx context.Context, ref name.Digest) error {
	if p.signer == nil {
		return fmt.Errorf("no signer")
	}
	p.mu.Lock()
	res := p.built[ref.DigestStr()]
	p.mu.Unlock()
	if res == nil {
		return fmt.Errorf("%s was not built by this run; only a fresh build is signed with its SBOM and provenance", ref)
	}
	return res.sign(ctx, p.signer)
}

// Result returns what Build produced for the index digest d, if anything.
func (p *ReleaseBuilder) Result(d string) *Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.built[d]
}
