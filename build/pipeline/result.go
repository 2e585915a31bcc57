package pipeline

import (
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sign"
)

// Result is what `imagectl build --output json` prints.
type Result struct {
	// Ref is repo@index-digest (pushed) or the archive path.
	Ref          string `json:"ref"`
	Index        string `json:"index"`
	InputsDigest string `json:"inputsDigest"`
	// ToolsImage is the tools image reference the definition was rendered
	// with (name:tag@sha256:... once matrix refresh pinned it).
	ToolsImage string           `json:"toolsImage"`
	Platforms  []PlatformOutput `json:"platforms"`
	Tags       []string         `json:"tags,omitempty"`
	Archive    string           `json:"archive,omitempty"`
	// BytesPushed sums the blob uploads BuildKit reported, if it reported any.
	BytesPushed int64 `json:"bytesPushed,omitempty"`
	// EmulatedSteps sums the platforms' emulated RUN steps.
	EmulatedSteps int `json:"emulatedSteps"`
	// Published is set when nothing was built: the versioned tag already
	// names an image of these inputs; it says what was checked.
	Published string         `json:"published,omitempty"`
	Signed    *sign.Result   `json:"signed,omitempty"`
	Duration  build.Duration `json:"duration"`
	// Stages are how long each stage of Run took, in order (resolve,
	// published, preflight, fetch, layout, key, solve, publish, sign; a
	// build of published inputs stops after published). "key" is the wait
	// for the signing key decrypted in the background.
	Stages []StageTime   `json:"stages,omitempty"`
	Set    imagespec.Set `json:"set"`
}

// Signing is the sign stage of one built image, ready to run: the Result
// it signs into (Signed, each platform's SBOM) and what the stage reads
// besides it. Run runs it when the request signs; Build hands it to the
// caller, which signs later (imagectl release, in its sign step).
type Signing struct {
	res        *Result
	provenance map[string]attest.Statement
	repo       name.Repository
	epoch      time.Time
	insecure   bool
	remoteOpts []remote.Option
	sbomFormat string
	sbomLock   bool
	scanner    Scanner
	images     builderImages
	early      *earlyScans // the scans run while pushing, if any
	warnings   io.Writer
	// layers are the base layers the prefetch decompressed for the scans
	// (nil: none). release, set on the Signing Build hands on, releases
	// them, the early scans and the build's work directory (Close).
	layers  layerSource
	release func()
	closed  bool // Sign ran, or Close
}

// StageTime is how long one stage of a build took.
type StageTime struct {
	Name     string         `json:"name"`
	Duration build.Duration `json:"duration"`
}

// PlatformOutput is one platform's manifest and how it was built.
type PlatformOutput struct {
	Digest string `json:"digest"`
	build.PlatformResult
	// SBOM says how the platform's signed SBOM was made (with --sign).
	SBOM *SBOMOutput `json:"sbom,omitempty"`
}

// SBOMOutput is one platform's SBOM as attached.
type SBOMOutput struct {
	// Source is "image" (scanned from the image's content by the scanner,
	// imagectl-sbom, with syft) or
	// "lock" (written from the resolved set).
	Source string `json:"source"`
	Format string `json:"format"`
	// Packages counts the packages found per type (deb, python, npm,
	// vscode-extension, ...), for Source image.
	Packages map[string]int `json:"packages,omitempty"`
	// Duration is the scan's (reading the layers included).
	Duration build.Duration `json:"duration"`
	// ReadFrom says where the scan read the image: "builder" (the content
	// store of the buildkitd that built it; "builder, N layer(s) from the
	// registry" when buildkitd did not hold some, a base's layers it
	// pushed by cross-repository mount without pulling them) or "registry"
	// (read back from the registry it was pushed to).
	ReadFrom string `json:"readFrom,omitempty"`
	// WhilePushing is set when the image was scanned while it was pushed
	// (read from the builder's store, where the solve prepared it).
	WhilePushing bool `json:"whilePushing,omitempty"`
	// BaseLayersPrefetched counts the image's layers the scan read as
	// decompressed during the solve (the base's) instead of pulling and
	// decompressing them itself.
	BaseLayersPrefetched int `json:"baseLayersPrefetched,omitempty"`
	// Reused says why the manifest's SBOM attestation was kept: it already
	// carried this SBOM signed by the key (nothing scanned or uploaded).
	Reused string `json:"reused,omitempty"`
}
