package matrix

// Config is the decoded matrix.yaml.
type Config struct {
	// Image names the published image.
	Image Image `json:"image" yaml:"image"`
	// Platforms are the OCI platforms every build targets, e.g. linux/amd64.
	Platforms []string `json:"platforms" yaml:"platforms"`
	// Base is the code-server base image and how its versions are discovered.
	Base Base `json:"base" yaml:"base"`
	// Components holds the version constraint or policy of each component.
	Components Components `json:"components" yaml:"components"`
	// Extensions are the VS Code extensions baked into the image, in install order
	// (dependencies are ordered before dependents by the resolver regardless).
	Extensions []Extension `json:"extensions" yaml:"extensions"`
	// Settings are written to code-server's User/settings.json.
	Settings map[string]any `json:"settings,omitempty" yaml:"settings,omitempty"`
	// Build holds the image-definition parameters outside the resolved set
	// (tools image, Python runtime). They are part of every image's inputs
	// digest, so build, plan and release all read them from here; command-line
	// flags only override them.
	Build Build `json:"build" yaml:"build"`
	// Tags are Go text/template strings rendered per resolved set once its
	// inputs digest is known, e.g.
	// "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}". The first is
	// the versioned, immutable tag and must use {{.Inputs}}; templates marked
	// floating may move and must not use it.
	Tags []Tag `json:"tags" yaml:"tags"`
	// Upstreams are the base URLs of every upstream service. Each may be
	// overridden on the command line or by an IMAGECTL_*_URL environment variable.
	Upstreams Upstreams `json:"upstreams" yaml:"upstreams"`
}

// Image names the image imagectl publishes.
type Image struct {
	Name         string   `json:"name" yaml:"name"`
	Repositories []string `json:"repositories" yaml:"repositories"`
	Description  string   `json:"description,omitempty" yaml:"description,omitempty"`
	Source       string   `json:"source,omitempty" yaml:"source,omitempty"`
	License      string   `json:"license,omitempty" yaml:"license,omitempty"`
}

// Base describes the code-server base image.
type Base struct {
	// Image is the repository, without tag, e.g. lscr.io/linuxserver/code-server.
	Image string `json:"image" yaml:"image"`
	// Versions says where code-server versions come from: "registry-tags" (tags
	// of Image matching TagPattern) or "github-releases" (coder/code-server).
	Versions string `json:"versions" yaml:"versions"`
	// TagPattern is a regular expression whose first group is the code-server
	// version, applied to registry tags.
	TagPattern string `json:"tagPattern,omitempty" yaml:"tagPattern,omitempty"`
	// VSCodeOverrides maps code-server versions whose bundled VS Code does not
	// follow the 4.X.Y -> 1.X.Y rule, e.g. "4.99.4": "1.99.3".
	VSCodeOverrides map[string]string `json:"vscodeOverrides,omitempty" yaml:"vscodeOverrides,omitempty"`
}

// Components holds one constraint or policy per component.
type Components struct {
	CodeServer Constraint   `json:"codeServer" yaml:"codeServer"`
	Ray        Ray          `json:"ray" yaml:"ray"`
	Python     PythonPolicy `json:"python" yaml:"python"`
	Debugpy    Constraint   `json:"debugpy" yaml:"debugpy"`
}

// Constraint is a version constraint such as ">=4.96.0": a semver
// constraint for code-server, a PEP 440 specifier for debugpy.
type Constraint struct {
	Constraint string `json:"constraint" yaml:"constraint"`
	// Exclude lists versions never to pick (known broken).
	Exclude []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
}

// Ray is the Ray constraint plus the extras installed with it.
type Ray struct {
	// Constraint is a PEP 440 specifier such as ">=2.39.0".
	Constraint string   `json:"constraint" yaml:"constraint"`
	Exclude    []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
	Extras     []string `json:"extras,omitempty" yaml:"extras,omitempty"`
	// Build is "all" (every Ray version satisfying Constraint is buildable) or
	// "latest-patch" (only the newest patch of each minor); default latest-patch.
	Build string `json:"build,omitempty" yaml:"build,omitempty"`
}

