package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/regauth"
)

// runBreakImage copies an index to DST with one platform image broken on
// purpose, for imagectl smoke image to catch:
//
//	-env KEY=VALUE            set one variable of the platform's config Env
//	-graft-from P -graft-under DIR
//	                          add a layer with the shared objects (*.so*)
//	                          under DIR of platform P's image (e.g. amd64's
//	                          compiled modules into the arm64 image)
func runBreakImage(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("break-image", flag.ExitOnError)
	platform := fs.String("platform", "linux/arm64", "platform image to break")
	env := fs.String("env", "", "KEY=VALUE to set in the config Env")
	graftFrom := fs.String("graft-from", "", "platform whose shared objects to add")
	graftUnder := fs.String("graft-under", "/opt/imagectl/python", "directory whose shared objects are added")
	fs.Parse(args)
	if fs.NArg() != 2 || (*env == "") == (*graftFrom == "") {
		return errors.New("usage: break-image -platform P (-env KEY=VALUE | -graft-from P2 [-graft-under DIR]) SRC DST")
	}
	src, err := name.ParseReference(fs.Arg(0))
	if err != nil {
		return err
	}
	dst, err := name.ParseReference(fs.Arg(1))
	if err != nil {
		return err
	}
	idx, err := remote.Index(src, regauth.RemoteOptions(ctx)...)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	images := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		images[d.Platform.String()] = img
	}
	img, ok := images[*platform]
	if !ok {
		return fmt.Errorf("no %s image in %s", *platform, src)
	}
	if *env != "" {
		img, err = withEnv(img, *env)
	} else {
		img, err = withGraft(img, images, *graftFrom, *graftUnder, src)
	}
	if err != nil {
		return err
	}
	out := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		add := images[d.Platform.String()]
		if d.Platform.String() == *platform {
			add = img
		}
		out = mutate.AppendManifests(out, mutate.IndexAddendum{Add: add, Descriptor: v1.Descriptor{Platform: d.Platform}})
	}
	return remote.WriteIndex(dst, out, regauth.RemoteOptions(ctx)...)
}

// withEnv is img with env (KEY=VALUE) replacing KEY in its config Env.
func withEnv(img v1.Image, env string) (v1.Image, error) {
	k, _, _ := strings.Cut(env, "=")
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := cf.Config
	cfg.Env = nil
	for _, e := range cf.Config.Env {
		if !strings.HasPrefix(e, k+"=") {
			cfg.Env = append(cfg.Env, e)
		}
	}
	cfg.Env = append(cfg.Env, env)
	return mutate.Config(img, cfg)
}

// withGraft is img with a layer of the shared objects under dir of the
// images[from] (of the index src).
func withGraft(img v1.Image, images map[string]v1.Image, from, dir string, src name.Reference) (v1.Image, error) {
	fromImg, ok := images[from]
	if !ok {
		return nil, fmt.Errorf("no %s image in %s", from, src)
	}
	layer, n, err := sharedObjects(fromImg, dir)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s has no shared object under %s to graft", from, dir)
	}
	return mutate.AppendLayers(img, layer)
}

var sharedObject = regexp.MustCompile(`\.so(\.[0-9]+)*$`)

// sharedObjects is a layer holding img's shared objects under dir.
func sharedObjects(img v1.Image, dir string) (v1.Layer, int, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	prefix := strings.TrimPrefix(path.Clean(dir), "/") + "/"
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		name := strings.TrimPrefix(h.Name, "/")
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(name, prefix) || !sharedObject.MatchString(name) {
			continue
		}
		h.Name = name
		if err := tw.WriteHeader(h); err != nil {
			return nil, 0, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, 0, err
		}
		n++
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	return l, n, err
}
