package publish

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/attest"
)

// Interface is where a build's images go, as ko's publish.Interface: a
// registry (NewRegistry) or an OCI archive (NewArchive). BuildKit exports
// each platform image as it solves (pushed by digest, or written as an OCI
// tarball); Publish joins the exports into one multi-platform index and
// publishes it.
type Interface interface {
	Publish(ctx context.Context, exports []Export) (*Publication, error)
}

// Publication is what a publisher published.
type Publication struct {
	// Ref is repo@index-digest, or the archive path.
	Ref   string
	Index string
	// Archive is the archive path (NewArchive); Tags the tags pushed
	// (NewRegistry).
	Archive string
	Tags    []string
	// Platforms maps each OCI platform to its image manifest digest.
	Platforms map[string]string
	// Provenance is BuildKit's provenance statement of each platform
	// (pushed images only).
	Provenance map[string]attest.Statement
}

// registry pushes: BuildKit pushed each platform image by digest; Publish
// pushes the index by digest, each provenance attestation as a referrer,
// then the tags.
type registry struct {
	repo  name.Repository
	tags  []string
	ropts []remote.Option
}

// NewRegistry publishes to repo, tagging the index with tags (none: by
// digest only), with ropts for every request.
func NewRegistry(repo name.Repository, tags []string, ropts ...remote.Option) Interface {
	return &registry{repo: repo, tags: tags, ropts: ropts}
}

// Publish implements Interface.
func (p *registry) Publish(ctx context.Context, exports []Export) (*Publication, error) {
	pub, err := Publish(ctx, p.repo, exports, p.tags, p.ropts)
	if err != nil {
		return nil, err
	}
	return &Publication{
		Ref: p.repo.Digest(pub.Index.String()).String(), Index: pub.Index.String(), Tags: p.tags,
		Platforms: digests(pub.Platforms), Provenance: pub.Provenance,
	}, nil
}

// archive writes an OCI archive that docker load accepts: BuildKit wrote
// one OCI tarball per platform; Publish merges them.
type archive struct {
	path     string
	repoName string
	tag      string
}

// NewArchive publishes to an OCI archive at path, its index annotated with
// repoName:tag so docker load tags it.
func NewArchive(path, repoName, tag string) Interface {
	return &archive{path: path, repoName: repoName, tag: tag}
}

// Publish implements Interface.
func (p *archive) Publish(ctx context.Context, exports []Export) (*Publication, error) {
	h, descs, err := WriteArchive(ctx, p.path, exports, p.repoName, p.tag)
	if err != nil {
		return nil, err
	}
	return &Publication{Ref: p.path, Index: h.String(), Archive: p.path, Platforms: digests(descs)}, nil
}

func digests(m map[string]v1.Descriptor) map[string]string {
	out := make(map[string]string, len(m))
	for p, d := range m {
		out[p] = d.Digest.String()
	}
	return out
}
