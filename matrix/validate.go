package matrix

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/pep440"
)

var (
	extensionIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9-]*$`)
	pythonMinorRE = regexp.MustCompile(`^3\.(\d{1,2})$`)
	extraRE       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// validator checks a decoded Config; lines holds the line of each field path.
type validator struct {
	file  string
	lines map[string]int
	root  *yaml.Node
}

// errf reports an error at path, using the line of path or of its nearest
// recorded ancestor.
func (v *validator) errf(path, format string, args ...any) error {
	return &Error{File: v.file, Line: v.line(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (v *validator) line(path string) int {
	for p := path; p != ""; {
		if l, ok := v.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return v.root.Line
}

func (v *validator) config(c *Config) error {
	checks := []func(*Config) error{v.image, v.platforms, v.base, v.components, v.extensions, v.build, v.tags, v.upstreams, v.settings}
	for _, check := range checks {
		if err := check(c); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) image(c *Config) error {
	if strings.TrimSpace(c.Image.Name) == "" {
		return v.errf("image.name", "missing (want the image name, e.g. docker.io/example/code-server-ray)")
	}
	if len(c.Image.Repositories) == 0 {
		return v.errf("image.repositories", "missing (want at least one repository to publish to)")
	}
	for i, r := range c.Image.Repositories {
		if _, err := name.NewRepository(r, name.StrictValidation); err != nil {
			return v.errf(fmt.Sprintf("image.repositories[%d]", i), "bad repository %q: %v (want e.g. docker.io/example/code-server-ray, no tag)", r, err)
		}
	}
	if c.Image.Source != "" {
		if err := checkURL(c.Image.Source); err != nil {
			return v.errf("image.source", "%v", err)
		}
	}
	return nil
}

func (v *validator) platforms(c *Config) error {
	seen := map[string]bool{}
	for i, p := range c.Platforms {
		path := fmt.Sprintf("platforms[%d]", i)
		if !slices.Contains(supportedPlatforms, p) {
			return v.errf(path, "unsupported platform %q (want %s)", p, strings.Join(supportedPlatforms, " or "))
		}
		if seen[p] {
			return v.errf(path, "platform %q listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func (v *validator) base(c *Config) error {
	if _, err := name.NewRepository(c.Base.Image, name.StrictValidation); err != nil {
		return v.errf("base.image", "bad image %q: %v (want a repository without tag or digest, e.g. %s)", c.Base.Image, err, DefaultBaseImage)
	}
	switch c.Base.Versions {
	case VersionsRegistryTags:
		if c.Base.TagPattern == "" {
			return v.errf("base.tagPattern", "missing (required with versions: registry-tags)")
		}
	case VersionsGitHubReleases:
	default:
		return v.errf("base.versions", "unknown version source %q (want %s or %s)", c.Base.Versions, VersionsRegistryTags, VersionsGitHubReleases)
	}
	if c.Base.TagPattern != "" {
		re, err := regexp.Compile(c.Base.TagPattern)
		if err != nil {
			return v.errf("base.tagPattern", "bad regular expression: %v", err)
		}
		if re.NumSubexp() < 1 {
			return v.errf("base.tagPattern", "%q has no group (want the first group to capture the code-server version)", c.Base.TagPattern)
		}
	}
	for _, cs := range slices.Sorted(maps.Keys(c.Base.VSCodeOverrides)) {
		vs := c.Base.VSCodeOverrides[cs]
		path := joinKey("base.vscodeOverrides", cs)
		if _, err := semver.StrictNewVersion(cs); err != nil {
			return v.errf(path, "bad code-server version %q: %v", cs, err)
		}
		if _, err := semver.StrictNewVersion(vs); err != nil {
			return v.errf(path, "bad VS Code version %q: %v", vs, err)
		}
	}
	return nil
}

func (v *validator) constraint(path, s string) error {
	if _, err := semver.NewConstraint(s); err != nil {
		return v.errf(path, "bad version constraint %q: %v", s, err)
	}
	return nil
}

func (v *validator) excludes(path string, xs []string) error {
	for i, x := range xs {
		if _, err := semver.NewVersion(x); err != nil {
			return v.errf(fmt.Sprintf("%s[%d]", path, i), "bad version %q: %v", x, err)
		}
	}
	return nil
}

// pyConstraint checks the constraint of a Python package (Ray, debugpy): a
// PEP 440 specifier such as ">=2.39.0" or "~=1.8, !=1.8.5".
func (v *validator) pyConstraint(path, s string) error {
	if _, err := pep440.ParseSpecifier(s); err != nil {
		return v.errf(path, "bad version specifier %q: %v", s, err)
	}
	return nil
}

// pyExcludes checks the excluded versions of a Python package: PEP 440.
func (v *validator) pyExcludes(path string, xs []string) error {
	for i, x := range xs {
		if _, err := pep440.Parse(x); err != nil {
			return v.errf(fmt.Sprintf("%s[%d]", path, i), "bad version %q: %v", x, err)
		}
	}
	return nil
}

func (v *validator) components(c *Config) error {
	k := c.Components
	if err := v.constraint("components.codeServer.constraint", k.CodeServer.Constraint); err != nil {
		return err
	}
	if err := v.excludes("components.codeServer.exclude", k.CodeServer.Exclude); err != nil {
		return err
	}
	if err := v.pyConstraint("components.ray.constraint", k.Ray.Constraint); err != nil {
		return err
	}
	if err := v.pyExcludes("components.ray.exclude", k.Ray.Exclude); err != nil {
		return err
	}
	for i, e := range k.Ray.Extras {
		if !extraRE.MatchString(e) {
			return v.errf(fmt.Sprintf("components.ray.extras[%d]", i), "bad extra %q (want e.g. default)", e)
		}
	}
	switch k.Ray.Build {
	case RayBuildAll, RayBuildLatestPatch:
	default:
		return v.errf("components.ray.build", "unknown build policy %q (want %s or %s)", k.Ray.Build, RayBuildLatestPatch, RayBuildAll)
	}
	if k.Python.Policy != PolicyHighestCommon {
		return v.errf("components.python.policy", "unknown python policy %q (want %s)", k.Python.Policy, PolicyHighestCommon)
	}
	var lo, hi int
	for _, f := range []struct {
		path, val string
		out       *int
	}{{"components.python.min", k.Python.Min, &lo}, {"components.python.max", k.Python.Max, &hi}} {
		if f.val == "" {
			continue
		}
		m := pythonMinorRE.FindStringSubmatch(f.val)
		if m == nil {
			return v.errf(f.path, "bad Python version %q (want 3.N, e.g. \"3.12\"; quote it so 3.10 is not read as 3.1)", f.val)
		}
		fmt.Sscan(m[1], f.out)
	}
	if k.Python.Min != "" && k.Python.Max != "" && lo > hi {
		return v.errf("components.python.min", "min %s is above max %s", k.Python.Min, k.Python.Max)
	}
	if err := v.pyConstraint("components.debugpy.constraint", k.Debugpy.Constraint); err != nil {
		return err
	}
	return v.pyExcludes("components.debugpy.exclude", k.Debugpy.Exclude)
}

func (v *validator) extensions(c *Config) error {
	seen := map[string]int{}
	for i, e := range c.Extensions {
		path := fmt.Sprintf("extensions[%d]", i)
		if !extensionIDRE.MatchString(e.ID) {
			return v.errf(path+".id", "bad extension id %q (want publisher.name, e.g. ms-python.python)", e.ID)
		}
		if j, dup := seen[strings.ToLower(e.ID)]; dup {
			return v.errf(path+".id", "extension %q already listed at extensions[%d]", e.ID, j)
		}
		seen[strings.ToLower(e.ID)] = i
		switch e.Source {
		case SourceMarketplace, SourceOpenVSX:
		case "":
			return v.errf(path+".source", "missing (want %s or %s)", SourceMarketplace, SourceOpenVSX)
		default:
			return v.errf(path+".source", "unknown source %q (want %s or %s)", e.Source, SourceMarketplace, SourceOpenVSX)
		}
		if err := v.constraint(path+".constraint", e.Constraint); err != nil {
			return err
		}
		if err := v.excludes(path+".exclude", e.Exclude); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) build(c *Config) error {
	b := c.Build
	if _, err := name.ParseReference(b.ToolsImage); err != nil {
		return v.errf("build.toolsImage", "bad image %q: %v (want e.g. docker.io/library/python:3.12-slim-bookworm@sha256:...)", b.ToolsImage, err)
	}
	switch b.PythonRuntime {
	case imagespec.PythonRuntimeStandalone, imagespec.PythonRuntimeBase:
	default:
		return v.errf("build.pythonRuntime", "unknown Python runtime %q (want %s or %s)", b.PythonRuntime, imagespec.PythonRuntimeStandalone, imagespec.PythonRuntimeBase)
	}
	st := b.Standalone
	if !repositoryRE.MatchString(st.Repository) {
		return v.errf("build.standalone.repository", "bad GitHub repository %q (want owner/name, e.g. %s)", st.Repository, DefaultStandaloneRepository)
	}
	if !releaseRE.MatchString(st.Release) {
		return v.errf("build.standalone.release", "bad release %q (want a python-build-standalone release tag, 8 digits such as \"%s\"; quote it)", st.Release, DefaultStandaloneRelease)
	}
	switch st.Flavor {
	case StandaloneInstallOnly, StandaloneInstallOnlyStripped:
	default:
		return v.errf("build.standalone.flavor", "unknown flavor %q (want %s or %s)", st.Flavor, StandaloneInstallOnly, StandaloneInstallOnlyStripped)
	}
	return nil
}

var (
	repositoryRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$`)
	releaseRE    = regexp.MustCompile(`^\d{8}$`)
)

