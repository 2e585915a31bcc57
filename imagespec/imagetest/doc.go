// Package imagetest builds realistic fake imagectl images in memory with
// go-containerregistry for tests: per platform, random base layers plus a
// layer holding /config/extensions (package.json, .vsixmanifest and
// code-server's extensions.json per extension) and a site-packages with ray
// and debugpy dist-info METADATA, a config carrying the dev.imagectl.* labels,
// and optionally BuildKit-style provenance attestation manifests in the index.
// Specs are plain data so a test can break exactly one thing.
package imagetest
