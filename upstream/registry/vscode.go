package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/vscode/engine"
)

// VSCodePackageJSON is the package.json of the VS Code that code-server
// bundles, where linuxserver/code-server unpacks code-server's release
// tarball (/app/code-server). Its "version" is what code-server --version
// prints after "with Code" (code-server's src/node/constants.ts).
const VSCodePackageJSON = "/app/code-server/lib/vscode/package.json"

// maxPackageJSON bounds the package.json read (about 10 KiB in a release).
const maxPackageJSON = 1 << 20

// DefaultImageReadTimeout bounds the reading of one tag's images.
const DefaultImageReadTimeout = 5 * time.Minute

// vscode sets cs.VSCode (and VSCodeFrom) from the images of every platform
// (imgs), from the known snapshot, or from the overrides and rule, and
// reports whether cs is usable. Only a cancelled ctx is an error.
func (s *Source) vscode(ctx context.Context, cs *catalog.CodeServer, imgs map[string]name.Digest) (bool, error) {
	for _, k := range s.known {
		if k.Version == cs.Version && k.VSCodeFrom == catalog.VSCodeFromImage && k.VSCode != "" &&
			k.IndexDigest == cs.IndexDigest && len(k.Platforms) > 0 && maps.Equal(k.Platforms, cs.Platforms) {
			cs.VSCode, cs.VSCodeFrom = k.VSCode, catalog.VSCodeFromImage
			return true, nil
		}
	}
	v, err := s.vscodeFromImages(ctx, imgs)
	if ctx.Err() != nil {
		return false, fmt.Errorf("reading the VS Code version of %s:%s: %w", s.repo, cs.Tag, context.Cause(ctx))
	}
	var disagree *disagreeError
	switch {
	case err == nil:
		cs.VSCode, cs.VSCodeFrom = v, catalog.VSCodeFromImage
		return true, nil
	case errors.As(err, &disagree):
		s.warnf("code-server %s (%s:%s) left out: %v", cs.Version, s.repo, cs.Tag, err)
		return false, nil
	}
	fallback, ferr := catalog.VSCodeFor(cs.Version, s.overrides)
	if ferr != nil {
		s.warnf("code-server %s (%s:%s) left out: VS Code version not read from the image (%v), and %v", cs.Version, s.repo, cs.Tag, err, ferr)
		return false, nil
	}
	s.warnf("code-server %s (%s:%s): VS Code version not read from the image (%v); using %s from base.vscodeOverrides or the 4.X.Y -> 1.X.Y rule", cs.Version, s.repo, cs.Tag, err, fallback)
	cs.VSCode = fallback
	return true, nil
}

// disagreeError is the platforms of one tag bundling different VS Code
// versions.
type disagreeError struct{ versions map[string]string }

func (e *disagreeError) Error() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(e.versions)) {
		parts = append(parts, p+" "+e.versions[p])
	}
	return "its platforms bundle different VS Code versions (" + strings.Join(parts, ", ") + ")"
}

// vscodeFromImages reads the VS Code version of every platform's image,
// within the read timeout, and returns the one they agree on.
func (s *Source) vscodeFromImages(ctx context.Context, imgs map[string]name.Digest) (string, error) {
	if len(imgs) == 0 {
		return "", errors.New("the tag has no linux image")
	}
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout)
	defer cancel()
	opts := append([]remote.Option{remote.WithContext(ctx)}, s.opts...)
	got := map[string]string{}
	for _, p := range slices.Sorted(maps.Keys(imgs)) {
		v, err := vscodeOfImage(ctx, imgs[p], opts)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("%s: not read within %s: %w", p, s.readTimeout, err)
			}
			return "", fmt.Errorf("%s: %w", p, err)
		}
		got[p] = v
	}
	var first string
	for _, v := range got {
		if first == "" {
			first = v
		} else if v != first {
			return "", &disagreeError{versions: got}
		}
	}
	return first, nil
}

// vscodeOfImage reads VSCodePackageJSON's "version" from the image ref.
func vscodeOfImage(ctx context.Context, ref name.Digest, opts []remote.Option) (string, error) {
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", ref, err)
	}
	b, err := readImageFile(ctx, img, VSCodePackageJSON, maxPackageJSON)
	if err != nil {
		return "", fmt.Errorf("%s in %s: %w", VSCodePackageJSON, ref, err)
	}
	var pj struct {
		Version *string `json:"version"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return "", fmt.Errorf("%s in %s: %w", VSCodePackageJSON, ref, err)
	}
	if pj.Version == nil {
		return "", fmt.Errorf("%s in %s: no \"version\" field", VSCodePackageJSON, ref)
	}
	v, err := engine.ParseVersion(*pj.Version)
	if err != nil {
		return "", fmt.Errorf("%s in %s: %w", VSCodePackageJSON, ref, err)
	}
	if v.String() != *pj.Version {
		return "", fmt.Errorf("%s in %s: version %.40q: want MAJOR.MINOR.PATCH", VSCodePackageJSON, ref, *pj.Version)
	}
	return v.String(), nil
}

func (s *Source) warnf(format string, args ...any) {
	fmt.Fprintf(safetext.Writer(s.warn), "warning: "+format+"\n", args...)
}
