// Package extensions fetches, verifies, caches and lays out the VS Code
// extensions of a resolved set (imagespec.Set) per platform.
//
// Fetch downloads the exact VSIX each OCI platform needs (linux/amd64 ->
// linux-x64 or universal, linux/arm64 -> linux-arm64 or universal) from the
// Marketplace or Open VSX (subpackages marketplace and openvsx), validates it
// (subpackage vsix) and stores it in a content-addressed cache (subpackage
// cache). A file already cached, and in particular one whose sha256 the lock
// pins, is served with no network request at all. A file the lock pins no
// sha256 for is trusted on first use with a warning, or refused with
// WithRequirePins; RecordPins and CarryPins keep the catalog's pins.
//
// Layout writes, for one platform and from the cache only, the directory
// code-server loads with --extensions-dir: one <publisher>.<name>-<version>/
// per extension (the VSIX's extension/ folder plus .vsixmanifest) and
// extensions.json, reproducibly (times from SOURCE_DATE_EPOCH, no wall clock).
// WriteSettings writes code-server's User/settings.json.
package extensions
