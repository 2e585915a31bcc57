package sign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
	if rep.OK || len(rep.Failures) == 0 || !strings.Contains(errs, "linux/arm64") {
		t.Errorf("verify with another key: ok=%v failures=%v stderr=%s", rep.OK, rep.Failures, errs)
	}

	if code, _, errs := run("verify", image); code != 2 {
		t.Errorf("verify without --key: exit %d, want 2 (%s)", code, errs)
	}
}
