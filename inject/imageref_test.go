package inject

import (
	"strings"
	"testing"
)

func TestImageWithoutDebugpy(t *testing.T) {
	d := "@sha256:" + strings.Repeat("a", 64)
	for ref, want := range map[string]bool{
		"rayproject/ray":                        true,
		"rayproject/ray:2.46.0-py312-gpu":       true,
		"docker.io/rayproject/ray:2.46.0":       true,
		"index.docker.io/rayproject/ray-ml:2.9": true,
		"rayproject/ray:2.46.0" + d:             true,
		"rayproject/ray" + d:                    true,
		"rayproject/ray-extra:2.46.0":           false,
		"localhost:5000/rayproject/ray:2.46.0":  false,
		"ghcr.io/rayproject/ray:2.46.0":         false,
		"example/code-server-ray:ray2.46.0":     false,
		":2.46.0":                               false,
		"":                                      false,
	} {
		if got := imageWithoutDebugpy(ref); got != want {
			t.Errorf("imageWithoutDebugpy(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestImageTag(t *testing.T) {
	d := "@sha256:" + strings.Repeat("a", 64)
	for ref, want := range map[string]string{
		"rayproject/ray:2.46.0":        "2.46.0",
		"rayproject/ray:2.46.0" + d:    "2.46.0",
		"rayproject/ray" + d:           "",
		"localhost:5000/ray":           "",
		"localhost:5000/ray:2.9.3" + d: "2.9.3",
		"rayproject/ray:":              "",
		"not a reference:2.46.0":       "",
		"":                             "",
	} {
		if got := imageTag(ref); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", ref, got, want)
		}
	}
}
