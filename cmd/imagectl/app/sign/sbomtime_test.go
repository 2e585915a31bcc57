package sign_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/buildtest"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
)

// `build --push` then `sign --sbom-from-lock` dates the SBOM as
// `build --sign` does: with the image's creation time (its config's
// created, the build's SOURCE_DATE_EPOCH), even when sign runs with
// another SOURCE_DATE_EPOCH.
func TestSignSBOMTimeIsTheBuildsTime(t *testing.T) {
	ctx := context.Background()
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("COSIGN_PASSWORD", "sbom-time-test")
	dir := t.TempDir()
	if code, _, errOut := apptest.Run(t, "sign", "--generate-key", filepath.Join(dir, "k")); code != 0 {
		t.Fatalf("sign --generate-key: exit %d: %s", code, errOut)
	}
	signer, err := sign.LoadKey(ctx, filepath.Join(dir, "k.key"), sign.PasswordFromEnv())
	if err != nil {
		t.Fatal(err)
	}

	built := time.Unix(1752537600, 0).UTC()
	req := pinnedBuildRequest(t, built)
	req.Publish = pipeline.PublishOptions{Repo: host + "/signed-by-build", Push: true}
	req.Sign = pipeline.SignOptions{Signer: signer, SBOMFromLock: true}
	byBuild, err := pipeline.Run(ctx, &buildtest.Builder{}, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Publish.Repo, req.Sign = host+"/signed-later", pipeline.SignOptions{}
	pushed, err := pipeline.Run(ctx, &buildtest.Builder{}, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1600000000") // another time: the image's wins
	code, _, errOut := apptest.Run(t, "sign", pushed.Ref, "--key", filepath.Join(dir, "k.key"), "--sbom-from-lock")
	if code != 0 {
		t.Fatalf("sign --sbom-from-lock: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "SOURCE_DATE_EPOCH=1600000000 is not the image's creation time 2025-07-15T00:00:00Z") {
		t.Errorf("sign did not warn about the other SOURCE_DATE_EPOCH: %q", errOut)
	}
	a, b := attestedSBOMCreated(t, byBuild.Ref), attestedSBOMCreated(t, pushed.Ref)
	if a != built.Format(time.RFC3339) || b != a {
		t.Errorf("SBOM created %q by build --sign and %q by sign --sbom-from-lock, want both %s", a, b, built.Format(time.RFC3339))
	}
}

// pinnedBuildRequest is a build of the committed matrix.yaml and catalog
// (base digests pinned, no extensions) at epoch.
func pinnedBuildRequest(t *testing.T, epoch time.Time) pipeline.Request {
	t.Helper()
	cfg, err := matrix.Load(apptest.RepoMatrix)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(apptest.RepoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cat.CodeServer {
		cat.CodeServer[i].Platforms = map[string]string{
			"linux/amd64": "sha256:" + strings.Repeat("1", 64), "linux/arm64": "sha256:" + strings.Repeat("2", 64),
		}
	}
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: "2.46.0"})
	if err != nil {
		t.Fatal(err)
	}
	set.Extensions = nil
	def, err := build.NewDefinition(cfg, build.Overrides{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The set has no extensions, so nothing is downloaded; the galleries are
	// a closed loopback port, where a download would fail at once.
	closed := options.UpstreamOptions{Marketplace: "http://127.0.0.1:1", OpenVSX: "http://127.0.0.1:1"}
	sources := closed.ExtensionSources(cfg, http.DefaultClient).Fetch()
	return pipeline.Request{Matrix: cfg, Definition: def, Set: &set, SourceDateEpoch: epoch, Extensions: pipeline.ExtensionOptions{Cache: c, Sources: sources}}
}

// attestedSBOMCreated is the creationInfo.created of the SPDX SBOM attested to
// ref (a digest), read from its cosign attestation image.
func attestedSBOMCreated(t *testing.T, ref string) string {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	att := d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1) + ".att")
	img, err := remote.Image(att)
	if err != nil {
		t.Fatalf("attestations of %s: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Payload string }
		err = json.NewDecoder(rc).Decode(&env)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			PredicateType string `json:"predicateType"`
			Predicate     struct {
				CreationInfo struct{ Created string } `json:"creationInfo"`
			} `json:"predicate"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(st.PredicateType, "https://spdx.dev/") {
			return st.Predicate.CreationInfo.Created
		}
	}
	t.Fatalf("no SPDX attestation on %s", ref)
	return ""
}
