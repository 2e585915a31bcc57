// Package keys loads the cosign key pair imagectl signs and verifies with:
// the public key (cosign.pub, PEM) and the encrypted private key
// (cosign.key, as `cosign generate-key-pair` writes it). sign, verify and
// the build path read keys through it.
package keys
