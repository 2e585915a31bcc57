package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/regauth/regauthtest"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sbom/document"
	"github.com/imagectl/imagectl/sign"
)

// countingHandler counts the requests that could change the registry.
type countingHandler struct {
	next   http.Handler
	mu     sync.Mutex
	writes []string
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.mu.Lock()
		c.writes = append(c.writes, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
	}
	c.next.ServeHTTP(w, r)
}

func (c *countingHandler) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// failBuilder fails the test if Run gets as far as solving.
type failBuilder struct{ t *testing.T }

func (f failBuilder) Build(context.Context, build.Spec) (*build.PlatformResult, error) {
	f.t.Fatal("Run solved although the inputs are published")
	return nil, nil
}

func signerForTest(t *testing.T) *sign.Signer {
	t.Helper()
	kp, err := sign.GenerateKeyPair([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	sv, err := cosign.LoadPrivateKey(kp.PrivateKey, []byte("pw"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sign.NewSigner(sv, "test key")
}

// pushIndex pushes an index of one image per platform, each labelled as
// imagectl build labels an image of set with inputs, under tag, and returns
// its digest.
func pushIndex(t *testing.T, tag name.Tag, set imagespec.Set, inputs string, platforms ...string) v1.Hash {
	t.Helper()
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		pl, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := imagetest.RandomLabelledImage(*pl, build.Labels(set, p, inputs, time.Unix(0, 0), build.LabelSource{}))
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: pl}})
	}
	if err := remote.WriteIndex(tag, idx, regauth.RemoteOptions(context.Background())...); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRunSkipsPublishedInputs: build --push of inputs whose versioned tag
// already names an image of them (signed with the key, when signing) solves,
// pushes and signs nothing and returns that image; anything else, or
// Force, goes on to build (here: stops at the missing extension cache).
func TestRunSkipsPublishedInputs(t *testing.T) {
	cfg, cat, def := pinnedInputs(t)
	reg := &countingHandler{next: regauthtest.New(testutil.RegistryHandler(), "ci", "s3cret")}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	cfgJSON := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("ci:s3cret")) + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)

	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: "2.46.0"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := def.Render(set)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := resolve.RenderTags(cfg, r.Set, r.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	r.Set.Tags = tags.Names()
	versioned := tags.Immutable()[0]
	key, other := signerForTest(t), signerForTest(t)

	ctx := context.Background()
	// signed signs the index d and every platform manifest with s and
	// attaches the SBOM attestations, as build --sign does.
	signed := func(t *testing.T, repo name.Repository, d v1.Hash, s *sign.Signer) v1.Hash {
		ref := repo.Digest(d.String()).String()
		if _, err := sign.Image(ctx, ref, s); err != nil {
			t.Fatal(err)
		}
		if _, err := sign.AttestSBOM(ctx, ref, s, document.SBOMInputFromLock(r.Set, repo.Name(), time.Unix(0, 0)), sign.WithAllManifests(true)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	cases := []struct {
		name    string
		publish func(t *testing.T, repo name.Repository) v1.Hash // what the registry holds
		signer  *sign.Signer
		// lazy passes signer as LoadSigner; noLoad fails the test if it is
		// called; verifyKey is VerifyKey's private half
		lazy, noLoad bool
		verifyKey    *sign.Signer
		force        bool
		skip         bool
		warn         string // on Warnings, when not skipped
		err          string // Run's error, when not skipped (default: the missing extension cache)
	}{
		{name: "nothing published"},
		{name: "the tag names other inputs", publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return pushIndex(t, repo.Tag(versioned), r.Set, "sha256:"+strings.Repeat("9", 64), set.Platforms...)
		}},
		{name: "published", skip: true, publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...)
		}},
		{name: "published, forced", force: true, publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...)
		}},
		{name: "published with one platform", warn: "with platforms linux/amd64, want linux/amd64,linux/arm64", publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, "linux/amd64")
		}},
		{name: "published unsigned, signing", signer: key, warn: "does not verify with test key", publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...)
		}},
		{name: "published, signed with another key", signer: key, warn: "does not verify with test key", publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return signed(t, repo, pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...), other)
		}},
		{name: "published and signed, but not attested (a build that stopped after signing)", signer: key, warn: "has no SBOM attestation", publish: func(t *testing.T, repo name.Repository) v1.Hash {
			d := pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...)
			if _, err := sign.Image(ctx, repo.Digest(d.String()).String(), key); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{name: "published and signed with the key", signer: key, skip: true, publish: func(t *testing.T, repo name.Repository) v1.Hash {
			return signed(t, repo, pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...), key)
		}},
		{name: "published and signed, checked with the verify key: the signer is not loaded", signer: key, lazy: true, noLoad: true, verifyKey: key, skip: true,
			publish: func(t *testing.T, repo name.Repository) v1.Hash {
				return signed(t, repo, pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...), key)
			}},
		{name: "published and signed, checked by loading the signer", signer: key, lazy: true, skip: true,
			publish: func(t *testing.T, repo name.Repository) v1.Hash {
				return signed(t, repo, pushIndex(t, repo.Tag(versioned), r.Set, r.Inputs, set.Platforms...), key)
			}},
	}
	scanner, err := sbom.NewCommand(testutil.SBOMScanner(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, err := name.NewRepository(host + "/team/img" + string(rune('a'+i)))
			if err != nil {
				t.Fatal(err)
			}
			var want v1.Hash
			if c.publish != nil {
				want = c.publish(t, repo)
			}
			reg.reset()
			var warnings bytes.Buffer
			req := Request{Matrix: cfg, Catalog: cat, Definition: def, Resolve: resolve.Request{Ray: "2.46.0"}, Publish: PublishOptions{Repo: repo.Name(),
				Push: true}, Sign: SignOptions{Signer: c.signer, Scanner: scanner}, Force: c.force, Warnings: &warnings}
			if c.lazy {
				req.Sign.Signer = nil
				req.Sign.LoadSigner = func(context.Context) (*sign.Signer, error) {
					if c.noLoad {
						t.Error("the signer was loaded")
					}
					return c.signer, nil
				}
			}
			if c.verifyKey != nil {
				req.Sign.VerifyKey, req.Sign.VerifyKeyName = publicKey(t, c.verifyKey), "the verify key"
			}
			res, err := Run(ctx, failBuilder{t}, req)
			if !c.skip {
				want := c.err
				if want == "" {
					want = "no extension cache"
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Run: %v, want it to go on building (stopping at %q)", err, want)
				}
				if c.warn != "" && !strings.Contains(warnings.String(), c.warn) {
					t.Errorf("warnings %q, want %q", warnings.String(), c.warn)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run of published inputs: %v (warnings: %s)", err, warnings.String())
			}
			if res.Index != want.String() || res.Ref != repo.Digest(want.String()).String() || res.InputsDigest != r.Inputs {
				t.Errorf("Run returned %s (%s, inputs %s), want %s with inputs %s", res.Ref, res.Index, res.InputsDigest, want, r.Inputs)
			}
			if n := len(res.Stages); n != 2 || res.Stages[n-1].Name != "published" {
				t.Errorf("stages of a build of published inputs: %+v, want resolve and published", res.Stages)
			}
			if !strings.Contains(res.Published, versioned) || !strings.Contains(res.Published, "--force") {
				t.Errorf("Published = %q, want it to name the tag %s and --force", res.Published, versioned)
			}
			if c.verifyKey != nil && !strings.Contains(res.Published, "verify with the verify key and its SBOM attestations are there") {
				t.Errorf("Published = %q, want it to name the verify key", res.Published)
			}
			if c.signer != nil && c.verifyKey == nil && !strings.Contains(res.Published, "verify with test key") {
				t.Errorf("Published = %q, want it to say the signatures verify", res.Published)
			}
			if len(res.Platforms) != 2 || res.Platforms[0].Platform != "linux/amd64" || !strings.HasPrefix(res.Platforms[1].Digest, "sha256:") {
				t.Errorf("platforms %+v, want both with their digests", res.Platforms)
			}
			if w := reg.reset(); len(w) > 0 {
				t.Errorf("Run of published inputs wrote to the registry: %v", w)
			}
		})
	}
}

// A verify key that is not the signer's public half stops the build (before
// the solve), and the lazy signer is loaded once.
func TestSignerChecksVerifyKey(t *testing.T) {
	key, other := signerForTest(t), signerForTest(t)
	loads := 0
	req := Request{Sign: SignOptions{LoadSigner: func(context.Context) (*sign.Signer, error) { loads++; return key, nil }, VerifyKey: publicKey(t, other), VerifyKeyName: "other.pub"}}
	if _, err := req.signer(context.Background()); err == nil || !strings.Contains(err.Error(), "other.pub is not the public key of test key") {
		t.Errorf("signer with another key's public half: %v", err)
	}
	req.Sign.VerifyKey = publicKey(t, key)
	for range 2 {
		if s, err := req.signer(context.Background()); err != nil || s != key {
			t.Errorf("signer with its own public half: %v, %v", s, err)
		}
	}
	if loads != 1 {
		t.Errorf("LoadSigner called %d times, want 1", loads)
	}
	if s, err := (&Request{}).signer(context.Background()); s != nil || err != nil {
		t.Errorf("no signer: %v, %v", s, err)
	}
}
