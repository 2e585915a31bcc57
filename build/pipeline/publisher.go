package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sign"
)

// Publisher is imagectl release's builder and signer (release.Builder and
// release.Signer): Build runs the same pipeline as imagectl build for the
// planned set and pushes the index by digest with no tag and no signature;
// Sign then signs what Build pushed (the index and every platform manifest)
// and attaches its SBOM and provenance, exactly as imagectl build --sign
// does. Signing happens once, in release's sign step.
type Publisher struct {
	b      build.Interface
	req    Request
	signer *sign.Signer

	mu    sync.Mutex
	built map[string]*Result // by index digest
}

// NewPublisher returns a Publisher building with b. req carries everything
// but the set and repository (Matrix, Definition, ExtensionCache, Sources,
// Revision, SourceDateEpoch, Provenance, cache and progress settings); its
// Set, Repo, Push, NoTags and Signer are set by Build.
func NewPublisher(b build.Interface, req Request, s *sign.Signer) *Publisher {
	return &Publisher{b: b, req: req, signer: s, built: map[string]*Result{}}
}

// Build builds set and pushes it to repo by digest only.
func (p *Publisher) Build(ctx context.Context, set imagespec.Set, repo name.Repository) (name.Digest, error) {
	req := p.req
	req.Set = &set
	req.Repo = repo.Name()
	req.Push, req.NoTags, req.Signer, req.LoadSigner = true, true, nil, nil
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
func (p *Publisher) Sign(ctx context.Context, ref name.Digest) error {
	if p.signer == nil {
		return fmt.Errorf("no signer")
	}
	p.mu.Lock()
	res := p.built[ref.DigestStr()]
	p.mu.Unlock()
	if res == nil {
		return fmt.Errorf("%s was not built by this run; only a fresh build is signed with its SBOM and provenance", ref)
	}
	return res.sign(ctx, p.signer, p.req.Insecure)
}

// Result returns what Build produced for the index digest d, if anything.
func (p *Publisher) Result(d string) *Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.built[d]
}
