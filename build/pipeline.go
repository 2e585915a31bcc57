package build

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
)

// Layouter fetches the extension files of a resolved set (checksummed, from
// a cache) and lays them out for one platform into dir exactly as
// code-server's --extensions-dir: <publisher>.<name>-<version>/ per
// extension and extensions.json.
type Layouter interface {
	Layout(ctx context.Context, set resolve.Set, platform, dir string) error
}

// Request is one `imagectl build`.
type Request struct {
	// Matrix and Catalog are resolved with Resolve into the set to build.
	Matrix  *matrix.Config
	Catalog *catalog.Catalog
	Resolve resolve.Request

	// Definition is the image definition; nil means dockerfiles/Dockerfile.
	Definition []byte
	Params     Params
	// Version is imagectl's version (part of the inputs digest).
	Version string
	Source  LabelSource
	// SourceDateEpoch fixes every timestamp in the image.
	SourceDateEpoch time.Time

	Extensions Layouter

	// Repo is the image repository (registry/name). With Push the image is
	// pushed there by digest and tagged with the set's tags; otherwise an
	// OCI archive is written to DistDir.
	Repo    string
	Push    bool
	DistDir string
	// Insecure allows plain HTTP to a registry other than localhost.
	Insecure bool

	Provenance bool
	SBOM       bool
	CacheFrom  []string
	CacheTo    []string

	// Signer, if set, signs the pushed index and every platform manifest.
	Signer *sign.Signer

	// WorkDir holds the build contexts; empty means a temporary directory
	// removed afterwards.
	WorkDir string

	// Progress receives BuildKit's progress display in ProgressMode (auto,
	// tty, plain, quiet, rawjson).
	Progress     io.Writer
	ProgressMode string
}

// Result is what `imagectl build --output json` prints.
type Result struct {
	// Ref is repo@index-digest (pushed) or the archive path.
	Ref          string           `json:"ref"`
	Index        string           `json:"index"`
	InputsDigest string           `json:"inputsDigest"`
	Set          resolve.Set      `json:"set"`
	Platforms    []PlatformOutput `json:"platforms"`
	Tags         []string         `json:"tags,omitempty"`
	Archive      string           `json:"archive,omitempty"`
	BytesPushed  int64            `json:"bytesPushed"`
	// EmulatedSteps sums the platforms' emulated RUN steps.
	EmulatedSteps int          `json:"emulatedSteps"`
	Signed        *sign.Result `json:"signed,omitempty"`
	Duration      Duration     `json:"duration"`
}

// PlatformOutput is one platform's manifest and how it was built.
type PlatformOutput struct {
	Digest string `json:"digest"`
	PlatformResult
}

// Run builds one image from start to finish:
//
//  1. resolve the set (versions, base digests, extension files, tags);
//  2. render the definition and compute the inputs digest;
//  3. per platform: lay out the extensions and write the build contexts;
//  4. solve every platform (concurrently) with b;
//  5. push the multi-platform index and tags, or write the OCI archive;
//  6. sign the index and every platform manifest.
func Run(ctx context.Context, b Interface, req Request) (*Result, error) {
	start := time.Now()

	// 1. Resolve.
	set, _, err := resolve.Resolve(req.Matrix, req.Catalog, req.Resolve)
	if err != nil {
		return nil, fmt.Errorf("resolving: %w", err)
	}
	if len(set.Tags) == 0 {
		if set.Tags, err = resolve.RenderTags(req.Matrix, set); err != nil {
			return nil, fmt.Errorf("rendering tags: %w", err)
		}
	}
	return BuildSet(ctx, b, set, req, start)
}

