package pipeline

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/build/buildtest"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

// happyInputs is a request for the committed matrix.yaml and catalog.json
// (base pinned) whose set installs two fixture extensions (one universal,
// one per platform) served by a fake Marketplace, and the fake's
// statistics.
func happyInputs(t *testing.T) (Request, *gallerytest.Fake) {
	t.Helper()
	cfg, cat, def := pinnedInputs(t)
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: "2.46.0"})
	if err != nil {
		t.Fatal(err)
	}
	builds, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	sha := map[string]string{}
	for _, b := range builds {
		sha[b.ID+"@"+b.Version+"@"+b.TargetPlatform] = b.SHA256()
	}
	file := func(id, version, tp string) imagespec.File {
		s := sha[id+"@"+version+"@"+tp]
		if s == "" {
			t.Fatalf("no fixture VSIX %s@%s (%s)", id, version, tp)
		}
		return imagespec.File{TargetPlatform: tp, SHA256: s}
	}
	ray := file("anyscalecompute.ray-distributed-debugger", "0.1.4", "universal")
	set.Extensions = []imagespec.Extension{
		{ID: "ms-python.debugpy", Version: "2025.10.0", Source: matrix.SourceMarketplace, Files: map[string]imagespec.File{
			"linux/amd64": file("ms-python.debugpy", "2025.10.0", "linux-x64"),
			"linux/arm64": file("ms-python.debugpy", "2025.10.0", "linux-arm64"),
		}},
		{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Source: matrix.SourceMarketplace, Files: map[string]imagespec.File{
			"linux/amd64": ray, "linux/arm64": ray,
		}},
	}
	g := gallerytest.New(builds)
	t.Cleanup(g.Close)
	c, err := cache.Open(t.TempDir(), cache.WithIdentify(cache.IdentifyVSIX))
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		Matrix: cfg, Definition: def, Set: &set, Revision: "0123abc",
		SourceDateEpoch: time.Unix(1752537600, 0),
		Extensions: ExtensionOptions{Cache: c, Sources: map[string]extensions.Source{
			matrix.SourceMarketplace: marketplace.New(marketplace.WithBaseURL(g.MarketplaceURL())),
		}, Options: []extensions.Option{extensions.WithRequirePins(true)}},
	}, g
}

// newRegistry starts an in-process registry and returns its host:port; the
// docker config is empty (the registry takes anonymous pushes).
func newRegistry(t *testing.T) string {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	return testutil.Registry(t)
}

