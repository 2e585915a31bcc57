package resolve

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/matrix"
)

// Request asks for one set. Ray is required; the rest narrow the choice.
type Request struct {
	// Ray is the exact Ray version, e.g. 2.46.0.
	Ray string `json:"ray"`
	// CodeServer pins code-server; empty means the newest compatible.
	CodeServer string `json:"codeServer,omitempty"`
	// Python pins the CPython minor version ("3.11"); empty applies the policy.
	Python string `json:"python,omitempty"`
	// Platforms are OCI platforms; empty means matrix.yaml platforms.
	Platforms []string `json:"platforms,omitempty"`
}

// UnknownRayError is returned for a Ray version the catalog does not know.
type UnknownRayError struct {
	Version string
	Known   []string // ascending
}

func (e *UnknownRayError) Error() string {
	known := "none (run imagectl matrix refresh)"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("unknown Ray version %q; known Ray versions: %s", e.Version, known)
}

// ConflictError says which component has no acceptable version and why each
// candidate was rejected.
type ConflictError struct {
	Component string
	Context   string // e.g. "Ray 2.46.0 on linux/amd64, linux/arm64"
	Rejected  []Rejection
	Detail    string
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no %s version fits %s", e.Component, e.Context)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	const max = 8
	for i, r := range e.Rejected {
		if i == max {
			fmt.Fprintf(&b, "; and %d more", len(e.Rejected)-max)
			break
		}
		fmt.Fprintf(&b, "; %s %s", r.Version, r.Reason)
	}
	return b.String()
}

// resolver resolves one request. It only reads cat: candidates are walked
// newest first through sorted copies of the lists it needs (never a copy of
// the catalog), so the result does not depend on the catalog's order and
// the caller's catalog is untouched.
type resolver struct {
	cfg *matrix.Config
	cat *catalog.Catalog
	// codeServers and debugpys are cat's lists, newest first.
	codeServers []catalog.CodeServer
	debugpys    []catalog.PythonPackage
	platforms   []string
	ctx         string
}

// newResolver sorts the candidate lists of cat once; All shares one
// resolver's lists across every Ray version.
func newResolver(cfg *matrix.Config, cat *catalog.Catalog) *resolver {
	return &resolver{
		cfg:         cfg,
		cat:         cat,
		codeServers: slices.SortedStableFunc(slices.Values(cat.CodeServer), catalog.NewestCodeServerFirst),
		debugpys:    slices.SortedStableFunc(slices.Values(cat.Debugpy), catalog.NewestPythonPackageFirst),
	}
}

// forPlatforms returns a copy of r for platforms.
func (r *resolver) forPlatforms(platforms []string) *resolver {
	c := *r
	c.platforms, c.ctx = platforms, ""
	return &c
}

// Resolve picks the newest compatible set for req from cfg and cat, and
// explains the choice. It never touches the network and never modifies cat.
func Resolve(cfg *matrix.Config, cat *catalog.Catalog, req Request) (imagespec.Set, *Explanation, error) {
	return newResolver(cfg, cat).resolve(req)
}

// resolve resolves req on a copy of r whose platforms are the request's.
func (r *resolver) resolve(req Request) (imagespec.Set, *Explanation, error) {
	platforms, err := normalizePlatforms(req.Platforms, r.cfg.Platforms)
	if err != nil {
		return imagespec.Set{}, nil, err
	}
	req.Platforms = platforms
	r = r.forPlatforms(platforms)
	ex := &Explanation{Request: req}

	ray, err := r.ray(req.Ray, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	r.ctx = fmt.Sprintf("Ray %s on %s", ray.Version, strings.Join(platforms, ", "))
	rayPythons, python, err := r.python(ray, req.Python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	debugpy, err := r.debugpy(python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	cs, exts, err := r.codeServerAndExtensions(req.CodeServer, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}

	locks, err := r.pythonLocks(ray.Version, debugpy, python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}

	set := imagespec.Set{
		ToolsImage:    r.toolsImage(ex),
		PythonRuntime: r.pythonRuntime(python, ex),
		PythonLocks:   locks,
		CodeServer:    cs,
		Ray:           ray.Version,
		Python:        python,
		RayPythons:    rayPythons,
		RayExtras:     slices.Clone(r.cfg.Components.Ray.Extras),
		Debugpy:       debugpy,
		Platforms:     platforms,
		Extensions:    exts,
	}
	return set, ex, nil
}

// minorOf is the MAJOR.MINOR of a Ray version (PEP 440), or v itself.
func minorOf(v string) string {
	if m, ok := pep440.Minor(v); ok {
		return m
	}
	return v
}

func normalizePlatforms(req, def []string) ([]string, error) {
	if len(req) == 0 {
		req = def
	}
	if len(req) == 0 {
		return nil, errors.New("no platforms requested and none in matrix.yaml")
	}
	out := make([]string, 0, len(req))
	for _, p := range req {
		p = strings.TrimSpace(p)
		if !slices.Contains(imagespec.Platforms(), p) {
			return nil, fmt.Errorf("unsupported platform %q (want %s)", p, strings.Join(matrix.SupportedPlatforms(), " or "))
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