func (v *validator) tags(c *Config) error {
	if len(c.Tags) == 0 {
		return v.errf("tags", "missing (want at least one immutable tag template, e.g. {{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}})")
	}
	if c.Tags[0].Floating {
		return v.errf("tags[0].floating", "the first tag must be immutable (it names the exact set)")
	}
	for i, t := range c.Tags {
		path := fmt.Sprintf("tags[%d].template", i)
		rendered := map[string]bool{}
		first := ""
		for i, d := range sampleTagData {
			s, err := t.Render(d)
			if err != nil {
				return v.errf(path, "%v", err)
			}
			if i == 0 {
				first = s
			}
			rendered[s] = true
		}
		// The first sample with other inputs: an immutable tag must change (a
		// rebuild from new inputs gets a new versioned tag), a floating one
		// must not (it names the combination, whichever build it points at).
		d := sampleTagData[0]
		d.Inputs = otherInputs
		other, err := t.Render(d)
		if err != nil {
			return v.errf(path, "%v", err)
		}
		if t.Floating {
			if other != first {
				return v.errf(path, "floating tag %q uses {{.Inputs}}: a floating tag names a combination and moves between builds, so it must not carry the inputs digest", t.Template)
			}
			continue
		}
		if len(rendered) != len(sampleTagData) {
			return v.errf(path, "immutable tag %q does not change with code-server, Ray and Python (use {{.CodeServer}}, {{.Ray}} and {{.Python}}, or mark it floating: true)", t.Template)
		}
		if other == first {
			return v.errf(path, "immutable tag %q does not change with the inputs digest (add {{.Inputs}}, e.g. {{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}): without it an extension bump, a rebuilt base or a definition change could never be published under a new versioned tag", t.Template)
		}
	}
	return nil
}

