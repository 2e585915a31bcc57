package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/regauth"
)

// Source lists code-server versions from a base image repository, with
// the VS Code each bundles read from the image itself.
type Source struct {
	settings
	repo      string
	pattern   *regexp.Regexp
	overrides map[string]string
}

// WithKnown (New only) gives the code-server entries of the snapshot being replaced: an
// entry whose VS Code was read from the image (VSCodeFrom image) with the
// same index and platform digests is reused without reading the image again.
func WithKnown(cs []catalog.CodeServer) Option {
	return func(s *settings) { s.known = cs }
}

// WithImageReadTimeout (New only) bounds the reading of one tag's images for their VS
// Code version (default DefaultImageReadTimeout); a tag not read in time
// falls back to the overrides, with a warning.
func WithImageReadTimeout(d time.Duration) Option {
	return func(s *settings) { s.readTimeout = d }
}

// WithWarnings (New only) sets where the warnings of VS Code fallbacks go (default
// os.Stderr).
func WithWarnings(w io.Writer) Option { return func(s *settings) { s.warn = w } }

// settings are what New and NewImages share: how to reach the registry.
type settings struct {
	opts     []remote.Option
	auth     remote.Option
	nameOpts []name.Option

	// New only: how the VS Code versions are read.
	known       []catalog.CodeServer
	readTimeout time.Duration
	warn        io.Writer
}

func newSettings(opts []Option) settings {
	s := settings{auth: remote.WithAuthFromKeychain(regauth.Keychain()), opts: []remote.Option{remote.WithTransport(regauth.Transport(nil))}, readTimeout: DefaultImageReadTimeout, warn: os.Stderr}
	for _, o := range opts {
		o(&s)
	}
	s.opts = append(s.opts, s.auth)
	return s
}

// Option configures New and NewImages.
type Option func(*settings)

// WithTransport sets the HTTP transport (tests, proxies), wrapped in
// regauth.Transport as the default one is.
func WithTransport(rt http.RoundTripper) Option {
	return func(s *settings) { s.opts = append(s.opts, remote.WithTransport(regauth.Transport(rt))) }
}

// WithInsecure allows plain HTTP to the registry.
func WithInsecure() Option {
	return func(s *settings) { s.nameOpts = append(s.nameOpts, name.Insecure) }
}

// New returns a source for repository repo (no tag) whose tags matching
// tagPattern (first group = code-server version) are code-server releases.
// The VS Code each bundles is read from its images (see CodeServers);
// overrides (matrix.yaml base.vscodeOverrides), else the 4.X.Y -> 1.X.Y
// rule, is the fallback for an image that cannot be read.
func New(repo, tagPattern string, overrides map[string]string, opts ...Option) (*Source, error) {
	re, err := regexp.Compile(tagPattern)
	if err != nil {
		return nil, fmt.Errorf("tag pattern %q: %w", tagPattern, err)
	}
	if re.NumSubexp() < 1 {
		return nil, fmt.Errorf("tag pattern %q: no group capturing the version", tagPattern)
	}
	return &Source{settings: newSettings(opts), repo: repo, pattern: re, overrides: overrides}, nil
}

// CodeServers lists the code-server versions behind matching tags for which
// keep returns true, with their digests and the VS Code each bundles. A tag
// that is not an index is recorded with its single platform.
//
// The VS Code version is the "version" of VSCodePackageJSON in the image of
// every linux platform (what code-server --version prints after "with
// Code"), recorded with VSCodeFrom image. When an image cannot be read (the
// file is missing or whited out, its JSON is bad, the registry fails or the
// read times out) the overrides, else the 4.X.Y -> 1.X.Y rule, give it, with
// a warning; a version neither gives is left out, with a warning. A tag
// whose platforms disagree is left out, with a warning: no one VS Code
// version describes it.
func (s *Source) CodeServers(ctx context.Context, keep func(version string) bool) ([]catalog.CodeServer, error) {
	repo, err := name.NewRepository(s.repo, s.nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("base image %q: %w", s.repo, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, s.opts...)
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, fmt.Errorf("listing tags of %s: %w", repo, err)
	}
	sort.Strings(tags)
	var out []catalog.CodeServer
	for _, tag := range tags {
		m := s.pattern.FindStringSubmatch(tag)
		if m == nil {
			continue
		}
		version := m[1]
		if _, err := catalog.ParseVersion(version); err != nil || (keep != nil && !keep(version)) {
			continue
		}
		cs := catalog.CodeServer{Version: version, Tag: tag}
		imgs, err := s.digests(ctx, repo.Tag(tag), &cs, opts)
		if err != nil {
			return nil, err
		}
		ok, err := s.vscode(ctx, &cs, imgs)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, cs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return catalog.CompareVersions(out[i].Version, out[j].Version) > 0 })
	return out, nil
}

// digests records the index and platform digests behind ref in cs and
// returns each platform's image reference.
func (s *Source) digests(ctx context.Context, ref name.Tag, cs *catalog.CodeServer, opts []remote.Option) (map[string]name.Digest, error) {
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	imgs := map[string]name.Digest{}
	cs.Platforms = map[string]string{}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref, err)
		}
		cs.IndexDigest = desc.Digest.String()
		for _, m := range im.Manifests {
			if m.Platform == nil || m.Platform.OS != "linux" {
				continue // attestation manifests are unknown/unknown
			}
			p := imagespec.PlatformName(m.Platform.OS, m.Platform.Architecture, m.Platform.Variant)
			if _, dup := cs.Platforms[p]; !dup {
				cs.Platforms[p] = m.Digest.String()
				imgs[p] = ref.Context().Digest(m.Digest.String())
			}
		}
		return imgs, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config of %s: %w", ref, err)
	}
	p := cf.OS + "/" + cf.Architecture
	cs.Platforms[p] = desc.Digest.String()
	imgs[p] = ref.Context().Digest(desc.Digest.String())
	return imgs, nil
}
