// Package sign signs imagectl images with cosign's library: the image index
// AND every platform manifest get a simple-signing signature stored at the
// sha256-<hex>.sig tag next to the image, exactly where plain
// `cosign verify` looks for it. An SBOM can be attached to the same digests as
// a signed in-toto attestation (sha256-<hex>.att).
//
// Key mode loads an encrypted cosign private key (cosign.key, as written by
// `cosign generate-key-pair` or GenerateKeyPair) with a password from a file
// or COSIGN_PASSWORD; the password is never printed. Key mode never talks to a
// transparency log: nothing is uploaded to Rekor and no bundle is attached, so
// verifiers must ignore the tlog (`cosign verify --insecure-ignore-tlog`).
//
// Keyless mode (KeylessSigner) is for CI with an OIDC identity (GitHub
// Actions): an ephemeral key is certified by Fulcio and every signature is
// uploaded to Rekor; the certificate chain and the Rekor bundle are attached
// to the signature so `cosign verify --certificate-identity ...` accepts it.
// Fulcio certificates are valid 10 minutes and cosign checks a certificate
// against the time Rekor recorded the signature, so the certificate is
// obtained at the first signature and renewed, with a fresh OIDC token,
// before a signature is made with less than KeylessOptions.RenewMargin of
// validity left.
//
// BuildKit attestation manifests (imagespec.IsAttestationManifest: platform
// unknown/unknown, annotation vnd.docker.reference.type=attestation-manifest)
// are not signed by default: they are not runnable images, and their digests
// are part of the signed index manifest, so the index signature already
// covers them. WithAttestationManifests signs them too.
package sign
