package build

import (
	"context"
	"strconv"
	"time"

	"github.com/moby/buildkit/client"
)

// Interface builds one platform of an image. BuildKit is the implementation;
// tests and other backends provide their own.
type Interface interface {
	Build(ctx context.Context, spec Spec) (*PlatformResult, error)
}

// Spec is everything one platform's solve needs.
type Spec struct {
	// Platform is the target OCI platform, e.g. linux/arm64.
	Platform string
	// Contexts are the local directories (PrepareContexts).
	Contexts Contexts
	// BuildArgs are the definition's ARG values.
	BuildArgs map[string]string
	// Labels are set on the image config.
	Labels map[string]string
	// SourceDateEpoch is the build-arg SOURCE_DATE_EPOCH: BuildKit sets the
	// config's created and history times from it, and the definition's RUN
	// steps set every file time they produce to it (contexts carry it
	// already, PrepareContexts).
	SourceDateEpoch time.Time

	// Repo, with Push, is where the image is pushed by digest (no tag).
	Repo string
	Push bool
	// Archive, without Push, is the OCI layout tarball to write.
	Archive string
	// Prepare, without Push and Archive, exports the image into buildkitd's
	// own content store only: every layer is compressed there, so that the
	// same solve with Push afterwards is cached and only pushes. Platforms
	// solved concurrently then push one after the other, and a layer they
	// share (a universal extension, pure-Python packages) is uploaded once
	// instead of by both pushes racing.
	Prepare bool

	// Provenance asks buildkitd for a SLSA provenance attestation.
	Provenance bool
	// SBOM asks buildkitd for its SBOM attestation; it runs a scanner image
	// that buildkitd must be able to pull (SBOMGenerator, default
	// docker/buildkit-syft-scanner).
	SBOM          bool
	SBOMGenerator string

	// CacheFrom and CacheTo are registry cache references (repo:tag).
	CacheFrom []string
	CacheTo   []string

	// Status, if set, receives every solve status; it is not closed.
	Status chan<- *client.SolveStatus
}

// PlatformResult is what one platform's solve produced.
type PlatformResult struct {
	Platform string `json:"platform"`
	// Exported is the digest BuildKit exported: an index holding the image
	// manifest and, with attestations, their manifest.
	Exported string `json:"-"`
	// Builder is the address of the buildkitd that built it and
	// BuildPlatform its native platform.
	Builder       string `json:"builder"`
	BuildPlatform string `json:"buildPlatform"`
	// Steps counts RUN steps that executed (not cached); EmulatedSteps those
	// of them that ran on a platform other than BuildPlatform, read from the
	// solve's vertex names ("[linux/arm64 stage 2/3] RUN ...").
	Steps         int      `json:"steps"`
	EmulatedSteps int      `json:"emulatedSteps"`
	Emulated      []string `json:"emulated,omitempty"`
	CachedSteps   int      `json:"cachedSteps"`
	Duration      Duration `json:"duration"`
	// BytesPushed sums the blob upload progress BuildKit reported; BuildKit
	// v0.33 reports none for registry pushes, so it is usually absent (the
	// e2e benchmark counts bytes on the registry side instead).
	BytesPushed int64 `json:"bytesPushed,omitempty"`
}

// Duration marshals as seconds with millisecond precision.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(formatSeconds(time.Duration(d))), nil
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
