package options

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/imagespec"
)

// platformsValue is a --platform flag: OCI platforms, comma separated or
// repeated, each checked when the flag is parsed (a bad one exits 2).
type platformsValue struct {
	p       *[]string
	changed bool
	known   func(string) bool
	want    string
}

func (v *platformsValue) String() string { return "[" + strings.Join(*v.p, ",") + "]" }
func (v *platformsValue) Type() string   { return "platforms" }

func (v *platformsValue) Set(s string) error {
	if !v.changed {
		*v.p = nil
		v.changed = true
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !v.known(p) {
			return fmt.Errorf("platform %q: want %s", p, v.want)
		}
		*v.p = append(*v.p, p)
	}
	return nil
}

// AddPlatformsFlag registers --platform: platforms imagectl builds
// (imagespec.Platforms).
func AddPlatformsFlag(fl *pflag.FlagSet, p *[]string, usage string) {
	built := imagespec.Platforms()
	fl.Var(&platformsValue{p: p, known: func(s string) bool { return slices.Contains(built, s) }, want: OrList(built)}, "platform", usage)
}

// AddImagePlatformsFlag registers --platform for a verb that reads an
// image: any platform with a VS Code target (linux/arm64/v8 included).
func AddImagePlatformsFlag(fl *pflag.FlagSet, p *[]string, usage string) {
	known := func(s string) bool { _, err := imagespec.VSCodeTarget(s); return err == nil }
	fl.Var(&platformsValue{p: p, known: known, want: "an OCI platform such as " + OrList(imagespec.Platforms())}, "platform", usage)
}

// ImageArgs accepts at most n positional arguments, each an image
// reference (REGISTRY/NAME:TAG or @sha256:...); a malformed one is a usage
// error. Exactly n when exact.
func ImageArgs(n int, exact bool) cobra.PositionalArgs {
	count := cobra.MaximumNArgs(n)
	if exact {
		count = cobra.ExactArgs(n)
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := count(cmd, args); err != nil {
			return err
		}
		for _, a := range args {
			if err := CheckReference("image", a); err != nil {
				return err
			}
		}
		return nil
	}
}

// CheckReference refuses a malformed image reference given as what.
func CheckReference(what, ref string) error {
	if _, err := name.ParseReference(ref); err != nil {
		return fmt.Errorf("%s %q: %w (want REGISTRY/NAME:TAG or REGISTRY/NAME@sha256:...)", what, ref, err)
	}
	return nil
}

// CheckRepository refuses a malformed repository given as flag.
func CheckRepository(flag, repo string) error {
	if repo == "" {
		return nil
	}
	if _, err := name.NewRepository(repo); err != nil {
		return fmt.Errorf("--%s %q: %w (want REGISTRY/NAME, no tag or digest)", flag, repo, err)
	}
	return nil
}
