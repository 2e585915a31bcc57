package builder

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/sign"
)

var (
	_ release.Builder = (*Builder)(nil)
	_ release.Signer  = (*Builder)(nil)
)

// Builder is imagectl release's builder and signer (release.Builder and
// release.Signer): Build runs the same pipeline as imagectl build for
// a planned entry, from the render its plan made, and pushes the index by
// digest with no tag and no signature; Sign then signs what Build pushed
// (the index and every platform manifest) and attaches its SBOM and
// provenance, exactly as imagectl build --sign does. Signing happens once,
// in release's sign step; the SBOM scans run beside Build's push, as
// imagectl build --sign's do, and Sign attaches them. Close releases what
// an image built but never signed holds.
type Builder struct {
	b       build.Interface
	req     pipeline.Request
	renders *pipeline.Renders
	signer  *sign.Signer

	mu    sync.Mutex
	built map[string]*pipeline.Signing // the sign stage of each index built, by digest
}

// New returns a Builder building with b the sets
// renders rendered. req carries everything but the set and repository
// (Matrix, Extensions, Revision, SourceDateEpoch, Solve and Sign's SBOM
// settings); its set, repository and push settings are set by Build.
// settings.json is computed here, once for every entry.
func New(b build.Interface, req pipeline.Request, renders *pipeline.Renders, s *sign.Signer) (*Builder, error) {
	settings, err := extensions.SettingsJSON(imagespec.ImageSettings(req.Matrix.Settings))
	if err != nil {
		return nil, fmt.Errorf("settings.json from matrix.yaml settings: %w", err)
	}
	req.Settings = settings
	return &Builder{b: b, req: req, renders: renders, signer: s, built: map[string]*pipeline.Signing{}}, nil
}

// Build builds the planned entry e and pushes it to repo by digest only.
func (p *Builder) Build(ctx context.Context, e release.Entry, repo name.Repository) (name.Digest, error) {
	rendered, ok := p.renders.Rendered(e.InputsDigest)
	if !ok {
		return name.Digest{}, fmt.Errorf("%s: inputs %s were not rendered by this plan", e.Name, e.InputsDigest)
	}
	req := p.req
	req.Rendered, req.Set = rendered, nil
	req.Publish.Repo = repo.Name()
	req.Publish.Push, req.Publish.NoTags = true, true
	req.Sign.Signer, req.Sign.LoadSigner = nil, nil
	res, sg, err := pipeline.Build(ctx, p.b, req)
	if err != nil {
		return name.Digest{}, err
	}
	if sg != nil {
		p.mu.Lock()
		p.built[res.Index].Close() // an earlier build of the same image, never signed
		p.built[res.Index] = sg
		p.mu.Unlock()
	}
	return repo.Digest(res.Index), nil
}

// Sign signs the image Build pushed as ref, with its attestations.
func (p *Builder) Sign(ctx context.Context, ref name.Digest) error {
	if p.signer == nil {
		return fmt.Errorf("no signer")
	}
	p.mu.Lock()
	sg := p.built[ref.DigestStr()]
	delete(p.built, ref.DigestStr())
	p.mu.Unlock()
	if sg == nil {
		return fmt.Errorf("%s was not built by this run (or was signed already); only a fresh build is signed with its SBOM and provenance", ref)
	}
	return sg.Sign(ctx, p.signer)
}

// Close releases what the images built but not signed hold for their
// signing (the SBOM scans Build started beside each push, the base layers
// they read, the build's work directory): a release that stopped between
// an entry's build and its signature.
func (p *Builder) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for d, sg := range p.built {
		sg.Close()
		delete(p.built, d)
	}
}
