package imagespec

// Set is one resolved, buildable combination. Its JSON encoding is the lock that
// builds, labels and plans are derived from: the same inputs give byte-identical
// JSON.
type Set struct {
	CodeServer CodeServer `json:"codeServer"`
	Ray        string     `json:"ray"`
	// Python is the chosen CPython minor version, e.g. "3.12".
	Python string `json:"python"`
	// RayPythons are the CPython versions Ray ships wheels for on every platform.
	RayPythons []string    `json:"rayPythons"`
	RayExtras  []string    `json:"rayExtras,omitempty"`
	Debugpy    string      `json:"debugpy"`
	Platforms  []string    `json:"platforms"`
	Extensions []Extension `json:"extensions"`
	// ToolsImage is the build-platform image (python3 + pip) that
	// cross-installs the wheels: matrix.yaml's build.toolsImage pinned as
	// name:tag@sha256:... with the digest catalog.json records for it, or
	// the bare reference when the catalog records no digest for that exact
	// reference (the explanation then says so). build renders it into the
	// definition, so a new digest means new inputs.
	ToolsImage string `json:"toolsImage,omitempty"`
	// PythonRuntime is the python-build-standalone runtime of Python, as
	// catalog.json locks it for matrix.yaml's build.standalone release, when
	// build.pythonRuntime is standalone; nil otherwise, or when the catalog
	// has none (the explanation then says so and a build fails).
	PythonRuntime *PythonRuntime `json:"pythonRuntime,omitempty"`
	// PythonLocks is the complete Python closure of ray[RayExtras]==Ray and
	// debugpy==Debugpy per OCI platform, as catalog.json locks it (imagectl
	// matrix refresh, pip's own resolver), sorted by normalized name: what
	// the build installs with pip install --no-deps --require-hashes. A
	// platform without a lock is built unlocked (pip resolves the
	// dependencies at build time); the explanation notes it and the build
	// warns.
	PythonLocks map[string][]PythonDist `json:"pythonLocks,omitempty"`
	// Tags are publishing, not part of the lock: Resolve leaves them empty,
	// because the versioned tag carries the inputs digest, which is known only
	// once the image definition is rendered. RenderTags fills them (one per
	// matrix.yaml tag template, in order) for build and release; they are
	// never part of the inputs digest.
	Tags []string `json:"tags,omitempty"`
}

// PythonDist is one locked wheel of a Python closure.
type PythonDist struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
	SHA256   string `json:"sha256"`
}

// PythonRuntime is one python-build-standalone runtime.
type PythonRuntime struct {
	// Version is the full CPython version, e.g. 3.12.11.
	Version string `json:"version"`
	// Release is the python-build-standalone release, e.g. 20250808.
	Release string `json:"release"`
	// Files maps an OCI platform to its tarball (URL and sha256).
	Files map[string]RuntimeFile `json:"files"`
}

// RuntimeFile is one tarball.
type RuntimeFile struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// CodeServer is the chosen code-server and its base image.
type CodeServer struct {
	Version string `json:"version"`
	VSCode  string `json:"vscode"`
	// Base is the base image reference with tag, e.g.
	// lscr.io/linuxserver/code-server:4.101.2.
	Base        string `json:"base"`
	IndexDigest string `json:"indexDigest,omitempty"`
	// Platforms maps an OCI platform to its base manifest digest.
	Platforms map[string]string `json:"platforms,omitempty"`
}

// Extension is one extension at one version, with its file per platform, in
// install order (dependencies first).
type Extension struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Source  string `json:"source"`
	Engine  string `json:"engine"`
	// Files maps an OCI platform (linux/amd64) to the exact file to install.
	Files map[string]File `json:"files"`
}

// File identifies one VSIX exactly.
type File struct {
	// TargetPlatform is the VS Code target platform of the file: linux-x64,
	// linux-arm64 or universal.
	TargetPlatform string `json:"targetPlatform"`
	URL            string `json:"url,omitempty"`
	SHA256         string `json:"sha256,omitempty"`
}