func (v *validator) upstreams(c *Config) error {
	u := c.Upstreams
	for _, f := range []struct{ path, val string }{
		{"upstreams.pypi", u.PyPI}, {"upstreams.marketplace", u.Marketplace},
		{"upstreams.openvsx", u.OpenVSX}, {"upstreams.github", u.GitHub},
		{"upstreams.packageIndex", u.PackageIndex},
	} {
		if err := checkURL(f.val); err != nil {
			return v.errf(f.path, "%v", err)
		}
	}
	return nil
}

// checkURL accepts absolute http(s) URLs.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad URL %q: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q (want an absolute http or https URL)", s)
	}
	return nil
}

func equalFoldID(a, b string) bool { return strings.EqualFold(a, b) }

// settings checks the debugger's cluster list when the settings carry it:
// an image whose localRoot is not imagespec.DebuggerLocalRoot would fail
// its own verify after the push (imagespec.DebuggerSettingsProblems).
func (v *validator) settings(c *Config) error {
	d, ok := c.Settings[imagespec.SettingClusterDashboards]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return v.errf("settings", "%s: %v", imagespec.SettingClusterDashboards, err)
	}
	if problems := imagespec.DebuggerSettingsProblems(raw); len(problems) > 0 {
		return v.errf(joinKey("settings", imagespec.SettingClusterDashboards), "%s", strings.Join(problems, "; "))
	}
	return nil
}