// The whole build with a fake build.Interface and an in-process registry:
// it resolves, fetches the extension files, lays out both platforms, solves
// them (the second platform prepared, then pushed in turn), pushes the
// index and its versioned tag only, and signs the index and both platform
// manifests with their SBOM and provenance attestations. An archive build
// of the same request writes the same index into an OCI archive.
func TestRunPublishesAndSigns(t *testing.T) {
	ctx := context.Background()
	host := newRegistry(t)
	req, g := happyInputs(t)
	req.Publish = PublishOptions{Repo: host + "/team/code-server-ray", Push: true}
	req.Solve.Provenance = true
	req.Sign = SignOptions{Signer: signerForTest(t), SBOMFromLock: true}
	fake := &buildtest.Builder{}
	res, err := Run(ctx, fake, req)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, s := range res.Stages {
		stages = append(stages, s.Name)
	}
	if diff := cmp.Diff([]string{"resolve", "published", "preflight", "fetch", "layout", "key", "solve", "publish", "sign"}, stages); diff != "" {
		t.Errorf("stages timed (-want +got):\n%s", diff)
	}

	// Each extension file was downloaded once, though installed on both
	// platforms: three files.
	if n := len(g.Requests()); n == 0 || g.Stats().Downloads != 3 {
		t.Errorf("fake Marketplace served %d downloads (%d requests), want 3", g.Stats().Downloads, n)
	}
	var solves []string
	for _, c := range fake.Calls() {
		kind := "push"
		if c.Spec.Prepare {
			kind = "prepare"
		}
		solves = append(solves, c.Spec.Platform+" "+kind)
	}
	slices.Sort(solves[:2]) // the first round runs concurrently
	if diff := cmp.Diff([]string{"linux/amd64 push", "linux/arm64 prepare", "linux/arm64 push"}, solves); diff != "" {
		t.Errorf("solves (-want +got):\n%s", diff)
	}
	checkContexts(t, req, fake.Calls()[0])

	repo, err := name.NewRepository(req.Publish.Repo)
	if err != nil {
		t.Fatal(err)
	}
	versioned := res.Set.Tags[0]
	if diff := cmp.Diff([]string{versioned}, res.Tags); diff != "" {
		t.Errorf("Result.Tags (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(versioned, res.InputsDigest[len("sha256:"):len("sha256:")+12]) {
		t.Errorf("versioned tag %s does not carry the inputs digest %s", versioned, res.InputsDigest)
	}
	tags, err := remote.List(repo)
	if err != nil {
		t.Fatal(err)
	}
	var imageTags []string
	for _, tg := range tags {
		if !strings.HasPrefix(tg, "sha256-") {
			imageTags = append(imageTags, tg)
		}
	}
	if diff := cmp.Diff([]string{versioned}, imageTags); diff != "" {
		t.Errorf("tags in the registry (-want +got), floating ones are release's:\n%s", diff)
	}
	tagged, err := remote.Head(repo.Tag(versioned))
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref != repo.Digest(tagged.Digest.String()).String() || res.Index != tagged.Digest.String() {
		t.Errorf("Result %s (%s), but the tag names %s", res.Ref, res.Index, tagged.Digest)
	}
	checkIndex(t, repo, res, req.SourceDateEpoch)

	// Signed: imagectl verify (signatures of the index and every platform,
	// SBOM and provenance attestations, labels) passes with the key.
	rep := verifyWithKey(t, ctx, req.Sign.Signer, res.Ref)
	if !rep.OK || res.Signed == nil || len(res.Signed.Targets) != 3 {
		t.Errorf("verify: ok=%v failures=%v; signed %+v, want the index and both platforms", rep.OK, rep.Failures, res.Signed)
	}
	for _, p := range res.Platforms {
		if p.SBOM == nil || p.SBOM.Source != "lock" {
			t.Errorf("%s: SBOM %+v, want one from the lock", p.Platform, p.SBOM)
		}
	}

	// The same request without Push writes the same index to an archive.
	req.Publish = PublishOptions{Repo: req.Publish.Repo, DistDir: t.TempDir()}
	req.Sign = SignOptions{}
	ares, err := Run(ctx, &buildtest.Builder{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(req.Publish.DistDir, "code-server-ray-"+versioned+".oci.tar"); ares.Archive != want || ares.Ref != want {
		t.Errorf("archive %q (ref %q), want %q", ares.Archive, ares.Ref, want)
	}
	if ares.Index != res.Index || len(ares.Tags) != 0 {
		t.Errorf("archive index %s (tags %v), want the pushed index %s and no tag", ares.Index, ares.Tags, res.Index)
	}
	if got := archiveIndex(t, ares.Archive); got != res.Index {
		t.Errorf("archive's index.json names %s, want %s", got, res.Index)
	}
}

// checkContexts checks what the layout stage gave one platform's solve:
// the rendered definition, settings.json from matrix.yaml and both
// extensions (folders and extensions.json).
func checkContexts(t *testing.T, req Request, c buildtest.Call) {
	t.Helper()
	r, err := req.Definition.Render(*req.Set)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := extensions.SettingsJSON(imagespec.ImageSettings(req.Matrix.Settings))
	if err != nil {
		t.Fatal(err)
	}
	var gotSettings, gotList []byte
	folders := 0
	for p, b := range c.Files {
		switch {
		case p == "dockerfile/Dockerfile" && string(b) != string(r.Definition):
			t.Errorf("%s: the Dockerfile is not the rendered definition", c.Spec.Platform)
		case strings.HasSuffix(p, "/settings.json"):
			gotSettings = b
		case strings.HasSuffix(p, "/"+extensions.ExtensionsJSON):
			gotList = b
		case strings.HasSuffix(p, "/.vsixmanifest"):
			folders++
		}
	}
	if string(gotSettings) != string(settings) {
		t.Errorf("%s: settings.json %q, want %q", c.Spec.Platform, gotSettings, settings)
	}
	var list []struct {
		Identifier struct{ ID string } `json:"identifier"`
	}
	if err := json.Unmarshal(gotList, &list); err != nil || len(list) != 2 || folders != 2 {
		t.Errorf("%s: extensions.json %s (%v), %d extension folders; want both extensions", c.Spec.Platform, gotList, err, folders)
	}
	if c.Spec.Labels[imagespec.LabelInputs] != r.Inputs || !c.Spec.SourceDateEpoch.Equal(req.SourceDateEpoch) {
		t.Errorf("%s: inputs label %q and epoch %v, want %s and %v", c.Spec.Platform, c.Spec.Labels[imagespec.LabelInputs], c.Spec.SourceDateEpoch, r.Inputs, req.SourceDateEpoch)
	}
}

// checkIndex checks the pushed index: both platform images, in the set's
// order, each the Result's digest, built at epoch with the inputs label,
// and each with its provenance referrer.
func checkIndex(t *testing.T, repo name.Repository, res *Result, epoch time.Time) {
	t.Helper()
	idx, err := remote.Index(repo.Digest(res.Index))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, m := range im.Manifests {
		got = append(got, m.Platform.String()+" "+m.Digest.String())
	}
	for _, p := range res.Platforms {
		want = append(want, p.Platform+" "+p.Digest)
	}
	if diff := cmp.Diff(want, got); diff != "" || len(got) != 2 {
		t.Fatalf("index manifests (-want +got):\n%s", diff)
	}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !cf.Created.Equal(epoch) || cf.Config.Labels[imagespec.LabelInputs] != res.InputsDigest {
			t.Errorf("%s: created %v, inputs label %q; want %v and %s", m.Platform, cf.Created, cf.Config.Labels[imagespec.LabelInputs], epoch, res.InputsDigest)
		}
		refs, err := remote.Referrers(repo.Digest(m.Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		rm, err := refs.IndexManifest()
		if err != nil || len(rm.Manifests) != 1 {
			t.Errorf("%s: referrers %v (%v), want the provenance attestation", m.Platform, rm, err)
		}
	}
}

// verifyWithKey verifies ref (signatures and attestations, contents
// skipped) with s's public key.
func verifyWithKey(t *testing.T, ctx context.Context, s *sign.Signer, ref string) *verify.Report {
	t.Helper()
	rep, err := verify.Image(ctx, ref, verify.WithVerifier(publicKey(t, s)), verify.WithSkipContents(true))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// publicKey is the verifier of s's public half.
func publicKey(t *testing.T, s *sign.Signer) signature.Verifier {
	t.Helper()
	pem, err := s.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	v, err := keys.PublicFromPEM(pem)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// archiveIndex returns the digest index.json of the OCI archive at p names.
func archiveIndex(t *testing.T, p string) string {
	t.Helper()
	b, ok := testutil.TarMember(t, p, "index.json")
	if !ok {
		t.Fatalf("%s has no index.json", p)
	}
	var im v1.IndexManifest
	if err := json.Unmarshal(b, &im); err != nil || len(im.Manifests) != 1 {
		t.Fatalf("%s index.json: %v, %+v", p, err, im)
	}
	return im.Manifests[0].Digest.String()
}

// Build runs every stage but sign and hands the sign stage on: signing the
// image later gives what Run's sign stage gives (verify passes with the
// key); an archive has no sign stage, and a request with a signer is
// refused (Run signs it).
func TestBuildHandsOnTheSignStage(t *testing.T) {
	ctx := context.Background()
	host := newRegistry(t)
	req, _ := happyInputs(t)
	req.Publish = PublishOptions{Repo: host + "/team/code-server-ray", Push: true}
	req.Solve.Provenance = true
	req.Sign = SignOptions{SBOMFromLock: true}
	res, sg, err := Build(ctx, &buildtest.Builder{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if sg == nil || res.Signed != nil {
		t.Fatalf("Build: sign stage %v, signed %+v; want a sign stage and nothing signed", sg, res.Signed)
	}
	s := signerForTest(t)
	if err := sg.Sign(ctx, s); err != nil {
		t.Fatal(err)
	}
	rep := verifyWithKey(t, ctx, s, res.Ref)
	if !rep.OK || res.Signed == nil || len(res.Signed.Targets) != 3 {
		t.Errorf("verify after Signing.Sign: ok=%v failures=%v; signed %+v, want the index and both platforms", rep.OK, rep.Failures, res.Signed)
	}

	req.Publish = PublishOptions{Repo: req.Publish.Repo, DistDir: t.TempDir()}
	if _, sg, err := Build(ctx, &buildtest.Builder{}, req); err != nil || sg != nil {
		t.Errorf("Build of an archive: sign stage %v, err %v; want none and no error", sg, err)
	}
	req.Sign.Signer = s
	if _, _, err := Build(ctx, &buildtest.Builder{}, req); err == nil || !strings.Contains(err.Error(), "does not sign") {
		t.Errorf("Build with a signer: %v, want it refused", err)
	}
}
