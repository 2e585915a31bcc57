package document_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/sbom/document"
)

var updateSPDX = flag.Bool("update-spdx", false, "rewrite testdata/spdx-*.json from document.SPDX")

// TestSPDXContent compares the SPDX documents, decoded, with the ones
// recorded in testdata: every field and value but documentNamespace (a
// digest of the document's encoding), so a change of encoder (key order,
// escaping) passes and a change of content does not.
func TestSPDXContent(t *testing.T) {
	set := imagetest.Default().Lock()
	set.CodeServer.Platforms = map[string]string{"linux/amd64": "sha256:" + strings.Repeat("1", 64), "linux/arm64": "sha256:" + strings.Repeat("2", 64)}
	set.PythonLocks = map[string][]imagespec.PythonDist{
		"linux/amd64": {{Name: "aiosignal", Version: "1.3.1", URL: "https://files.example/aiosignal.whl", SHA256: strings.Repeat("a", 64)}},
		"linux/arm64": {{Name: "aiosignal", Version: "1.3.1", URL: "https://files.example/aiosignal.whl", SHA256: strings.Repeat("a", 64)},
			{Name: "Frozen_List", Version: "1.4.1", SHA256: strings.Repeat("2", 64)}},
	}
	in := document.SBOMInputFromLock(set, "docker.io/example/code-server-ray", time.Unix(1748736000, 0))
	for _, platform := range []string{"linux/arm64", ""} {
		name := "spdx-" + strings.NewReplacer("/", "-").Replace(platform) + ".json"
		if platform == "" {
			name = "spdx-index.json"
		}
		t.Run(name, func(t *testing.T) {
			b, err := document.SPDX(in, platform)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name)
			if *updateSPDX {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			decode := func(b []byte) map[string]any {
				t.Helper()
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				ns, _ := m["documentNamespace"].(string)
				if !strings.HasPrefix(ns, "https://imagectl.dev/spdx/docker.io-example-code-server-ray-") {
					t.Errorf("documentNamespace %q", ns)
				}
				delete(m, "documentNamespace")
				return m
			}
			if diff := cmp.Diff(decode(want), decode(b)); diff != "" {
				t.Errorf("SPDX document (-recorded +now):\n%s", diff)
			}
		})
	}
}

// The base image's purl names its repository without tag or digest, and its
// last path element.
func TestSPDXBasePURL(t *testing.T) {
	d := "sha256:" + strings.Repeat("2", 64)
	for base, want := range map[string]string{
		"lscr.io/linuxserver/code-server:4.101.2": "pkg:oci/code-server@sha256%3A" + strings.Repeat("2", 64) + "?repository_url=lscr.io/linuxserver/code-server&platform=linux%2Farm64",
		"ubuntu:22.04":               "pkg:oci/ubuntu@sha256%3A" + strings.Repeat("2", 64) + "?repository_url=ubuntu&platform=linux%2Farm64",
		"localhost:5000/code-server": "pkg:oci/code-server@sha256%3A" + strings.Repeat("2", 64) + "?repository_url=localhost:5000/code-server&platform=linux%2Farm64",
		"localhost:5000/cs:4.101.2@sha256:" + strings.Repeat("9", 64): "pkg:oci/cs@sha256%3A" + strings.Repeat("2", 64) + "?repository_url=localhost:5000/cs&platform=linux%2Farm64",
	} {
		in := document.SBOMInput{ImageName: "r.example/x", BaseName: base, BaseDigests: map[string]string{"linux/arm64": d}}
		b, err := document.SPDX(in, "linux/arm64")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Packages []struct {
				Refs []struct {
					Locator string `json:"referenceLocator"`
				} `json:"externalRefs"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Packages) < 2 || len(doc.Packages[1].Refs) != 1 || doc.Packages[1].Refs[0].Locator != want {
			t.Errorf("base %s: packages %+v, want the base's purl %s", base, doc.Packages, want)
		}
	}
}
