package imagespec

import "fmt"

// BaseGlibcMajor and BaseGlibcMinor are the glibc version of the base
// image, 2.39: linuxserver/docker-code-server builds every image from
// ghcr.io/linuxserver/baseimage-ubuntu:noble (arm64v8-noble for arm64)
// since its "Rebase to noble" of 2024-08-19, older than the oldest
// code-server matrix.yaml allows, and Ubuntu 24.04 (noble) ships glibc
// 2.39. A base on another glibc changes these two numbers, and with them
// ManylinuxTags.
const (
	BaseGlibcMajor = 2
	BaseGlibcMinor = 39
)

// wheelArches maps each platform imagectl builds to the architecture of its
// wheel platform tags, with the oldest glibc minor a manylinux wheel of that
// architecture may name: 5 on x86_64 (manylinux1), 17 elsewhere
// (manylinux2014 is the first manylinux policy of aarch64). These are the
// floors of pypa/packaging's _manylinux.platform_tags.
var wheelArches = map[string]struct {
	arch       string
	floorMinor int
}{
	"linux/amd64": {"x86_64", 5},
	"linux/arm64": {"aarch64", 17},
}

// WheelArch returns the architecture of an OCI platform's wheel platform
// tags: x86_64 for linux/amd64, aarch64 for linux/arm64.
func WheelArch(platform string) (string, bool) {
	a, ok := wheelArches[platform]
	return a.arch, ok
}

// legacyManylinux are the PEP 513, 571 and 599 names of manylinux_2_5,
// manylinux_2_12 and manylinux_2_17 (PEP 600).
var legacyManylinux = map[int]string{5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}

// ManylinuxTags returns the wheel platform tags of the base image on an OCI
// platform, most specific first: manylinux_2_<BaseGlibcMinor>_<arch> down to
// manylinux_2_17_<arch> (manylinux_2_5_x86_64 on linux/amd64), each legacy
// alias (manylinux2014, manylinux2010, manylinux1) right after the tag it
// names. It is the list pypa/packaging's platform_tags yields on the base
// itself, and the one list of where a wheel installs: the lock and the build
// pass each tag to pip as --platform (pip matches --platform tags literally
// and widens only manylinux2014 and manylinux2010 on x86), and the catalog
// counts a wheel for a platform only if one of its tags is here.
func ManylinuxTags(platform string) ([]string, error) {
	a, ok := wheelArches[platform]
	if !ok {
		return nil, fmt.Errorf("platform %q: no manylinux wheel architecture known (want linux/amd64 or linux/arm64)", platform)
	}
	var tags []string
	for minor := BaseGlibcMinor; minor >= a.floorMinor; minor-- {
		tags = append(tags, fmt.Sprintf("manylinux_%d_%d_%s", BaseGlibcMajor, minor, a.arch))
		if legacy, ok := legacyManylinux[minor]; ok {
			tags = append(tags, legacy+"_"+a.arch)
		}
	}
	return tags, nil
}
