package imagespec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The image contract: what every image imagectl builds carries, and what
// verify and plan read back. Change these only together with dockerfiles/.
const (
	// LabelPrefix prefixes imagectl's own labels.
	LabelPrefix = "dev.imagectl."
	// LabelInputs is the sha256 digest of all build inputs (the resolved set,
	// the extension file digests, the base digest per platform, the image
	// definition and the imagectl version); plan compares it with a fresh one.
	LabelInputs = LabelPrefix + "inputs.digest"
	// LabelLock is the resolved set (Set as compact JSON, EncodeLock).
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

// Where the Python packages live. They are cross-installed on the build
// platform with pip --target and found through PYTHONPATH, so the image's own
// python3 (the base's, or a runtime shipped by imagectl) imports them.
const (
	// PythonDir is a prefix: lib/python<X.Y>/site-packages/ holds the
	// packages (<dist>-<version>.dist-info/METADATA of ray and debugpy; the
	// directory is on PYTHONPATH) and bin/ their console scripts (on PATH).
	PythonDir = "/opt/imagectl/python"
	// InterpreterPath is the image's Python interpreter: the runtime's own
	// bin/python3, or, with the base's python3, a link to it. code-server's
	// settings name it (SettingInterpreterPath), and the image's environment
	// makes PythonDir the active environment: VIRTUAL_ENV=PythonDir (the
	// linuxserver base sets VIRTUAL_ENV=/lsiopy, an empty directory) and
	// PythonDir/bin first on PATH; bin/python links to python3.
	InterpreterPath = PythonDir + "/bin/python3"
	// SettingInterpreterPath is the VS Code Python extension's setting for
	// the default interpreter.
	SettingInterpreterPath = "python.defaultInterpreterPath"
)

// ImageSettings returns code-server's user settings for the image: the
// matrix.yaml settings with the interpreter path of the image contract
// (which wins over a matrix.yaml value: it must name the shipped Python).
func ImageSettings(matrixSettings map[string]any) map[string]any {
	out := make(map[string]any, len(matrixSettings)+1)
	for k, v := range matrixSettings {
		out[k] = v
	}
	out[SettingInterpreterPath] = InterpreterPath
	return out
}

// How BuildKit's provenance is attached. The pushed index lists only the
// platform image manifests, so two builds from the same lock give the same
// index digest. BuildKit's provenance (which records build start/finish
// times and an invocation id, so it differs every build) is attached to each
// platform manifest instead: always as an OCI referrer (BuildKit's
// attestation manifest plus a subject; referrers API or the sha256-<hex>
// fallback tag), and with build --sign also as a signed cosign in-toto
// attestation of the same predicate (the .att tag, replaced on rebuild).
const (
	// ProvenanceArtifactType is the artifactType of those referrers.
	ProvenanceArtifactType = "application/vnd.in-toto+json"
	// AnnotationReferenceType and ReferenceTypeAttestation are kept from
	// BuildKit's attestation manifest, which the referrer is a copy of (plus
	// the subject).
	AnnotationReferenceType  = "vnd.docker.reference.type"
	ReferenceTypeAttestation = "attestation-manifest"
)

// The in-toto predicate types imagectl attaches and reads, and the layer
// annotation of an attestation manifest that names a layer's predicate type.
const (
	PredicateSPDX      = "https://spdx.dev/Document"
	PredicateCycloneDX = "https://cyclonedx.org/bom"
	PredicateSLSA02    = "https://slsa.dev/provenance/v0.2"
	PredicateSLSA1     = "https://slsa.dev/provenance/v1"
	// ProvenancePredicateType is the in-toto predicate type BuildKit writes.
	ProvenancePredicateType = PredicateSLSA1
	// AnnotationPredicateType is the layer annotation of an attestation
	// manifest (BuildKit's and cosign's) naming the layer's predicate type.
	AnnotationPredicateType = "in-toto.io/predicate-type"
)

// IsProvenance reports whether an in-toto predicate type is SLSA provenance
// of any version.
func IsProvenance(predicateType string) bool {
	return strings.HasPrefix(predicateType, "https://slsa.dev/provenance/")
}

// IsSBOM reports whether an in-toto predicate type is an SBOM imagectl
// reads (SPDX or CycloneDX).
func IsSBOM(predicateType string) bool {
	return predicateType == PredicateSPDX || predicateType == PredicateCycloneDX
}

// What the base (linuxserver/code-server) provides and how its entrypoint
// starts code-server: the s6 service svc-code-server runs CodeServerBin as
// user abc with --bind-addr [::]:CodeServerPort --user-data-dir UserDataDir
// --extensions-dir ExtensionsDir. imagectl smoke image boots the image's
// entrypoint and checks these.
const (
	CodeServerBin  = "/app/code-server/bin/code-server"
	CodeServerPort = 8443
	// CodeServerUser is the user the service runs code-server as.
	CodeServerUser = "abc"
	// UserDataDir is code-server's --user-data-dir; SettingsPath is below it.
	UserDataDir = "/config/data"
	// ConfigDir is abc's home, holding UserDataDir and ExtensionsDir: what
	// code-server writes, and what imagectl builds into the image.
	ConfigDir = "/config"
	// NonRootEnv set to 1 makes the base's startup scripts take their
	// non-root branches (no chown, no switch to abc). They detect that mode
	// themselves only when /run is not root's.
	NonRootEnv = "LSIO_NON_ROOT_USER"
)

// The debugger's setting every image carries in SettingsPath (from
// matrix.yaml; SettingInterpreterPath is above).
const (
	// SettingClusterDashboards lists the Ray dashboards the Ray Distributed
	// Debugger extension polls ({host, localRoot} objects).
	SettingClusterDashboards = "anyscalecompute.ray-distributed-debugger.clusterDashboards"
	// DebuggerLocalRoot is the localRoot of every SettingClusterDashboards
	// entry: the empty string, so that debugpy applies no path mapping.
	//
	// The extension (0.1.6) reads it with `localRoot ?? "${workspaceFolder}"`,
	// so "" reaches the attach configuration it starts:
	// pathMappings [{localRoot: L, remoteRoot: "."}, {localRoot: L,
	// remoteRoot: L}]. The worker's debugpy (1.6.3 to 1.8.21) drops every
	// mapping whose localRoot is empty, so stack frames carry the worker's
	// own absolute paths and breakpoints are matched on them unchanged. Ray
	// gives every node the same /tmp/ray/session_<ts>/runtime_resources/...
	// path strings, and the head, which runs the job's driver with the same
	// runtime_env, shares its /tmp/ray with the sidecar: a task's file, on
	// the head or on a worker pod, opens in code-server at the path debugpy
	// reports. Any non-empty L maps the worker's cwd (remoteRoot ".") onto
	// L, and a file of the job's working_dir then opens only if L is that
	// job's own package directory.
	DebuggerLocalRoot = ""
)

// DebuggerSettingsProblems checks the debugger's SettingClusterDashboards
// as settings.json holds it (nil when absent): a non-empty list of
// {host, localRoot} whose every localRoot is DebuggerLocalRoot. It returns
// one sentence per problem.
func DebuggerSettingsProblems(raw []byte) []string {
	if raw == nil {
		return []string{"no " + SettingClusterDashboards}
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || len(entries) == 0 {
		return []string{fmt.Sprintf("%s is %s, want a list of {host, localRoot}", SettingClusterDashboards, raw)}
	}
	var problems []string
	for i, e := range entries {
		var host string
		if err := json.Unmarshal(e["host"], &host); err != nil || host == "" {
			problems = append(problems, fmt.Sprintf("%s[%d] has no host", SettingClusterDashboards, i))
		}
		lr, ok := e["localRoot"]
		var root string
		switch {
		case !ok || string(lr) == "null":
			problems = append(problems, fmt.Sprintf("%s[%d] has no localRoot (the extension would map the worker's cwd onto ${workspaceFolder}), want %q", SettingClusterDashboards, i, DebuggerLocalRoot))
		case json.Unmarshal(lr, &root) != nil:
			problems = append(problems, fmt.Sprintf("%s[%d].localRoot is %s, want the string %q", SettingClusterDashboards, i, lr, DebuggerLocalRoot))
		case root != DebuggerLocalRoot:
			problems = append(problems, fmt.Sprintf("%s[%d].localRoot is %q, want %q (debugpy maps the worker's cwd onto it, and the task's files are not found)", SettingClusterDashboards, i, root, DebuggerLocalRoot))
		}
	}
	return problems
}

// PythonSitePackages is where the Python packages of a set with CPython
// version (X.Y) live in the image.
func PythonSitePackages(version string) string {
	return PythonDir + "/lib/python" + version + "/site-packages"
}

// Where the image's python3 comes from (matrix.yaml build.pythonRuntime,
// build --python-runtime).
const (
	// PythonRuntimeStandalone is a python-build-standalone tarball from the
	// catalog, unpacked under PythonDir.
	PythonRuntimeStandalone = "standalone"
	// PythonRuntimeBase is the base image's own python3.
	PythonRuntimeBase = "base"
)

// StartupCapabilities are the capabilities the base's startup
// (linuxserver's, under s6-overlay v3) uses when it starts as root: the
// sidecar's securityContext drops every other one (inject), and smoke
// image starts the image with these alone. Each is needed, and together
// they are enough: smoke/image's TestFaithfulCapabilities boots the
// startup with all of them and with each one left out, and
// docs/inject.md's capability table is what it measured.
var StartupCapabilities = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}
