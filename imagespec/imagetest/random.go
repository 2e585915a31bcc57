package imagetest

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// RandomPlatformImage is a random image (one small layer) whose config says
// linux/arch, so that registry readers see a real platform image.
func RandomPlatformImage(arch string) (v1.Image, error) {
	return RandomLabelledImage(v1.Platform{OS: "linux", Architecture: arch}, nil)
}

// RandomLabelledImage is a random image (one small layer) whose config
// says platform's OS and architecture and carries labels.
func RandomLabelledImage(platform v1.Platform, labels map[string]string) (v1.Image, error) {
	img, err := random.Image(128, 1)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = platform.OS, platform.Architecture
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}

// RandomIndex is an index of one RandomPlatformImage per architecture, each
// with its linux/arch platform in the index; every call gives new digests.
func RandomIndex(arches ...string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, arch := range arches {
		img, err := RandomPlatformImage(arch)
		if err != nil {
			return nil, fmt.Errorf("random %s image: %w", arch, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}
