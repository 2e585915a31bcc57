package inject

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/regauth"
)

// DefaultRepository is where the images are published (matrix.yaml
// image.repositories[0]; a test checks they agree).
const DefaultRepository = "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger"

// DefaultTagTemplate is matrix.yaml's floating tag for one Ray version:
// the newest verified build for it (a test checks matrix.yaml still has it).
// matrix.yaml builds the newest patch of each Ray minor only, so this tag
// exists for a patch only if it was the newest when a build ran.
const DefaultTagTemplate = "ray{{.Ray}}"

// MinorTagTemplate is matrix.yaml's floating tag for one Ray minor: the
// newest verified build of any patch of it (a test checks matrix.yaml
// still has it).
const MinorTagTemplate = "ray{{.RayMinor}}"

// TagLister lists the tags of an image repository.
type TagLister interface {
	ListTags(ctx context.Context, repo string) ([]string, error)
}

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

// DefaultImage is the image for a Ray version X.Y.Z by its floating patch
// tag (ray2.46.0), from repo (DefaultRepository when empty).
func DefaultImage(repo, ray string) (string, error) {
	return imageByTemplate(repo, ray, DefaultTagTemplate)
}

// MinorImage is the image for the Ray minor of X.Y.Z by its floating minor
// tag (ray2.46), from repo (DefaultRepository when empty).
func MinorImage(repo, ray string) (string, error) {
	return imageByTemplate(repo, ray, MinorTagTemplate)
}

func imageByTemplate(repo, ray, template string) (string, error) {
	if repo == "" {
		repo = DefaultRepository
	}
	v := RayVersionOf(ray)
	if v == "" || v != ray {
		return "", fmt.Errorf("ray version %q: expected X.Y.Z", ray)
	}
	tag, err := matrix.Tag{Template: template}.Render(matrix.TagData{Ray: v, RayMinor: rayMinor(v)})
	if err != nil {
		return "", err
	}
	return repo + ":" + tag, nil
}

// rayMinor is X.Y of X.Y.Z.
func rayMinor(v string) string { return v[:strings.LastIndex(v, ".")] }

// patchTagRE matches the floating patch tags DefaultTagTemplate renders.
var patchTagRE = regexp.MustCompile(`^ray(\d+)\.(\d+)\.(\d+)$`)

// chooseImage is the published image for Ray version ray from repo, given
// the repository's tags: the build for that exact patch when there is one,
// else the newest build for its minor; why says which and why. An error
// when no build for the minor is published.
func chooseImage(repo, ray string, tags []string) (image, why string, err error) {
	exact, err := DefaultImage(repo, ray)
	if err != nil {
		return "", "", err
	}
	minor := rayMinor(ray)
	best, bestPatch := "", -1
	minors := map[string]bool{}
	for _, t := range tags {
		m := patchTagRE.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		minors[m[1]+"."+m[2]] = true
		if m[1]+"."+m[2] != minor {
			continue
		}
		if "ray"+ray == t {
			return exact, fmt.Sprintf("the published build for Ray %s", ray), nil
		}
		if p, err := strconv.Atoi(m[3]); err == nil && p > bestPatch {
			best, bestPatch = t, p
		}
	}
	if best != "" {
		return repo + ":" + best, fmt.Sprintf("no build for Ray %s is published in %s; %s is the newest build for Ray %s", ray, repo, best, minor), nil
	}
	var have []string
	for m := range minors {
		have = append(have, m)
	}
	slices.SortFunc(have, func(a, b string) int { return pep440.Compare(b, a) })
	if len(have) > 5 {
		have = have[:5]
	}
	return "", "", fmt.Errorf("no build for Ray %s (no tag ray%s.*) is published in %s (newest Ray minors there: %s): pass the sidecar image (--image), or use a Ray version it has", minor, minor, repo, strings.Join(have, ", "))
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

// ListTags lists the tags of repo with the docker config credentials,
// bounded by Timeout.
func (r RegistryResolver) ListTags(ctx context.Context, repo string) ([]string, error) {
	parsed, err := name.NewRepository(repo, r.Name...)
	if err != nil {
		return nil, fmt.Errorf("repository %q: %w", repo, err)
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tags, err := remote.List(parsed, regauth.RemoteOptions(ctx, r.Options...)...)
	if err != nil {
		if notFound(err) {
			return nil, fmt.Errorf("listing the tags of %s: %w: %w", repo, ErrImageNotFound, err)
		}
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	return tags, nil
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
			if notFound(gerr) {
				return "", fmt.Errorf("resolving %s to a digest: %w: %w", ref, ErrImageNotFound, gerr)
			}
			return "", fmt.Errorf("resolving %s to a digest: %w", ref, gerr)
		}
		return ref + "@" + got.Digest.String(), nil
	}
	return ref + "@" + desc.Digest.String(), nil
}

// ErrImageNotFound is wrapped by a Resolver's error when the registry says
// the image does not exist.
var ErrImageNotFound = errors.New("the registry has no such image")

// notFound reports whether the registry answered that the repository or
// the manifest does not exist (404, NAME_UNKNOWN, MANIFEST_UNKNOWN).
func notFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.NameUnknownErrorCode || d.Code == transport.ManifestUnknownErrorCode {
			return true
		}
	}
	return false
}
