package pipeline

import (
	"sync"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
)

// Renders renders each set once per command and keeps the render by its
// inputs digest: plan's digests (it is release's InputsDigester), the build
// of each entry (imagectl release, through Build) and release's inputs
// check (the digest carried by the plan's entry) all use that one render.
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
