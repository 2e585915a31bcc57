package build

// The image contract: what every image imagectl builds carries, and what
// verify and plan read back. Change these only together with dockerfiles/.
const (
	// LabelPrefix prefixes imagectl's own labels.
	LabelPrefix = "dev.imagectl."
	// LabelInputs is the sha256 digest of all build inputs (the resolved set,
	// the extension file digests, the base digest per platform, the image
	// definition and the imagectl version); plan compares it with a fresh one.
	LabelInputs = LabelPrefix + "inputs.digest"
	// LabelLock is the resolved set (resolve.Set as compact JSON).
	LabelLock       = LabelPrefix + "lock"
	LabelCodeServer = LabelPrefix + "code-server.version"
	LabelVSCode     = LabelPrefix + "vscode.version"
	LabelRay        = LabelPrefix + "ray.version"
	LabelPython     = LabelPrefix + "python.version"
	LabelDebugpy    = LabelPrefix + "debugpy.version"
	// LabelExtensions lists id@version,... in install order.
	LabelExtensions = LabelPrefix + "extensions"
)

// Where things live inside the image. The base is linuxserver/code-server,
// whose service runs code-server with --extensions-dir /config/extensions and
// --user-data-dir /config/data.
const (
	// ExtensionsDir holds one <publisher>.<name>-<version>/ per extension and
	// code-server's extensions.json.
	ExtensionsDir = "/config/extensions"
	// SettingsPath is code-server's user settings file.
	SettingsPath = "/config/data/User/settings.json"
)
