package registry

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/regauth"
)

// Source lists code-server versions from a base image repository.
type Source struct {
	settings
	repo      string
	pattern   *regexp.Regexp
	overrides map[string]string
}

// settings are what New and NewImages share: how to reach the registry.
type settings struct {
	opts     []remote.Option
	auth     remote.Option
	nameOpts []name.Option
}

func newSettings(opts []Option) settings {
	s := settings{auth: remote.WithAuthFromKeychain(regauth.Keychain()), opts: []remote.Option{remote.WithTransport(regauth.Transport(nil))}}
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

// WithKeychain authenticates with kc instead of the docker config keychain
// (regauth.Keychain, the default).
func WithKeychain(kc authn.Keychain) Option {
	return func(s *settings) { s.auth = remote.WithAuthFromKeychain(kc) }
}

// WithInsecure allows plain HTTP to the registry.
func WithInsecure() Option {
	return func(s *settings) { s.nameOpts = append(s.nameOpts, name.Insecure) }
}

// New returns a source for repository repo (no tag) whose tags matching
// tagPattern (first group = code-server version) are code-server releases.
// overrides maps code-server versions to the VS Code they bundle when the
// 4.X.Y -> 1.X.Y rule does not hold.
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
// keep returns true, with their digests. A tag that is not an index is
// recorded with its single platform.
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
		vscode, err := catalog.VSCodeFor(version, s.overrides)
		if err != nil {
			continue // not a 4.X.Y code-server and no override: cannot use it
		}
		cs := catalog.CodeServer{Version: version, VSCode: vscode, Tag: tag}
		if err := s.digests(ctx, repo.Tag(tag), &cs, opts); err != nil {
			return nil, err
		}
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return catalog.CompareVersions(out[i].Version, out[j].Version) > 0 })
	return out, nil
}

func (s *Source) digests(ctx context.Context, ref name.Tag, cs *catalog.CodeServer, opts []remote.Option) error {
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	cs.Platforms = map[string]string{}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return fmt.Errorf("reading index %s: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return fmt.Errorf("reading index %s: %w", ref, err)
		}
		cs.IndexDigest = desc.Digest.String()
		for _, m := range im.Manifests {
			if m.Platform == nil || m.Platform.OS != "linux" {
				continue // attestation manifests are unknown/unknown
			}
			p := m.Platform.OS + "/" + m.Platform.Architecture
			if m.Platform.Variant != "" && !(m.Platform.Architecture == "arm64" && m.Platform.Variant == "v8") {
				p += "/" + m.Platform.Variant
			}
			if _, dup := cs.Platforms[p]; !dup {
				cs.Platforms[p] = m.Digest.String()
			}
		}
		return nil
	}
	img, err := desc.Image()
	if err != nil {
		return fmt.Errorf("reading image %s: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading config of %s: %w", ref, err)
	}
	cs.Platforms[cf.OS+"/"+cf.Architecture] = desc.Digest.String()
	return nil
}
