package verify

import (
	"strings"
	"testing"
)

func TestSignedRepository(t *testing.T) {
	for _, tc := range []struct{ in, want, wantErr string }{
		{in: "127.0.0.1:5000/code-server-ray", want: "127.0.0.1:5000/code-server-ray"},
		{in: "ghcr.io/example/code-server-ray", want: "ghcr.io/example/code-server-ray"},
		{in: "docker.io/library/python", want: "index.docker.io/library/python"},
		{in: "index.docker.io/example/x", want: "index.docker.io/example/x"},
		// cosign sign --sign-container-identity may sign a tag or digest.
		{in: "ghcr.io/example/code-server-ray:ray2.46.0", want: "ghcr.io/example/code-server-ray"},
		{in: "ghcr.io/example/code-server-ray@sha256:" + strings.Repeat("a", 64), want: "ghcr.io/example/code-server-ray"},
		{in: "", wantErr: "names no repository"},
		{in: "Not A Reference", wantErr: `docker-reference "Not A Reference"`},
	} {
		got, err := signedRepository(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("signedRepository(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("signedRepository(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
