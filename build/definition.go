package build

import (
	"fmt"
	"maps"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/dockerfiles"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// Overrides replace matrix.yaml's build: section (and upstreams.packageIndex)
// for one run; an empty field keeps matrix.yaml's value. The command line maps
// its flags onto them, identically for build, plan and release.
type Overrides struct {
	// ToolsImage replaces the set's tools image (matrix.yaml build.toolsImage
	// pinned by the catalog) as given: with a digest it is pinned, without
	// one the build uses whatever the tag names. Equal to matrix.yaml's
	// build.toolsImage it is no override (the catalog's pin stays).
	ToolsImage    string
	PackageIndex  string
	PythonRuntime string
	// StandaloneURL and StandaloneSHA256 (keys x86_64, aarch64) replace the
	// python-build-standalone runtime the set carries (catalog.json's lock
	// of matrix.yaml build.standalone), whatever Python it resolves to.
	StandaloneURL    string
	StandaloneSHA256 map[string]string
	// Definition replaces dockerfiles/Dockerfile (tests, experiments).
	Definition []byte
}

// Definition turns one matrix.yaml (plus overrides and the imagectl version)
// into the rendered image definition and inputs digest of any of its sets.
// It is the single place where the definition parameters are decided: build,
// plan and release all use it, so they agree on every inputs digest.
type Definition struct {
	cfg     *matrix.Config
	o       Overrides
	version string
	source  []byte
}

// Rendered is the definition rendered for one set.
type Rendered struct {
	// Set is the set as built (Definition.Set): its ToolsImage is the
	// reference actually rendered. Its lock goes into the inputs digest and
	// the image labels.
	Set imagespec.Set
	// Params are what the definition was rendered with.
	Params Params
	// Definition is the rendered definition (its bytes are hashed).
	Definition []byte
	// Inputs is InputsDigest(set, Definition, version): the LabelInputs value.
	Inputs string
}

// NewDefinition returns the Definition of cfg with o applied; version is
// imagectl's version (part of every inputs digest).
func NewDefinition(cfg *matrix.Config, o Overrides, version string) (*Definition, error) {
	if cfg == nil {
		return nil, fmt.Errorf("definition: no matrix")
	}
	if o.PythonRuntime != "" && o.PythonRuntime != imagespec.PythonRuntimeBase && o.PythonRuntime != imagespec.PythonRuntimeStandalone {
		return nil, fmt.Errorf("python runtime override %q: want %q or %q", o.PythonRuntime, imagespec.PythonRuntimeBase, imagespec.PythonRuntimeStandalone)
	}
	src := o.Definition
	if src == nil {
		src = dockerfiles.Dockerfile()
	}
	return &Definition{cfg: cfg, o: o, version: version, source: src}, nil
}

// Set returns set as it is built: its ToolsImage is the tools image
// override when one is given (and differs from matrix.yaml's
// build.toolsImage), else the set's own (pinned by resolve from the
// catalog), else matrix.yaml's. Build, plan and release all build and hash
// this set, so the lock label names the tools image that was used.
func (d *Definition) Set(set imagespec.Set) imagespec.Set {
	if o := d.o.ToolsImage; o != "" && o != d.cfg.Build.ToolsImage {
		set.ToolsImage = o
	}
	if set.ToolsImage == "" {
		set.ToolsImage = d.cfg.Build.ToolsImage
	}
	return set
}

// ToolsImagePinned reports whether a tools image reference names its image
// by digest (name[:tag]@sha256:...), so that the image cannot change under
// the same inputs digest.
func ToolsImagePinned(ref string) bool {
	d, err := name.NewDigest(ref)
	return err == nil && strings.HasPrefix(d.DigestStr(), "sha256:")
}

// Params returns the render parameters for set: the set's tools image
// (Set) and extension ids, and matrix.yaml's build section and
// upstreams.packageIndex, each replaced by its override when given.
func (d *Definition) Params(set imagespec.Set) (Params, error) {
	b := d.cfg.Build
	p := Params{
		ToolsImage:    d.Set(set).ToolsImage,
		PackageIndex:  firstNonEmpty(d.o.PackageIndex, d.cfg.Upstreams.PackageIndex),
		PythonRuntime: firstNonEmpty(d.o.PythonRuntime, b.PythonRuntime),
	}
	for _, e := range set.Extensions {
		p.Extensions = append(p.Extensions, e.ID)
	}
	if p.PythonRuntime != imagespec.PythonRuntimeStandalone {
		return p, nil
	}
	if d.o.StandaloneURL != "" || len(d.o.StandaloneSHA256) > 0 {
		if d.o.StandaloneURL == "" || len(d.o.StandaloneSHA256) == 0 {
			return Params{}, fmt.Errorf("python-build-standalone override: give both the URL and the sha256 of x86_64 and aarch64")
		}
		p.StandaloneURL, p.StandaloneSHA256 = d.o.StandaloneURL, maps.Clone(d.o.StandaloneSHA256)
		return p, nil
	}
	rt := set.PythonRuntime
	if rt == nil {
		st := b.Standalone
		return Params{}, fmt.Errorf("no python-build-standalone runtime for Python %s (the set of Ray %s resolves to it): catalog.json records none for matrix.yaml build.standalone (%s release %s, %s); run imagectl matrix refresh to lock it, or give --python-standalone-url and --python-standalone-sha256, or set build.pythonRuntime: base for a base image that ships python%s",
			set.Python, set.Ray, st.Repository, st.Release, st.Flavor, set.Python)
	}
	if !strings.HasPrefix(rt.Version, set.Python+".") {
		return Params{}, fmt.Errorf("the set's python-build-standalone runtime is CPython %s, not Python %s", rt.Version, set.Python)
	}
	u, sums, err := standaloneParams(rt)
	if err != nil {
		return Params{}, fmt.Errorf("python-build-standalone runtime %s of the set: %w", rt.Version, err)
	}
	p.StandaloneURL, p.StandaloneSHA256 = u, sums
	return p, nil
}

// standaloneParams turns the set's runtime (one URL per OCI platform) into
// the definition's {arch} URL and per-architecture sums. The two URLs must
// differ only in the architecture name, as python-build-standalone names
// its tarballs.
func standaloneParams(rt *imagespec.PythonRuntime) (string, map[string]string, error) {
	amd, arm := rt.Files["linux/amd64"], rt.Files["linux/arm64"]
	if amd.URL == "" || arm.URL == "" {
		return "", nil, fmt.Errorf("want a tarball for linux/amd64 and linux/arm64")
	}
	tmpl := strings.ReplaceAll(amd.URL, "x86_64", "{arch}")
	if !strings.Contains(tmpl, "{arch}") || strings.ReplaceAll(tmpl, "{arch}", "aarch64") != arm.URL {
		return "", nil, fmt.Errorf("tarball URLs %s and %s do not differ only by x86_64/aarch64", amd.URL, arm.URL)
	}
	return tmpl, map[string]string{"x86_64": amd.SHA256, "aarch64": arm.SHA256}, nil
}

// Render renders the definition for set (as Set returns it) and computes
// its inputs digest.
func (d *Definition) Render(set imagespec.Set) (*Rendered, error) {
	set = d.Set(set)
	p, err := d.Params(set)
	if err != nil {
		return nil, err
	}
	out, err := Render(d.source, p)
	if err != nil {
		return nil, err
	}
	return &Rendered{Set: set, Params: p, Definition: out, Inputs: InputsDigest(set, out, d.version)}, nil
}

// InputsDigest is the LabelInputs value `imagectl build` writes for set.
func (d *Definition) InputsDigest(set imagespec.Set) (string, error) {
	r, err := d.Render(set)
	if err != nil {
		return "", err
	}
	return r.Inputs, nil
}

// Tags renders matrix.yaml's tag templates for set (resolve.RenderTags with
// set's inputs digest).
func (d *Definition) Tags(set imagespec.Set) (imagespec.Tags, error) {
	in, err := d.InputsDigest(set)
	if err != nil {
		return nil, err
	}
	return resolve.RenderTags(d.cfg, set, in)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
