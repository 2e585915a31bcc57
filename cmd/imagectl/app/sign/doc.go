// Package sign is imagectl sign: signs an image (and its SBOM attestation) with a
// cosign key or keylessly, or generates a key pair.
package sign
