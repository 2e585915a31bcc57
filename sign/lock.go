package sign

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
)

// LockFromImage reads the resolved set from the lock label of the image's
// first platform manifest (or of the image itself), and the time the image
// was built at (its config's created, which the build sets to
// SOURCE_DATE_EPOCH; zero when the config has none), for building an SBOM
// of an image built earlier with the time imagectl build --sign gives it.
func LockFromImage(ctx context.Context, ref string, opts ...Option) (imagespec.Set, time.Time, error) {
	o := makeOptions(ctx, opts)
	o.allManifests = true
	targets, root, err := resolveTargets(ref, o)
	if err != nil {
		return imagespec.Set{}, time.Time{}, err
	}
	t := targets[0]
	if len(targets) > 1 {
		t = targets[1]
	}
	d := root.Context().Digest(t.Digest)
	img, err := remote.Image(d, o.remoteOpts...)
	if err != nil {
		return imagespec.Set{}, time.Time{}, fmt.Errorf("reading %s: %w", d, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return imagespec.Set{}, time.Time{}, fmt.Errorf("reading config of %s: %w", d, err)
	}
	raw := cf.Config.Labels[imagespec.LabelLock]
	if raw == "" {
		return imagespec.Set{}, time.Time{}, fmt.Errorf("%s has no %s label", d, imagespec.LabelLock)
	}
	set, err := imagespec.DecodeLock(raw)
	if err != nil {
		return imagespec.Set{}, time.Time{}, fmt.Errorf("label %s of %s: %w", imagespec.LabelLock, d, err)
	}
	return set, cf.Created.UTC(), nil
}

// Repository returns the repository of ref (for SBOM names).
func Repository(ref string, opts ...name.Option) (string, error) {
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return "", err
	}
	return r.Context().Name(), nil
}
