// Package verify proves that a published imagectl image is what it says it
// is, without a container runtime. Image fails closed: the report passes only
// if
//
//   - the index (or single manifest) AND every platform manifest carry a valid
//     cosign signature from the given key (or, in CI, the given keyless
//     identity) whose payload names that exact digest;
//   - every platform manifest has a verified SBOM attestation (cosign in-toto,
//     SPDX or CycloneDX) or a BuildKit SBOM attestation inside the signed index;
//   - every platform manifest has provenance: BuildKit's attestation manifest
//     in the index (vnd.docker.reference.digest = the platform digest, in-toto
//     predicate https://slsa.dev/provenance/v0.2 or v1) or a verified cosign
//     provenance attestation;
//   - each platform's layers, read with go-containerregistry (bounded reads,
//     whiteouts applied, nothing written to disk), contain exactly the
//     extensions the lock names, at the lock's versions and with a
//     .vsixmanifest TargetPlatform matching the architecture (linux/amd64 =
//     linux-x64, linux/arm64 = linux-arm64; universal only where the lock says
//     universal), a code-server extensions.json that agrees, and Ray and
//     debugpy dist-info METADATA (in any site-packages or dist-packages
//     directory) whose versions, like the pythonX.Y directory, match the
//     labels;
//   - the dev.imagectl.* labels agree with each other (the lock label against
//     the individual ones) and the lock's platform list equals the index's.
//
// BuildKit attestation manifests (unknown/unknown) need no signature of their
// own: their digests are part of the signed index.
//
// Every failure names the platform, the manifest digest, the path or label and
// what was expected.
package verify
