// Package attest reads the in-toto statements and DSSE envelopes imagectl
// meets: BuildKit's attestation-manifest layers (a bare statement) and
// cosign's attestations (a statement in a DSSE envelope). The statement's
// header is in-toto-golang's and the envelope go-securesystemslib's; the
// predicate is kept as the bytes read, so a predicate passed on (attested
// again, read as an SBOM) is exactly the one the statement carried.
//
// The predicate types are imagespec's (PredicateSPDX, ...). cosign writes
// the statements imagectl signs; this package only reads.
package attest