// BuildSet is Run after resolution: it builds, publishes and signs set.
func BuildSet(ctx context.Context, b Interface, set resolve.Set, req Request, start time.Time) (*Result, error) {
	var err error
	for _, p := range set.Platforms {
		if set.CodeServer.Platforms[p] == "" {
			return nil, fmt.Errorf("resolved set has no base digest for %s (catalog entry for code-server %s)", p, set.CodeServer.Version)
		}
	}

	// 2. Render and digest.
	def := req.Definition
	if def == nil {
		def = defaultDefinition()
	}
	rendered, err := Render(def, req.Params)
	if err != nil {
		return nil, err
	}
	inputs := InputsDigest(set, rendered, req.Version)
	var settingsIn map[string]any
	if req.Matrix != nil {
		settingsIn = req.Matrix.Settings
	}
	settings, err := settingsJSON(settingsIn)
	if err != nil {
		return nil, err
	}

	// 3. Contexts per platform.
	work := req.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "imagectl-build-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	repo, err := name.NewRepository(req.Repo, nameOpts(req.Insecure)...)
	if err != nil {
		return nil, fmt.Errorf("image repository %q: %w", req.Repo, err)
	}
	baseRepo, err := baseRepository(set.CodeServer.Base)
	if err != nil {
		return nil, err
	}
	specs := make([]Spec, 0, len(set.Platforms))
	for _, p := range set.Platforms {
		dir := filepath.Join(work, strings.ReplaceAll(p, "/", "-"))
		extDir := filepath.Join(dir, "layout")
		if err := os.MkdirAll(extDir, 0o755); err != nil {
			return nil, err
		}
		if req.Extensions != nil {
			if err := req.Extensions.Layout(ctx, set, p, extDir); err != nil {
				return nil, fmt.Errorf("laying out extensions for %s: %w", p, err)
			}
		} else if len(set.Extensions) > 0 {
			return nil, fmt.Errorf("the set has %d extensions but no extension layouter was given", len(set.Extensions))
		}
		ctxs, err := PrepareContexts(filepath.Join(dir, "contexts"), rendered, Requirements(set), extDir, settings, req.SourceDateEpoch)
		if err != nil {
			return nil, err
		}
		spec := Spec{
			Platform: p,
			Contexts: ctxs,
			BuildArgs: map[string]string{
				"BASE_IMAGE":     baseRepo + "@" + set.CodeServer.Platforms[p],
				"PYTHON_VERSION": set.Python,
			},
			Labels:          Labels(set, p, inputs, req.SourceDateEpoch, req.Source),
			SourceDateEpoch: req.SourceDateEpoch,
			Repo:            repo.Name(),
			Push:            req.Push,
			Provenance:      req.Provenance && req.Push,
			SBOM:            req.SBOM,
			CacheFrom:       req.CacheFrom,
			CacheTo:         req.CacheTo,
		}
		if !req.Push {
			spec.Archive = filepath.Join(dir, "oci.tar")
		}
		specs = append(specs, spec)
	}

	// 4. Solve.
	results, err := solveAll(ctx, b, specs, req.Progress, req.ProgressMode)
	if err != nil {
		return nil, err
	}

	res := &Result{InputsDigest: inputs, Set: set}
	ropts := []remote.Option{remote.WithContext(ctx)}
	// 5. Publish.
	if req.Push {
		h, plats, err := publish(ctx, repo, results, set.Tags, ropts)
		if err != nil {
			return nil, err
		}
		res.Index = h.String()
		res.Ref = repo.Digest(h.String()).String()
		res.Tags = set.Tags
		for _, r := range results {
			res.Platforms = append(res.Platforms, PlatformOutput{Digest: plats[r.Platform].Digest.String(), PlatformResult: *r})
		}
	} else {
		dist := req.DistDir
		if dist == "" {
			dist = "dist"
		}
		archive := filepath.Join(dist, archiveName(repo, set))
		parts := make([]string, len(specs))
		for i, s := range specs {
			parts[i] = s.Archive
		}
		tag := ""
		if len(set.Tags) > 0 {
			tag = set.Tags[0]
		}
		h, plats, err := writeArchive(archive, parts, results, repo.Name(), tag)
		if err != nil {
			return nil, err
		}
		res.Index = h.String()
		res.Ref = archive
		res.Archive = archive
		for _, r := range results {
			res.Platforms = append(res.Platforms, PlatformOutput{Digest: plats[r.Platform].Digest.String(), PlatformResult: *r})
		}
	}
	for _, p := range res.Platforms {
		res.BytesPushed += p.BytesPushed
		res.EmulatedSteps += p.EmulatedSteps
	}

	// 6. Sign.
	if req.Signer != nil {
		if !req.Push {
			return res, fmt.Errorf("signing needs a pushed image (--push)")
		}
		sres, err := sign.Image(ctx, res.Ref, req.Signer, sign.WithNameOptions(nameOpts(req.Insecure)...))
		if err != nil {
			return res, fmt.Errorf("signing %s: %w", res.Ref, err)
		}
		res.Signed = sres
	}
	res.Duration = Duration(time.Since(start))
	return res, nil
}

// solveAll builds every spec concurrently, showing one progress display for
// all of them.
func solveAll(ctx context.Context, b Interface, specs []Spec, out io.Writer, mode string) ([]*PlatformResult, error) {
	if out == nil {
		out = io.Discard
		mode = string(progressui.QuietMode)
	}
	if mode == "" {
		mode = string(progressui.AutoMode)
	}
	d, err := progressui.NewDisplay(out, progressui.DisplayMode(mode))
	if err != nil {
		return nil, fmt.Errorf("progress display %q: %w", mode, err)
	}
	status := make(chan *client.SolveStatus)
	displayDone := make(chan struct{})
	go func() {
		defer close(displayDone)
		// The display's own error is the solve's error, reported below.
		d.UpdateFrom(context.WithoutCancel(ctx), status) //nolint:errcheck
	}()
	results := make([]*PlatformResult, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := specs[i]
			s.Status = status
			results[i], errs[i] = b.Build(ctx, s)
		}()
	}
	wg.Wait()
	close(status)
	<-displayDone
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

func nameOpts(insecure bool) []name.Option {
	if insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// baseRepository strips the tag from the set's base reference.
func baseRepository(base string) (string, error) {
	ref, err := name.ParseReference(base)
	if err != nil {
		return "", fmt.Errorf("base image %q: %w", base, err)
	}
	return ref.Context().Name(), nil
}

// settingsJSON renders matrix.yaml's settings as code-server's
// settings.json (keys sorted).
func settingsJSON(s map[string]any) ([]byte, error) {
	if s == nil {
		s = map[string]any{}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding settings from matrix.yaml: %w", err)
	}
	return append(b, '\n'), nil
}

func archiveName(repo name.Repository, set resolve.Set) string {
	base := filepath.Base(repo.RepositoryStr())
	tag := "latest"
	if len(set.Tags) > 0 {
		tag = set.Tags[0]
	}
	return base + "-" + tag + ".oci.tar"
}
