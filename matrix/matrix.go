package matrix

import (
	"fmt"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safefile"
)

// Default values, applied by applyDefaults and nowhere else.
const (
	DefaultBaseImage     = "lscr.io/linuxserver/code-server"
	DefaultTagPattern    = `^(\d+\.\d+\.\d+)$`
	DefaultPythonPolicy  = PolicyHighestCommon
	DefaultRayBuild      = RayBuildLatestPatch
	DefaultDebugpy       = ">=1.8.0"
	DefaultPyPIURL       = "https://pypi.org"
	DefaultMarketplace   = "https://marketplace.visualstudio.com"
	DefaultOpenVSXURL    = "https://open-vsx.org"
	DefaultGitHubURL     = "https://api.github.com"
	DefaultPackageIndex  = "https://pypi.org/simple"
	DefaultAnyConstraint = "*"
	// DefaultToolsImage is the build-platform image with python3 and pip.
	DefaultToolsImage    = "docker.io/library/python:3.12-slim-bookworm"
	DefaultPythonRuntime = imagespec.PythonRuntimeStandalone
	// DefaultStandaloneRepository publishes python-build-standalone.
	DefaultStandaloneRepository = "astral-sh/python-build-standalone"
	// DefaultStandaloneRelease is the python-build-standalone release used
	// when matrix.yaml names none.
	DefaultStandaloneRelease = "20250808"
	DefaultStandaloneFlavor  = StandaloneInstallOnly
)

// Values of Base.Versions, Ray.Build and PythonPolicy.Policy.
const (
	VersionsRegistryTags   = "registry-tags"
	VersionsGitHubReleases = "github-releases"
	RayBuildAll            = "all"
	RayBuildLatestPatch    = "latest-patch"
	PolicyHighestCommon    = "highest-common"
)

// SupportedPlatforms are the OCI platforms imagectl builds.
var supportedPlatforms = imagespec.Platforms()

// SupportedPlatforms returns the OCI platforms imagectl can build.
func SupportedPlatforms() []string { return append([]string(nil), supportedPlatforms...) }

// maxFileSize bounds matrix.yaml.
const maxFileSize = 1 << 20

// Load reads and parses the matrix file at path. Errors name path, the line
// and the field path.
func Load(path string) (*Config, error) {
	data, err := safefile.ReadFile(path, maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("reading matrix: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes matrix.yaml content strictly, applies defaults and validates
// it. name is used in error messages (usually the file path).
func Parse(name string, data []byte) (*Config, error) {
	root, s, err := parseDocument(name, data)
	if err != nil {
		return nil, err
	}
	cfg, err := decode(data, root, s)
	if err != nil {
		return nil, err
	}
	applyDefaults(cfg)
	v := &validator{file: name, lines: s.lines, root: root}
	if err := v.config(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// applyDefaults fills every optional field left empty. It is the only place
// defaults live.
func applyDefaults(c *Config) {
	if len(c.Platforms) == 0 {
		c.Platforms = SupportedPlatforms()
	}
	if c.Base.Image == "" {
		c.Base.Image = DefaultBaseImage
	}
	if c.Base.Versions == "" {
		c.Base.Versions = VersionsRegistryTags
	}
	if c.Base.TagPattern == "" && c.Base.Versions == VersionsRegistryTags {
		c.Base.TagPattern = DefaultTagPattern
	}
	if c.Components.CodeServer.Constraint == "" {
		c.Components.CodeServer.Constraint = DefaultAnyConstraint
	}
	if c.Components.Ray.Constraint == "" {
		c.Components.Ray.Constraint = DefaultAnyConstraint
	}
	if c.Components.Ray.Build == "" {
		c.Components.Ray.Build = DefaultRayBuild
	}
	if c.Components.Python.Policy == "" {
		c.Components.Python.Policy = DefaultPythonPolicy
	}
	if c.Components.Debugpy.Constraint == "" {
		c.Components.Debugpy.Constraint = DefaultDebugpy
	}
	for i := range c.Extensions {
		if c.Extensions[i].Constraint == "" {
			c.Extensions[i].Constraint = DefaultAnyConstraint
		}
	}
	if c.Build.ToolsImage == "" {
		c.Build.ToolsImage = DefaultToolsImage
	}
	if c.Build.PythonRuntime == "" {
		c.Build.PythonRuntime = DefaultPythonRuntime
	}
	if c.Build.Standalone.Repository == "" {
		c.Build.Standalone.Repository = DefaultStandaloneRepository
	}
	if c.Build.Standalone.Release == "" {
		c.Build.Standalone.Release = DefaultStandaloneRelease
	}
	if c.Build.Standalone.Flavor == "" {
		c.Build.Standalone.Flavor = DefaultStandaloneFlavor
	}
	u := &c.Upstreams
	for _, f := range []struct {
		p   *string
		def string
	}{
		{&u.PyPI, DefaultPyPIURL},
		{&u.Marketplace, DefaultMarketplace},
		{&u.OpenVSX, DefaultOpenVSXURL},
		{&u.GitHub, DefaultGitHubURL},
		{&u.PackageIndex, DefaultPackageIndex},
	} {
		if *f.p == "" {
			*f.p = f.def
		}
	}
}

// Extension returns the extension with id (case-insensitive), if listed.
func (c *Config) Extension(id string) (Extension, bool) {
	for _, e := range c.Extensions {
		if equalFoldID(e.ID, id) {
			return e, true
		}
	}
	return Extension{}, false
}
