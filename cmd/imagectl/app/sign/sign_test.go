package sign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

// TestSignVerifyCLI drives `imagectl sign` and `imagectl verify` against an
// in-process registry, as the e2e script does against a real one.
func TestSignVerifyCLI(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	image := reg + "/code-server-ray:ray2.46.0"
	if _, err := imagetest.Default().Push(ctx, image); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const password = "S3cr3t-Passw0rd-zq"
	t.Setenv("COSIGN_PASSWORD", password)

	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := app.Run(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, p := range []string{"good", "other"} {
		if code, out, errs := run("sign", "--generate-key", filepath.Join(dir, p)); code != 0 {
			t.Fatalf("generate-key %s: exit %d\n%s%s", p, code, out, errs)
		}
	}
	if code, out, errs := run("sign", "--generate-key", filepath.Join(dir, "good")); code == 0 {
		t.Errorf("--generate-key overwrote an existing key:\n%s%s", out, errs)
	}

	code, out, errs := run("sign", image, "--key", filepath.Join(dir, "good.key"), "--sbom-from-lock", "--output", "json")
	if code != 0 {
		t.Fatalf("sign: exit %d\n%s%s", code, out, errs)
	}
	var signed struct {
		Signed struct {
			Targets []struct{ Digest, Platform, Tag string }
		} `json:"signed"`
		SBOM struct {
			Targets []struct{ Digest, Platform, Tag string }
		} `json:"sbom"`
	}
	if err := json.Unmarshal([]byte(out), &signed); err != nil {
		t.Fatalf("sign --output json: %v\n%s", err, out)
	}
	if len(signed.Signed.Targets) != 3 || len(signed.SBOM.Targets) != 3 {
		t.Errorf("signed %d and attested %d manifests, want 3 and 3:\n%s", len(signed.Signed.Targets), len(signed.SBOM.Targets), out)
	}
	if strings.Contains(out+errs, password) {
		t.Errorf("sign printed the key password:\n%s%s", out, errs)
	}

	code, out, errs = run("verify", image, "--key", filepath.Join(dir, "good.pub"))
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "OK: verified") {
		t.Errorf("verify text output lacks the verdict:\n%s", out)
	}

	code, out, errs = run("verify", image, "--key", filepath.Join(dir, "other.pub"), "--output", "json")
	if code != 1 {
		t.Fatalf("verify with another key: exit %d, want 1\n%s%s", code, out, errs)
	}
	var rep struct {
		OK       bool
		Failures []struct{ Check, Platform, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify --output json: %v\n%s", err, out)
	}
	// The failures are in the report (stdout); stderr says it does not
	// verify, once.
	arm64 := false
	for _, f := range rep.Failures {
		arm64 = arm64 || f.Platform == "linux/arm64"
	}
	if rep.OK || !arm64 || !strings.Contains(errs, "does not verify") || strings.Contains(errs, "linux/arm64") {
		t.Errorf("verify with another key: ok=%v failures=%v stderr=%s", rep.OK, rep.Failures, errs)
	}

	if code, _, errs := run("verify", image); code != 2 {
		t.Errorf("verify without --key: exit %d, want 2 (%s)", code, errs)
	}
}

// A single-platform image (a manifest, not an index) is called a manifest
// in sign's report.
func TestSignSingleManifestIsNoIndex(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	img, err := imagetest.RandomPlatformImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg + "/single:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "S3cr3t-Passw0rd-zq")
	var out, errb bytes.Buffer
	if code := app.Run(ctx, []string{"sign", "--generate-key", filepath.Join(dir, "k")}, &out, &errb); code != 0 {
		t.Fatalf("generate-key: exit %d\n%s", code, errb.String())
	}
	out.Reset()
	if code := app.Run(ctx, []string{"sign", ref.String(), "--key", filepath.Join(dir, "k.key")}, &out, &errb); code != 0 {
		t.Fatalf("sign: exit %d\n%s", code, errb.String())
	}
	if strings.Contains(out.String(), "index") || !strings.Contains(out.String(), "  manifest ") {
		t.Errorf("sign of a single manifest calls it:\n%s", out.String())
	}
}

// --generate-key without a password names both ways to give one; an empty
// COSIGN_PASSWORD writes a key no password protects, with a warning.
func TestGenerateKeyPassword(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := app.Run(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	t.Setenv("COSIGN_PASSWORD", "") // restored after the test
	os.Unsetenv("COSIGN_PASSWORD")
	code, _, errOut := run("sign", "--generate-key", filepath.Join(dir, "a"))
	if code != 1 || !strings.Contains(errOut, "set COSIGN_PASSWORD") || !strings.Contains(errOut, "--key-password-file FILE") {
		t.Errorf("no password: exit %d, stderr %q; want 1 naming COSIGN_PASSWORD and --key-password-file", code, errOut)
	}
	t.Setenv("COSIGN_PASSWORD", "")
	code, _, errOut = run("sign", "--generate-key", filepath.Join(dir, "b"))
	if want := "imagectl: warning: the key password is empty: " + filepath.Join(dir, "b.key") + " is protected by no password"; code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("empty COSIGN_PASSWORD: exit %d, stderr %q; want 0 and %q", code, errOut, want)
	}
}