// PythonPolicy decides the Python version of a set.
type PythonPolicy struct {
	// Policy is "highest-common": the highest CPython that Ray ships wheels for
	// on every target platform, within [Min, Max].
	Policy string `json:"policy" yaml:"policy"`
	Min    string `json:"min,omitempty" yaml:"min,omitempty"`
	Max    string `json:"max,omitempty" yaml:"max,omitempty"`
}

// Extension is one VS Code extension to bake in.
type Extension struct {
	// ID is publisher.name, e.g. ms-python.python.
	ID string `json:"id" yaml:"id"`
	// Source is "marketplace" (VS Marketplace) or "openvsx".
	Source string `json:"source" yaml:"source"`
	// Constraint is a semver constraint on the extension version.
	Constraint string `json:"constraint,omitempty" yaml:"constraint,omitempty"`
	// PreRelease allows pre-release versions.
	PreRelease bool `json:"preRelease,omitempty" yaml:"preRelease,omitempty"`
	// Exclude lists versions never to pick.
	Exclude []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
}

// Build says how the image definition (dockerfiles/) is rendered.
type Build struct {
	// ToolsImage is the build-platform image with python3 and pip in which
	// the wheels are cross-installed; pin it by digest for reproducibility.
	ToolsImage string `json:"toolsImage" yaml:"toolsImage"`
	// PythonRuntime is "standalone" (a python-build-standalone tarball from
	// Standalone, unpacked on the build platform; the default, as
	// linuxserver/code-server ships no python3) or "base" (the base image's
	// own python3 of the set's version).
	PythonRuntime string `json:"pythonRuntime" yaml:"pythonRuntime"`
	// Standalone names the python-build-standalone release whose
	// tarballs imagectl matrix refresh locks in catalog.json
	// (pythonRuntimes): per CPython minor version the matrix allows, the
	// newest patch with both architectures, its URLs and sha256.
	Standalone Standalone `json:"standalone" yaml:"standalone"`
}

// Standalone names a python-build-standalone release. Each field has a
// default, so an empty standalone: section means astral-sh's release
// DefaultStandaloneRelease, flavour install_only.
type Standalone struct {
	// Repository is the GitHub repository (owner/name) publishing the
	// releases, e.g. astral-sh/python-build-standalone.
	Repository string `json:"repository" yaml:"repository"`
	// Release is the oldest release a set may use, a date tag such as
	// "20250808" (quote it): matrix refresh locks the newest release since
	// that has every CPython minor the sets use (see catalog.Refresh).
	Release string `json:"release" yaml:"release"`
	// Flavor is the tarball flavour: install_only or install_only_stripped.
	Flavor string `json:"flavor" yaml:"flavor"`
}

// Values of Standalone.Flavor.
const (
	StandaloneInstallOnly         = "install_only"
	StandaloneInstallOnlyStripped = "install_only_stripped"
)

// Tag is one tag template.
type Tag struct {
	Template string `json:"template" yaml:"template"`
	// Floating tags move to the newest verified build; others are immutable.
	Floating bool `json:"floating,omitempty" yaml:"floating,omitempty"`
}

// Upstreams are base URLs; empty means the public default.
type Upstreams struct {
	PyPI         string `json:"pypi,omitempty" yaml:"pypi,omitempty"`
	Marketplace  string `json:"marketplace,omitempty" yaml:"marketplace,omitempty"`
	OpenVSX      string `json:"openvsx,omitempty" yaml:"openvsx,omitempty"`
	GitHub       string `json:"github,omitempty" yaml:"github,omitempty"`
	PackageIndex string `json:"packageIndex,omitempty" yaml:"packageIndex,omitempty"`
}

// Source names for Extension.Source.
const (
	SourceMarketplace = "marketplace"
	SourceOpenVSX     = "openvsx"
)
