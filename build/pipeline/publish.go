package pipeline

import (
	"context"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/regauth"
)

// publisher is where a build's images go, as ko's publish.Interface: a
// registry (registryPublisher) or an OCI archive (archivePublisher). The
// platform images themselves are exported by BuildKit as it solves, so a
// publisher first says where (export), then joins what was solved into
// one multi-platform index (Publish).
type publisher interface {
	// export sets where one platform's solve puts its image; dir is that
	// platform's work directory.
	export(spec *build.Spec, dir string)
	// Publish joins the solved platform images into one index and
	// publishes it.
	Publish(ctx context.Context, specs []build.Spec, results []*build.PlatformResult) (*publication, error)
}

// publication is what a publisher published.
type publication struct {
	// ref is repo@index-digest, or the archive path.
	ref, index string
	// archive is the archive path (archivePublisher); tags the tags pushed
	// (registryPublisher).
	archive string
	tags    []string
	// platforms maps each OCI platform to its image manifest digest.
	platforms map[string]string
	// provenance is BuildKit's provenance statement of each platform.
	provenance map[string]attest.Statement
}

// newPublisher is the one place the publisher is chosen: with Push the
// registry, tagged with the target's tags (none for release, which tags
// last), else an OCI archive in DistDir named after the versioned tag.
func newPublisher(ctx context.Context, req *Request, t *target) publisher {
	if req.Publish.Push {
		return &registryPublisher{repo: t.repo, tags: t.tags, ropts: regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...)}
	}
	dist := req.Publish.DistDir
	if dist == "" {
		dist = "dist"
	}
	version := t.set().Tags[0]
	return &archivePublisher{
		path:     filepath.Join(dist, filepath.Base(t.repo.RepositoryStr())+"-"+version+".oci.tar"),
		repoName: t.repo.Name(),
		tag:      version,
	}
}

// registryPublisher pushes: BuildKit pushes each platform image by digest;
// Publish pushes the index by digest, each provenance attestation as a
// referrer, then the tags.
type registryPublisher struct {
	repo  name.Repository
	tags  []string
	ropts []remote.Option
}

func (p *registryPublisher) export(spec *build.Spec, _ string) { spec.Push = true }

// Publish implements publisher.
func (p *registryPublisher) Publish(ctx context.Context, _ []build.Spec, results []*build.PlatformResult) (*publication, error) {
	pub, err := build.Publish(ctx, p.repo, results, p.tags, p.ropts)
	if err != nil {
		return nil, err
	}
	return &publication{
		ref: p.repo.Digest(pub.Index.String()).String(), index: pub.Index.String(), tags: p.tags,
		platforms: digests(pub.Platforms), provenance: pub.Provenance,
	}, nil
}

// archivePublisher writes an OCI archive that docker load accepts:
// BuildKit writes one OCI tarball per platform; Publish merges them.
type archivePublisher struct {
	path     string
	repoName string
	tag      string
}

// export writes the platform's image to dir/oci.tar, without provenance
// (attestations are attached to pushed images only).
func (p *archivePublisher) export(spec *build.Spec, dir string) {
	spec.Archive = filepath.Join(dir, "oci.tar")
	spec.Provenance = false
}

// Publish implements publisher.
func (p *archivePublisher) Publish(_ context.Context, specs []build.Spec, results []*build.PlatformResult) (*publication, error) {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = s.Archive
	}
	h, descs, err := build.WriteArchive(p.path, parts, results, p.repoName, p.tag)
	if err != nil {
		return nil, err
	}
	return &publication{ref: p.path, index: h.String(), archive: p.path, platforms: digests(descs)}, nil
}

func digests(m map[string]v1.Descriptor) map[string]string {
	out := make(map[string]string, len(m))
	for p, d := range m {
		out[p] = d.Digest.String()
	}
	return out
}
