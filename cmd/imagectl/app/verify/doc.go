// Package verify is imagectl verify: checks a published image's signatures,
// attestations, repository, contents, lock and SBOM (package verify).
package verify
