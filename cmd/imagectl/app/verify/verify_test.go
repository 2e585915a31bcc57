package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// verify refuses a copy of a signed image (with its signatures) in another
// repository, naming the signed repository, unless --allow-repository
// accepts it as a mirror.
func TestVerifyAllowRepository(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	image := reg + "/code-server-ray:ray2.46.0"
	root, err := imagetest.Default().Push(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "verify-allow-repository")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := app.Run(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errs := run("sign", "--generate-key", filepath.Join(dir, "k")); code != 0 {
		t.Fatalf("generate-key: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run("sign", image, "--key", filepath.Join(dir, "k.key"), "--sbom-from-lock"); code != 0 {
		t.Fatalf("sign: exit %d\n%s%s", code, out, errs)
	}
	// Copy the index (with its platform manifests) and every .sig and .att tag.
	copyRef := reg + "/evil/other:ray2.46.0"
	if err := crane.Copy(image, copyRef); err != nil {
		t.Fatal(err)
	}
	tags, err := crane.ListTags(reg + "/code-server-ray")
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, tag := range tags {
		if strings.HasSuffix(tag, ".sig") || strings.HasSuffix(tag, ".att") {
			if err := crane.Copy(reg+"/code-server-ray:"+tag, reg+"/evil/other:"+tag); err != nil {
				t.Fatal(err)
			}
			copied++
		}
	}
	if copied != 6 {
		t.Fatalf("copied %d signature and attestation tags, want 6 (index and 2 platforms, each signed and attested)", copied)
	}
	pub := filepath.Join(dir, "k.pub")
	signedRepo := reg + "/code-server-ray"

	if code, out, errs := run("verify", image, "--key", pub); code != 0 {
		t.Fatalf("verify of the signed image: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run("verify", copyRef, "--key", pub)
	if code != 1 {
		t.Fatalf("verify of the copy: exit %d, want 1\n%s%s", code, out, errs)
	}
	if want := "signed for repository " + signedRepo + ", not " + reg + "/evil/other"; !strings.Contains(out, want) || !strings.Contains(out, "--allow-repository "+signedRepo) {
		t.Errorf("verify of the copy does not say %q and how to accept a mirror:\n%s%s", want, out, errs)
	}
	if code, out, errs := run("verify", copyRef, "--key", pub, "--allow-repository", reg+"/elsewhere"); code != 1 {
		t.Errorf("verify of the copy allowing another repository: exit %d, want 1\n%s%s", code, out, errs)
	}
	if code, out, errs := run("verify", copyRef, "--key", pub, "--allow-repository", reg+"/elsewhere", "--allow-repository", signedRepo); code != 0 {
		t.Errorf("verify of the copy as a mirror of %s: exit %d, want 0\n%s%s", signedRepo, code, out, errs)
	}
	if code, _, errs := run("verify", root.String(), "--key", pub, "--allow-repository", signedRepo+":latest"); code != 2 || !strings.Contains(errs, `--allow-repository "`+signedRepo+`:latest"`) {
		t.Errorf("verify --allow-repository with a tag: exit %d, want 2 naming the flag (%s)", code, errs)
	}
}

// verify -o json prints its report also when the image cannot be read, in
// the shape of every other report.
func TestVerifyJSONOnFailure(t *testing.T) {
	reg := testutil.Registry(t)
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "verify-json")
	if code, _, errs := apptest.Run(t, "sign", "--generate-key", filepath.Join(dir, "k")); code != 0 {
		t.Fatalf("generate-key: exit %d\n%s", code, errs)
	}
	code, out, errs := apptest.Run(t, "verify", reg+"/no/such:image", "--key", filepath.Join(dir, "k.pub"), "-o", "json")
	if code != options.ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, options.ExitFailure, errs)
	}
	var rep struct {
		Ref      string `json:"ref"`
		OK       bool   `json:"ok"`
		Failures []struct {
			Check, Message string
		} `json:"failures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%q", err, out)
	}
	if rep.OK || rep.Ref != reg+"/no/such:image" || len(rep.Failures) != 1 || rep.Failures[0].Check != "read" || !strings.Contains(rep.Failures[0].Message, "no/such") {
		t.Errorf("report %+v, want not ok with one read failure naming the image", rep)
	}
}

// A failed verify prints its failures once: the report on stdout lists
// them, and stderr says the image does not verify in one line.
func TestVerifyFailuresPrintedOnce(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	image := reg + "/unsigned:v1"
	if _, err := imagetest.Default().Push(ctx, image); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "verify-once")
	if code, _, errs := apptest.Run(t, "sign", "--generate-key", filepath.Join(dir, "k")); code != 0 {
		t.Fatalf("generate-key: exit %d\n%s", code, errs)
	}
	code, out, errs := apptest.Run(t, "verify", image, "--key", filepath.Join(dir, "k.pub"), "--skip-contents")
	if code != options.ExitFailure || !strings.Contains(out, "FAILED: ") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if n := strings.Count(errs, "\n"); n != 1 || !strings.Contains(errs, image+" does not verify") || !strings.Contains(errs, "listed in the report above") {
		t.Errorf("stderr %q: want one line saying it does not verify, pointing at the report", errs)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  - ") && strings.Contains(errs, strings.TrimPrefix(l, "  - ")) {
			t.Errorf("failure %q is printed on stdout and stderr", l)
		}
	}
}
