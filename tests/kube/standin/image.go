package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/imagectl/imagectl/imagespec"
)

const imageUsage = `usage:
  standin image pause OUT.tar TAG
      the Pod sandbox image: this binary as /pause
  standin image ray OCI-LAYOUT-DIR PLATFORM OUT.tar RAY-TAG SIDECAR-TAG
      PLATFORM's image of the OCI layout (the image the e2e built) as
      SIDECAR-TAG, and the same image with this binary as ray and wget in
      /usr/local/bin as RAY-TAG (the Ray container's stand-in: the image's
      python3 and debugpy run the task)`

// image writes docker-save tarballs for `ctr images import`.
func image(args []string) error {
	if len(args) == 0 {
		return errors.New(imageUsage)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		return err
	}
	switch {
	case args[0] == "pause" && len(args) == 3:
		layer, err := filesLayer(map[string][]byte{"pause": self}, nil)
		if err != nil {
			return err
		}
		img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
			Architecture: runtime.GOARCH, OS: "linux",
			Config: v1.Config{Entrypoint: []string{"/pause"}},
			RootFS: v1.RootFS{Type: "layers"},
		})
		if err != nil {
			return err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
		return write(args[1], map[string]v1.Image{args[2]: img})
	case args[0] == "ray" && len(args) == 6:
		p, err := v1.ParsePlatform(args[2])
		if err != nil {
			return err
		}
		base, err := fromLayout(args[1], *p)
		if err != nil {
			return err
		}
		layer, err := filesLayer(map[string][]byte{"usr/local/bin/imagectl-standin": self},
			map[string]string{"usr/local/bin/ray": "imagectl-standin", "usr/local/bin/wget": "imagectl-standin"})
		if err != nil {
			return err
		}
		img, err := mutate.AppendLayers(base, layer)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		// The stand-in's ray before the image's own (its Python
		// environment's bin is first on PATH and may hold a ray script).
		env := []string{pythonEnv + "=" + imagespec.InterpreterPath}
		for _, e := range cf.Config.Env {
			if p, ok := strings.CutPrefix(e, "PATH="); ok {
				e = "PATH=/usr/local/bin:" + p
			}
			env = append(env, e)
		}
		cf.Config.Env = env
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		return write(args[3], map[string]v1.Image{args[4]: img, args[5]: base})
	}
	return errors.New(imageUsage)
}

// fromLayout is the image of platform p in the OCI layout at dir.
func fromLayout(dir string, p v1.Platform) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	// The layout's index.json names the image index the build wrote.
	for _, d := range im.Manifests {
		if d.MediaType.IsIndex() {
			if idx, err = idx.ImageIndex(d.Digest); err != nil {
				return nil, err
			}
			if im, err = idx.IndexManifest(); err != nil {
				return nil, err
			}
			break
		}
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.Equals(p) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s: no %s image", dir, p)
}

// filesLayer is a layer of root-owned files (0755) and symbolic links, with
// their directories.
func filesLayer(files map[string][]byte, links map[string]string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mt := time.Unix(0, 0)
	dirs := map[string]bool{}
	dir := func(p string) error {
		for i := range len(p) {
			if p[i] == '/' && !dirs[p[:i]] {
				dirs[p[:i]] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p[:i] + "/", Mode: 0o755, ModTime: mt}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b := files[p]
		if err := dir(p); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o755, Size: int64(len(b)), ModTime: mt}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(links)) {
		target := links[p]
		if err := dir(p); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777, ModTime: mt}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// write saves images under their tags as one docker-save tarball.
func write(out string, imgs map[string]v1.Image) error {
	refs := map[name.Reference]v1.Image{}
	for tag, img := range imgs {
		t, err := name.NewTag(tag)
		if err != nil {
			return err
		}
		refs[t] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
