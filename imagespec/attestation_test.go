package imagespec

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestIsAttestationManifest(t *testing.T) {
	unknown := &v1.Platform{OS: "unknown", Architecture: "unknown"}
	amd64 := &v1.Platform{OS: "linux", Architecture: "amd64"}
	buildkit := map[string]string{AnnotationReferenceType: ReferenceTypeAttestation, AnnotationReferenceDigest: "sha256:aa"}
	for _, tc := range []struct {
		name    string
		d       v1.Descriptor
		want    bool
		subject string
	}{
		{"buildkit attestation", v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: unknown, Annotations: buildkit}, true, "sha256:aa"},
		{"annotated without platform", v1.Descriptor{MediaType: types.OCIManifestSchema1, Annotations: buildkit}, true, "sha256:aa"},
		{"unknown/unknown manifest without annotations", v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: unknown}, true, ""},
		{"unknown/unknown docker manifest", v1.Descriptor{MediaType: types.DockerManifestSchema2, Platform: unknown}, true, ""},
		{"unknown/unknown OCI index", v1.Descriptor{MediaType: types.OCIImageIndex, Platform: unknown}, false, ""},
		{"unknown/unknown docker list", v1.Descriptor{MediaType: types.DockerManifestList, Platform: unknown}, false, ""},
		{"platform image", v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: amd64}, false, ""},
		{"platform image with a stray digest annotation", v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: amd64, Annotations: map[string]string{AnnotationReferenceDigest: "sha256:aa"}}, false, ""},
		{"unknown OS only", v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "unknown", Architecture: "amd64"}}, false, ""},
		{"no platform", v1.Descriptor{MediaType: types.OCIManifestSchema1}, false, ""},
	} {
		if got := IsAttestationManifest(tc.d); got != tc.want {
			t.Errorf("%s: IsAttestationManifest = %v, want %v", tc.name, got, tc.want)
		}
		if got := AttestationSubject(tc.d); got != tc.subject {
			t.Errorf("%s: AttestationSubject = %q, want %q", tc.name, got, tc.subject)
		}
	}
}
