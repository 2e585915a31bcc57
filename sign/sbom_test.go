package sign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/internal/testimage"
	"github.com/imagectl/imagectl/sign"
)

func TestSPDX(t *testing.T) {
	in := sign.SBOMInputFromLock(testimage.Default().Lock(), "docker.io/example/code-server-ray", time.Unix(1748736000, 0))
	a, err := sign.SPDX(in, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.SPDX(in, "linux/arm64")
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
	idx, err := sign.SPDX(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(idx, []byte(`"name": "ms-python.python"`)) != 2 {
		t.Errorf("index SBOM should list ms-python.python once per platform:\n%s", idx)
	}
}

func TestAttestSBOMFileRejectsNonSBOM(t *testing.T) {
	s, _, _ := newKey(t)
	if _, err := sign.AttestSBOMFile(context.Background(), "127.0.0.1:1/x:y", s, []byte(`{"hello":"world"}`)); err == nil {
		t.Error("AttestSBOMFile accepted a document that is neither SPDX nor CycloneDX")
	}
}
