// Package document reads and writes the SBOM documents imagectl handles,
// without scanning anything and without linking syft:
//
//   - Packages reads the packages of an SPDX 2.x JSON or CycloneDX JSON
//     document (name, version, purl, sha256, declared licence), for
//     imagectl verify's check that every locked distribution and extension
//     is in the SBOM with the locked version;
//   - SPDX writes the SPDX 2.3 JSON document of an image from what the lock
//     says it contains (SBOMInputFromLock), per platform or for the index,
//     reproducibly: its creation time is the build's SOURCE_DATE_EPOCH.
//
// The scanner that makes an SBOM from an image's content is package sbom.
package document
