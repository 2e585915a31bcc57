package pipeline

import (
	"context"
	"path/filepath"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/publish"
	"github.com/imagectl/imagectl/regauth"
)

// newPublisher is the one place the publisher is chosen: with Push the
// registry, tagged with the target's tags (none for release, which tags
// last), else an OCI archive in DistDir named after the versioned tag.
func newPublisher(ctx context.Context, req *Request, t *target) publish.Interface {
	if req.Publish.Push {
		return publish.NewRegistry(t.repo, t.tags, regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...)...)
	}
	dist := req.Publish.DistDir
	if dist == "" {
		dist = "dist"
	}
	version := t.set().Tags[0]
	return publish.NewArchive(filepath.Join(dist, filepath.Base(t.repo.RepositoryStr())+"-"+version+".oci.tar"), t.repo.Name(), version)
}

// exportTo sets where one platform's solve puts its image: pushed by
// digest (push), else an OCI tarball in dir, without provenance
// (attestations are attached to pushed images only).
func exportTo(spec *build.Spec, dir string, push bool) {
	if push {
		spec.Push = true
		return
	}
	spec.Archive = filepath.Join(dir, "oci.tar")
	spec.Provenance = false
}

// exports are the solves' exports, for the publisher.
func exports(specs []build.Spec, results []*build.PlatformResult) []publish.Export {
	out := make([]publish.Export, len(results))
	for i, r := range results {
		out[i] = publish.Export{Platform: r.Platform, Digest: r.Exported, Archive: specs[i].Archive}
	}
	return out
}
