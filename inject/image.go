package inject

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/regauth"
)

// DefaultRepository is where the images are published (matrix.yaml
// image.repositories[0]; a test checks they agree).
const DefaultRepository = "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger"

// DefaultTagTemplate is matrix.yaml's floating tag for one Ray version:
// the newest verified build for it (a test checks matrix.yaml still has it).
const DefaultTagTemplate = "ray{{.Ray}}"

// MinRay is the first Ray release with the debugpy-based debugger.
const MinRay = "2.39.0"

var rayVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// RayVersionOf reads X.Y.Z from a rayVersion value or a Ray image tag
// (rayproject/ray:2.46.0-py312-gpu); "" when there is none.
func RayVersionOf(s string) string {
	m := rayVersionRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2] + "." + m[3]
}

// rayVersionOfImage is the Ray version in an image reference's tag.
func rayVersionOfImage(ref string) string {
	return RayVersionOf(imageTag(ref))
}

// imageTag is the tag of an image reference (name[:tag][@digest]); "" when
// it has none or ref is no image reference. go-containerregistry's
// name.Digest keeps no tag, so the digest is cut off first.
func imageTag(ref string) string {
	if d, err := name.NewDigest(ref); err == nil {
		ref = strings.TrimSuffix(ref, "@"+d.DigestStr())
	}
	t, err := name.NewTag(ref, name.WithDefaultTag(""))
	if err != nil {
		return ""
	}
	return t.TagStr()
}

// DefaultImage is the published image for a Ray version X.Y.Z, by its
// floating Ray line tag, from repo (DefaultRepository when empty).
func DefaultImage(repo, ray string) (string, error) {
	if repo == "" {
		repo = DefaultRepository
	}
	v := RayVersionOf(ray)
	if v == "" || v != ray {
		return "", fmt.Errorf("ray version %q: expected X.Y.Z", ray)
	}
	minor := v[:strings.LastIndex(v, ".")]
	tag, err := matrix.Tag{Template: DefaultTagTemplate}.Render(matrix.TagData{Ray: v, RayMinor: minor})
	if err != nil {
		return "", err
	}
	return repo + ":" + tag, nil
}

// olderThan reports whether version a is older than b by PEP 440.
func olderThan(a, b string) bool { return pep440.Compare(a, b) < 0 }

// RegistryResolver pins a tag to the digest the registry reports, with the
// docker config credentials (DOCKER_CONFIG, ~/.docker/config.json).
type RegistryResolver struct {
	Timeout time.Duration // per image; default 30s
	Options []remote.Option
	Name    []name.Option
}

// Resolve returns repo:tag@sha256:... (a reference that already has a
// digest is returned as it is).
func (r RegistryResolver) Resolve(ctx context.Context, ref string) (string, error) {
	parsed, err := name.ParseReference(ref, r.Name...)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", ref, err)
	}
	if _, ok := parsed.(name.Digest); ok {
		return ref, nil
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := regauth.RemoteOptions(ctx, r.Options...)
	desc, err := remote.Head(parsed, opts...)
	if err != nil {
		// Some registries answer HEAD badly; GET is what pulls do.
		got, gerr := remote.Get(parsed, opts...)
		if gerr != nil {
			return "", fmt.Errorf("resolving %s to a digest: %w", ref, gerr)
		}
		return ref + "@" + got.Digest.String(), nil
	}
	return ref + "@" + desc.Digest.String(), nil
}
