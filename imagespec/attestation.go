package imagespec

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BuildKit marks the attestation manifests it adds to an index with these
// descriptor annotations (and the platform unknown/unknown).
const (
	// AnnotationReferenceDigest names the image manifest an attestation
	// manifest describes.
	AnnotationReferenceDigest = "vnd.docker.reference.digest"
)

// IsAttestationManifest reports whether an index entry is an attestation
// manifest (BuildKit's, or one shaped like it) rather than a runnable image:
// it carries AnnotationReferenceType=ReferenceTypeAttestation, or it is a
// manifest (not an index) for the platform unknown/unknown.
func IsAttestationManifest(d v1.Descriptor) bool {
	if d.Annotations[AnnotationReferenceType] == ReferenceTypeAttestation {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown" && !d.MediaType.IsIndex()
}

// AttestationSubject returns the digest of the image manifest an attestation
// manifest describes (its AnnotationReferenceDigest), or "" when d does not
// name one.
func AttestationSubject(d v1.Descriptor) string {
	if !IsAttestationManifest(d) {
		return ""
	}
	return d.Annotations[AnnotationReferenceDigest]
}
