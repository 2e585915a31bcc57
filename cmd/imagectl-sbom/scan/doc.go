// Package scan makes the SBOM of an image from its content: it scans one
// platform image with syft as a Go library (github.com/anchore/syft) — the
// base's dpkg packages, the Python distributions (every *.dist-info under
// /opt/imagectl/python), code-server's npm packages (package.json under
// node_modules) — and adds the VS Code extensions installed under
// /config/extensions as packages with their versions, the sha256 of the
// VSIX they were installed from (from the lock), its URL and the licence
// the VSIX declares: package.json's license, else the licence file its
// manifest names (recorded by its title, with its text, as an SPDX
// LicenseRef), and in SPDX's licenseComments where each was read. The
// result is an SPDX 2.3 JSON document (or CycloneDX JSON), reproducible
// for the same image: its creation time is the build's SOURCE_DATE_EPOCH
// and its namespace derives from the image digest.
//
// The catalogers are syft's defaults for an image (the RPM database one
// aside), set through syft's public API only, with one change: syft's
// Node.js binary classifier looks for a Node.js 8 or later alone, not also
// for a Node.js 0.x or 4–6, whose pattern costs seconds of CPU on every
// file named node (classifierConfig, BenchmarkNodeClassifier).
//
// It is the imagectl-sbom command's, in that command's own module: the
// request and result types, and running the command, are package
// github.com/imagectl/imagectl/sbom, which does not link syft.
package scan
