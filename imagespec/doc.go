// Package imagespec is the contract of an imagectl image: what every image
// imagectl builds carries, and what the verbs that read or publish images
// rely on. build writes it; verify checks it; sign reads the lock for the
// SBOM; release and plan read the labels back and write the tags; smoke
// checks the in-image paths; extensions lays files out under them. Each fact
// is defined once, here:
//
//   - the labels (LabelLock, LabelInputs, the component versions) and where
//     things live in the image (ExtensionsDir, SettingsPath, PythonDir,
//     InterpreterPath, PythonSitePackages), code-server's settings contract
//     (ImageSettings) and what the base provides (CodeServerBin, ...);
//   - the resolved set (Set and its parts), whose compact JSON is the lock
//     label: EncodeLock writes it (its bytes go into the inputs digest, so
//     they must never change by accident) and DecodeLock is the one strict
//     reader;
//   - the OCI platform to VS Code target platform map (VSCodeTarget,
//     Platforms), and the one spelling of an OCI platform (PlatformName,
//     SamePlatform: linux/arm64 is linux/arm64/v8);
//   - the base's glibc (BaseGlibcMajor, BaseGlibcMinor) and the wheel
//     platform tags it installs (ManylinuxTags, WheelArch), which the lock,
//     the build and the catalog's wheel reading share;
//   - what an attestation manifest in an index is (IsAttestationManifest,
//     AttestationSubject);
//   - rendered tags with their floating flag (Tags): build --push and
//     release both write Tags.Immutable, the first of which is the versioned
//     tag plan reads, and release moves Tags.Floating.
//
// It is a leaf: it imports the standard library, go-containerregistry's
// descriptor types and containerd's platforms only (a test checks it), so nothing that imports it links
// BuildKit, cosign or syft. Change it only together with dockerfiles/ and the
// packages that read images.
package imagespec
