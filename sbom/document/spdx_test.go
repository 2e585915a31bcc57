package document_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	spdxjson "github.com/spdx/tools-golang/json"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/sbom/document"
)

func TestSPDX(t *testing.T) {
	in := document.SBOMInputFromLock(imagetest.Default().Lock(), "docker.io/example/code-server-ray", time.Unix(1748736000, 0))
	a, err := document.SPDX(in, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := document.SPDX(in, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("SPDX output differs between two runs on the same input")
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Created     struct {
			Created string `json:"created"`
		} `json:"creationInfo"`
		Packages []struct {
			Name    string `json:"name"`
			Version string `json:"versionInfo"`
			Comment string `json:"comment"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range doc.Packages {
		got = append(got, p.Name+"@"+p.Version)
	}
	want := []string{
		"docker.io/example/code-server-ray@4.101.2-ray2.46.0-py3.12",
		"lscr.io/linuxserver/code-server:4.101.2@",
		"code-server@4.101.2",
		"ms-python.debugpy@2025.10.0",
		"ms-python.python@2025.10.0",
		"anyscalecompute.ray-distributed-debugger@0.1.4",
		"python@3.12",
		"ray@2.46.0",
		"debugpy@1.8.14",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SPDX packages (-want +got):\n%s", diff)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.Created.Created != "2025-06-01T00:00:00Z" {
		t.Errorf("spdxVersion %q created %q", doc.SPDXVersion, doc.Created.Created)
	}
	idx, err := document.SPDX(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(idx, []byte(`"name": "ms-python.python"`)) != 2 {
		t.Errorf("index SBOM should list ms-python.python once per platform:\n%s", idx)
	}
	// SPDX encodes as spdx/tools-golang's json.Write does (indented by two
	// spaces), which the binary does not link: its document, written again
	// by json.Write, is the same bytes.
	for _, out := range [][]byte{a, idx} {
		var parsed spdx.Document
		if err := json.Unmarshal(out, &parsed); err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		if err := spdxjson.Write(&parsed, &again, spdxjson.Indent("  ")); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(again.String(), string(out)); diff != "" {
			t.Errorf("SPDX's bytes differ from spdx/tools-golang json.Write's (-json.Write +SPDX):\n%s", diff)
		}
	}
}

// With a locked closure, each platform's SBOM lists that platform's wheels
// (with sha256 and URL); the index's lists every platform's.
func TestSPDXFromLockWithClosure(t *testing.T) {
	set := imagetest.Default().Lock()
	wheel := func(name, version, file string, c byte) imagespec.PythonDist {
		return imagespec.PythonDist{Name: name, Version: version, Filename: file, URL: "https://files.example/" + file, SHA256: strings.Repeat(string(c), 64)}
	}
	set.PythonLocks = map[string][]imagespec.PythonDist{
		"linux/amd64": {wheel("aiosignal", "1.3.1", "aiosignal-1.3.1-py3-none-any.whl", 'a'), wheel("frozenlist", "1.4.1", "frozenlist-1.4.1-cp312-cp312-manylinux2014_x86_64.whl", '1')},
		"linux/arm64": {wheel("aiosignal", "1.3.1", "aiosignal-1.3.1-py3-none-any.whl", 'a'), wheel("frozenlist", "1.4.1", "frozenlist-1.4.1-cp312-cp312-manylinux2014_aarch64.whl", '2')},
	}
	in := document.SBOMInputFromLock(set, "docker.io/example/code-server-ray", time.Unix(1748736000, 0))
	pyPackages := func(platform string) []string {
		t.Helper()
		b, err := document.SPDX(in, platform)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Packages []struct {
				Name      string `json:"name"`
				Version   string `json:"versionInfo"`
				Download  string `json:"downloadLocation"`
				Checksums []struct {
					Value string `json:"checksumValue"`
				} `json:"checksums"`
				Refs []struct {
					Locator string `json:"referenceLocator"`
				} `json:"externalRefs"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range doc.Packages {
			if len(p.Refs) == 0 || !strings.HasPrefix(p.Refs[0].Locator, "pkg:pypi/") {
				continue
			}
			sum := ""
			if len(p.Checksums) > 0 {
				sum = p.Checksums[0].Value[:1]
			}
			out = append(out, p.Name+"@"+p.Version+" "+sum+" "+p.Download)
		}
		return out
	}
	want := []string{"aiosignal@1.3.1 a https://files.example/aiosignal-1.3.1-py3-none-any.whl", "frozenlist@1.4.1 2 https://files.example/frozenlist-1.4.1-cp312-cp312-manylinux2014_aarch64.whl"}
	if diff := cmp.Diff(want, pyPackages("linux/arm64")); diff != "" {
		t.Errorf("arm64 SBOM python packages (-want +got):\n%s", diff)
	}
	if got := pyPackages(""); len(got) != 3 {
		t.Errorf("index SBOM python packages %v, want aiosignal once and frozenlist per platform", got)
	}
}
