package catalog

import "github.com/imagectl/imagectl/pylock"

// SchemaVersion is the current catalog schema version.
const SchemaVersion = 1

// Catalog is the snapshot written beside matrix.yaml (catalog.json).
type Catalog struct {
	SchemaVersion int `json:"schemaVersion"`
	// Describes is the date (YYYY-MM-DD) the facts describe.
	Describes string `json:"describes"`
	// Origin says how the snapshot was made, e.g. "imagectl matrix refresh" or
	// "hand-written from upstream release notes".
	Origin     string       `json:"origin,omitempty"`
	CodeServer []CodeServer `json:"codeServer"`
	// ToolsImage locks matrix.yaml's build.toolsImage, if refresh recorded it.
	ToolsImage *ToolsImage `json:"toolsImage,omitempty"`
	// PythonRuntimes lock matrix.yaml's build.standalone release: one
	// python-build-standalone tarball pair per CPython minor version,
	// oldest first.
	PythonRuntimes []PythonRuntime   `json:"pythonRuntimes,omitempty"`
	Ray            []PythonPackage   `json:"ray"`
	Debugpy        []PythonPackage   `json:"debugpy"`
	Extensions     []ExtensionRecord `json:"extensions"`
	// PythonLocks are the complete Python closures imagectl matrix refresh
	// locked with pip, one per (set, platform) of matrix list.
	PythonLocks []pylock.Lock `json:"pythonLocks,omitempty"`
}

// CodeServer is one code-server release available as a base image.
type CodeServer struct {
	Version string `json:"version"`
	// VSCode is the VS Code version bundled in this code-server.
	VSCode string `json:"vscode"`
	// VSCodeFrom says where VSCode comes from: VSCodeFromImage when it was
	// read from the base image of every platform, empty when from
	// matrix.yaml's 4.X.Y -> 1.X.Y rule or base.vscodeOverrides (a
	// hand-written snapshot, code-server versions from GitHub releases, or
	// a base image that could not be read).
	VSCodeFrom string `json:"vscodeFrom,omitempty"`
	// Tag is the base image tag, e.g. "4.101.2".
	Tag string `json:"tag"`
	// IndexDigest is the digest of the base image index behind Tag, if known.
	IndexDigest string `json:"indexDigest,omitempty"`
	// Platforms maps an OCI platform (linux/amd64) to its manifest digest.
	Platforms map[string]string `json:"platforms,omitempty"`
}

// VSCodeFromImage is CodeServer.VSCodeFrom for a VS Code version read from
// the base image itself (code-server's bundled lib/vscode/package.json).
const VSCodeFromImage = "image"

// ToolsImage is the build-platform tools image (matrix.yaml build.toolsImage)
// and the digest its reference named when the snapshot was taken. The
// resolver pins the tools image to Digest only while Ref still equals
// matrix.yaml's build.toolsImage.
type ToolsImage struct {
	// Ref is build.toolsImage as matrix.yaml wrote it, e.g.
	// docker.io/library/python:3.12-slim-bookworm.
	Ref string `json:"ref"`
	// Digest is what Ref named ("sha256:<64 hex>"): the index digest for a
	// multi-platform tag, so that every build platform can use it. Empty
	// when unknown (a hand-written snapshot).
	Digest string `json:"digest,omitempty"`
}

// PythonRuntime is the python-build-standalone build of one CPython minor
// version in one release, with the tarball of each OCI platform.
type PythonRuntime struct {
	// Python is the CPython minor version, e.g. "3.12".
	Python string `json:"python"`
	// Version is the full CPython version, e.g. "3.12.11".
	Version string `json:"version"`
	// Repository, Release and Flavor are matrix.yaml's build.standalone
	// when the runtime was recorded; the resolver uses the runtime only
	// while they still match.
	Repository string `json:"repository"`
	Release    string `json:"release"`
	Flavor     string `json:"flavor"`
	// Files maps an OCI platform (linux/amd64, linux/arm64) to its tarball.
	Files map[string]RuntimeFile `json:"files"`
}

// RuntimeFile is one python-build-standalone tarball.
type RuntimeFile struct {
	URL string `json:"url"`
	// SHA256 is the tarball's hex sha256.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
}

// runtimeArches are the OCI platforms every PythonRuntime covers, with
// python-build-standalone's architecture name.
var runtimeArches = map[string]string{"linux/amd64": "x86_64", "linux/arm64": "aarch64"}

// RuntimeArch returns python-build-standalone's architecture name (x86_64,
// aarch64) for an OCI platform.
func RuntimeArch(platform string) (string, bool) {
	a, ok := runtimeArches[platform]
	return a, ok
}

// PythonPackage is one release of a PyPI project.
type PythonPackage struct {
	Version string `json:"version"`
	Yanked  bool   `json:"yanked,omitempty"`
	// PreRelease is true for PEP 440 pre-releases (a, b, rc, dev).
	PreRelease     bool   `json:"preRelease,omitempty"`
	RequiresPython string `json:"requiresPython,omitempty"`
	// Pythons maps an OCI platform to the CPython minor versions ("3.12") that
	// the release ships wheels for on that platform. A pure-Python release
	// (py3-none-any) lists "any" under the key "any".
	Pythons map[string][]string `json:"pythons,omitempty"`
}

// ExtensionRecord is every known version of one extension from one source.
type ExtensionRecord struct {
	ID       string             `json:"id"`
	Source   string             `json:"source"`
	Versions []ExtensionVersion `json:"versions"`
}

// ExtensionVersion is one version of an extension with all its platform builds.
type ExtensionVersion struct {
	Version    string `json:"version"`
	PreRelease bool   `json:"preRelease,omitempty"`
	// Engine is engines.vscode, e.g. "^1.95.0".
	Engine        string   `json:"engine"`
	Dependencies  []string `json:"dependencies,omitempty"`
	ExtensionPack []string `json:"extensionPack,omitempty"`
	// Files maps a VS Code target platform (linux-x64, linux-arm64, universal)
	// to the file built for it.
	Files map[string]File `json:"files"`
}

// File is one downloadable VSIX.
type File struct {
	URL string `json:"url,omitempty"`
	// SHA256 is the hex digest of the VSIX, once known.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
}
