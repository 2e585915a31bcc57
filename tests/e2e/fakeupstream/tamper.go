package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/regauth"
)

// runCopy copies an image index (and everything it references) to another
// reference. Signatures and attestations live under the source repository's
// sha256-<hex>.sig/.att tags; -tags sig,att copies those of the index and
// every manifest too.
func runCopy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("copy", flag.ExitOnError)
	tags := fs.String("tags", "", "comma-separated cosign tag suffixes to copy too: sig, att")
	fs.Parse(args)
	if fs.NArg() != 2 {
		return errors.New("usage: copy [-tags sig,att] SRC DST")
	}
	src, err := name.ParseReference(fs.Arg(0))
	if err != nil {
		return err
	}
	dst, err := name.ParseReference(fs.Arg(1))
	if err != nil {
		return err
	}
	ro := regauth.RemoteOptions(ctx)
	idx, err := remote.Index(src, ro...)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(dst, idx, ro...); err != nil {
		return err
	}
	if *tags == "" {
		return nil
	}
	h, err := idx.Digest()
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	digests := []v1.Hash{h}
	for _, d := range im.Manifests {
		digests = append(digests, d.Digest)
	}
	for _, d := range digests {
		for _, suffix := range strings.Split(*tags, ",") {
			t := d.Algorithm + "-" + d.Hex + "." + suffix
			img, err := remote.Image(src.Context().Tag(t), ro...)
			if err != nil {
				continue // not signed or attested: nothing to copy
			}
			if err := remote.Write(dst.Context().Tag(t), img, ro...); err != nil {
				return fmt.Errorf("copying %s: %w", t, err)
			}
		}
	}
	return nil
}

// runDeleteTag deletes a tag (e.g. a platform manifest's .sig tag) through
// the distribution API.
func runDeleteTag(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: delete-tag REPO:TAG")
	}
	t, err := name.NewTag(args[0])
	if err != nil {
		return err
	}
	return remote.Delete(t, regauth.RemoteOptions(ctx)...)
}

// runRelabel copies an index to DST with one platform's image config label
// changed, so the label disagrees with the image's contents; the layers are
// untouched.
func runRelabel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("relabel", flag.ExitOnError)
	platform := fs.String("platform", "linux/arm64", "platform whose label to change")
	label := fs.String("label", "", "KEY=VALUE")
	fs.Parse(args)
	if fs.NArg() != 2 || !strings.Contains(*label, "=") {
		return errors.New("usage: relabel -platform P -label KEY=VALUE SRC DST")
	}
	k, v, _ := strings.Cut(*label, "=")
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
	out := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	changed := false
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if d.Platform != nil && d.Platform.String() == *platform {
			cf, err := img.ConfigFile()
			if err != nil {
				return err
			}
			cfg := cf.Config
			cfg.Labels = map[string]string{}
			for lk, lv := range cf.Config.Labels {
				cfg.Labels[lk] = lv
			}
			cfg.Labels[k] = v
			if img, err = mutate.Config(img, cfg); err != nil {
				return err
			}
			changed = true
		}
		out = mutate.AppendManifests(out, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: d.Platform}})
	}
	if !changed {
		return fmt.Errorf("no %s manifest in %s", *platform, src)
	}
	return remote.WriteIndex(dst, out, regauth.RemoteOptions(ctx)...)
}
