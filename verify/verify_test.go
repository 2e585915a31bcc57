package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/empty"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	ikeys "github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/sbom/document"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

type keys struct {
	signer, other *sign.Signer
	pub           signature.Verifier
}

func newKeys(t *testing.T) keys {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	var k keys
	for i, dst := range []**sign.Signer{&k.signer, &k.other} {
		keyPath, pubPath, err := sign.WriteKeyPair(filepath.Join(dir, fmt.Sprintf("k%d", i)), []byte("pw"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := sign.LoadKey(ctx, keyPath, sign.StaticPassword([]byte("pw")))
		if err != nil {
			t.Fatal(err)
		}
		*dst = s
		if i == 0 {
			if k.pub, err = ikeys.LoadPublic(pubPath); err != nil {
				t.Fatal(err)
			}
		}
	}
	return k
}

// platformDigest returns the digest of one platform manifest in the index.
func platformDigest(t *testing.T, root name.Digest, platform string) name.Digest {
	t.Helper()
	im, err := imagetest.PushedIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.String() == platform {
			return root.Context().Digest(d.Digest.String())
		}
	}
	t.Fatalf("no %s in %s", platform, root)
	return name.Digest{}
}

// signAll signs and attests an SBOM like `imagectl build --sign` does.
func signAll(t *testing.T, ctx context.Context, ref string, s *sign.Signer, spec imagetest.Spec) {
	t.Helper()
	if _, err := sign.Image(ctx, ref, s); err != nil {
		t.Fatalf("sign.Image: %v", err)
	}
	if _, err := sign.AttestSBOM(ctx, ref, s, document.SBOMInputFromLock(spec.Lock(), "example/code-server-ray", testTime)); err != nil {
		t.Fatalf("sign.AttestSBOM: %v", err)
	}
}

// replaceSignature overwrites the signature manifest at d's .sig tag.
func replaceSignature(t *testing.T, d name.Digest, payload []byte, b64sig string) {
	t.Helper()
	sig, err := static.NewSignature(payload, b64sig)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := mutate.AppendSignatures(empty.Signatures(), false, sig)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ociremote.SignatureTag(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, sigs); err != nil {
		t.Fatal(err)
	}
}

func onlySignature(t *testing.T, d name.Digest) ([]byte, string) {
	t.Helper()
	tag, err := ociremote.SignatureTag(d)
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := ociremote.Signatures(tag)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sigs.Get()
	if err != nil || len(l) != 1 {
		t.Fatalf("signatures of %s: %d, %v", d, len(l), err)
	}
	p, err := l[0].Payload()
	if err != nil {
		t.Fatal(err)
	}
	b, err := l[0].Base64Signature()
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

func TestImage(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	reg := testutil.Registry(t)

	type tc struct {
		name string
		spec func(*imagetest.Spec)
		// publish signs/attests (default: signAll with k.signer).
		publish func(t *testing.T, root name.Digest, spec imagetest.Spec)
		opts    []verify.Option
		// want lists substrings of one failure each (check, then parts);
		// empty means the image must verify.
		want [][]string
	}
	cases := []tc{
		{name: "valid"},
		{
			name: "platform manifest unsigned",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.signer, spec)
				arm := platformDigest(t, root, "linux/arm64")
				// Drop the arm64 signature by replacing it with an empty signature list.
				tag, _ := ociremote.SignatureTag(arm)
				if err := remote.Write(tag, empty.Signatures()); err != nil {
					t.Fatal(err)
				}
			},
			want: [][]string{{"signature", "linux/arm64", "not signed"}},
		},
		{
			name: "only the index signed",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				if _, err := sign.Image(ctx, root.String(), k.signer, sign.WithAllManifests(false)); err != nil {
					t.Fatal(err)
				}
				if _, err := sign.AttestSBOM(ctx, root.String(), k.signer, document.SBOMInputFromLock(spec.Lock(), "x", testTime)); err != nil {
					t.Fatal(err)
				}
			},
			want: [][]string{{"signature", "linux/amd64", "not signed"}, {"signature", "linux/arm64", "not signed"}},
		},
		{
			name: "signed by another key",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.other, spec)
			},
			want: [][]string{
				{"signature", "index", "no valid signature"},
				{"signature", "linux/amd64", "no valid signature"},
				{"signature", "linux/arm64", "no valid signature"},
				{"sbom", "linux/arm64", "none verified"},
			},
		},
		{
			name: "tampered signature payload",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.signer, spec)
				arm := platformDigest(t, root, "linux/arm64")
				p, b64 := onlySignature(t, arm)
				p = bytes.Replace(p, []byte(`"optional":null`), []byte(`"optional":{"evil":"yes"}`), 1)
				if !bytes.Contains(p, []byte("evil")) {
					t.Fatalf("could not tamper with payload %s", p)
				}
				replaceSignature(t, arm, p, b64)
			},
			want: [][]string{{"signature", "linux/arm64", "no valid signature"}},
		},
		{
			name: "valid signature of another digest copied",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.signer, spec)
				amd, arm := platformDigest(t, root, "linux/amd64"), platformDigest(t, root, "linux/arm64")
				p, b64 := onlySignature(t, amd)
				replaceSignature(t, arm, p, b64)
			},
			want: [][]string{{"signature", "linux/arm64", "invalid or missing digest in claim"}},
		},
		{
			name: "label disagrees with contents",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/arm64" {
						return
					}
					old := "/usr/local/lib/python3.12/site-packages/ray-2.46.0.dist-info/METADATA"
					files[old] = nil
					files["/usr/local/lib/python3.12/site-packages/ray-2.45.0.dist-info/METADATA"] = []byte("Metadata-Version: 2.1\nName: ray\nVersion: 2.45.0\n")
				}
			},
			want: [][]string{{"python", "linux/arm64", "ray-2.45.0.dist-info/METADATA", "Version 2.45.0", imagespec.LabelRay, "2.46.0"}},
		},
		{
			name: "interpreter not shipped, not in the settings, not the active environment",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/arm64" {
						return
					}
					files[imagespec.InterpreterPath] = nil
					files[imagespec.SettingsPath] = []byte(`{"python.defaultInterpreterPath":"/usr/bin/python3"}`)
				}
				s.EditEnv = func(platform string, env []string) []string {
					if platform != "linux/arm64" {
						return env
					}
					return []string{"PATH=/lsiopy/bin:/usr/bin", "VIRTUAL_ENV=/lsiopy"}
				}
			},
			want: [][]string{
				{"python", "linux/arm64", imagespec.InterpreterPath + ": missing"},
				{"python", "linux/arm64", imagespec.SettingsPath + ": python.defaultInterpreterPath is \"/usr/bin/python3\", want " + imagespec.InterpreterPath},
				{"python", "linux/arm64", `config Env: VIRTUAL_ENV is "/lsiopy", want ` + imagespec.PythonDir},
				{"python", "linux/arm64", `config Env: PATH "/lsiopy/bin:/usr/bin" does not start with ` + imagespec.PythonDir + "/bin"},
			},
		},
		{
			name: "debugger localRoot maps the worker's cwd onto the workspace",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/amd64" {
						return
					}
					files[imagespec.SettingsPath] = []byte(`{"python.defaultInterpreterPath":"` + imagespec.InterpreterPath + `",` +
						`"` + imagespec.SettingClusterDashboards + `":[{"host":"127.0.0.1:8265","localRoot":"/tmp/ray/session_latest/runtime_resources"},{"host":"10.0.0.1:8265"}]}`)
				}
			},
			want: [][]string{
				{"extensions", "linux/amd64", imagespec.SettingsPath + ": " + imagespec.SettingClusterDashboards + `[0].localRoot is "/tmp/ray/session_latest/runtime_resources", want ""`},
				{"extensions", "linux/amd64", imagespec.SettingsPath + ": " + imagespec.SettingClusterDashboards + `[1] has no localRoot`},
			},
		},
		{
			name: "ray label disagrees with the lock",
			spec: func(s *imagetest.Spec) {
				s.EditLabels = func(platform string, l map[string]string) { l[imagespec.LabelRay] = "2.47.0" }
			},
			want: [][]string{
				{"labels", "linux/amd64", "label " + imagespec.LabelRay, `"2.47.0"`, `"2.46.0"`},
				{"python", "linux/amd64", "Version 2.46.0", "says 2.47.0"},
			},
		},
		{
			name: "arm64 image with a linux-x64 extension",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/arm64" {
						return
					}
					p := "/config/extensions/ms-python.python-2025.10.0-linux-arm64/.vsixmanifest"
					files[p] = bytes.Replace(files[p], []byte(`TargetPlatform="linux-arm64"`), []byte(`TargetPlatform="linux-x64"`), 1)
				}
			},
			want: [][]string{{"extensions", "linux/arm64", "/config/extensions/ms-python.python-2025.10.0-linux-arm64/.vsixmanifest: TargetPlatform linux-x64, want linux-arm64"}},
		},
		{
			name: "universal file where the lock wants a platform build",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/amd64" {
						return
					}
					p := "/config/extensions/ms-python.debugpy-2025.10.0-linux-x64/.vsixmanifest"
					files[p] = bytes.Replace(files[p], []byte(` TargetPlatform="linux-x64"`), nil, 1)
				}
			},
			want: [][]string{{"extensions", "linux/amd64", "ms-python.debugpy-2025.10.0-linux-x64/.vsixmanifest: TargetPlatform universal, want linux-x64"}},
		},
		{
			name: "extension missing, extra one installed, extensions.json stale",
			spec: func(s *imagetest.Spec) {
				s.EditFiles = func(platform string, files map[string][]byte) {
					if platform != "linux/amd64" {
						return
					}
					for p := range files {
						if strings.Contains(p, "anyscalecompute.ray-distributed-debugger") {
							files[p] = nil
						}
					}
					files["/config/extensions/evil.miner-1.0.0/package.json"] = []byte(`{"name":"miner","publisher":"evil","version":"1.0.0"}`)
					files["/config/extensions/evil.miner-1.0.0/.vsixmanifest"] = []byte(`<PackageManifest><Metadata><Identity Id="miner" Version="1.0.0" Publisher="evil"/></Metadata></PackageManifest>`)
				}
			},
			want: [][]string{
				{"extensions", "linux/amd64", "anyscalecompute.ray-distributed-debugger@0.1.4 is in the lock but not installed"},
				{"extensions", "linux/amd64", "evil.miner@1.0.0 is installed but not in the lock"},
				{"extensions", "linux/amd64", "extensions.json: lists anyscalecompute.ray-distributed-debugger@0.1.4, which is not installed"},
				{"extensions", "linux/amd64", "extensions.json: does not list installed evil.miner@1.0.0"},
			},
		},
		{
			name: "lock platforms differ from the index",
			spec: func(s *imagetest.Spec) {
				lock := s.Lock()
				lock.Platforms = []string{"linux/amd64"}
				b, _ := json.Marshal(lock)
				s.EditLabels = func(platform string, l map[string]string) { l[imagespec.LabelLock] = string(b) }
			},
			want: [][]string{{"platforms", "lock platforms linux/amd64, index has linux/amd64,linux/arm64"}},
		},
		{
			name: "python version in the path disagrees",
			spec: func(s *imagetest.Spec) { s.SitePackages = "/opt/venv/lib/python3.11/site-packages" },
			want: [][]string{{"python", "linux/amd64", "/opt/venv/lib/python3.11/site-packages/ray-2.46.0.dist-info/METADATA: installed for Python 3.11", "3.12"}},
		},
		{
			name: "dist-packages path is accepted",
			spec: func(s *imagetest.Spec) { s.SitePackages = "/usr/local/lib/python{py}/dist-packages" },
		},
		{
			name: "no SBOM",
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				if _, err := sign.Image(ctx, root.String(), k.signer); err != nil {
					t.Fatal(err)
				}
			},
			want: [][]string{{"sbom", "linux/amd64", "no verified SBOM"}, {"sbom", "linux/arm64", "no verified SBOM"}},
		},
		{
			name: "no provenance",
			spec: func(s *imagetest.Spec) { s.Provenance = false },
			want: [][]string{{"provenance", "linux/amd64", "no provenance"}, {"provenance", "linux/arm64", "no provenance"}},
		},
		{
			name: "cosign provenance attestation instead of BuildKit's",
			spec: func(s *imagetest.Spec) { s.Provenance = false },
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.signer, spec)
				pred := []byte(`{"builder":{"id":"https://github.com/imagectl/imagectl"},"buildType":"https://mobyproject.org/buildkit@v1"}`)
				if _, err := sign.Attest(ctx, root.String(), k.signer, imagespec.PredicateSLSA02, func(string) ([]byte, error) { return pred, nil }); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "skip contents still checks signatures and labels",
			spec: func(s *imagetest.Spec) {
				s.EditLabels = func(platform string, l map[string]string) { l[imagespec.LabelDebugpy] = "1.8.0" }
			},
			publish: func(t *testing.T, root name.Digest, spec imagetest.Spec) {
				signAll(t, ctx, root.String(), k.other, spec)
			},
			opts: []verify.Option{verify.WithSkipContents(true)},
			want: [][]string{{"signature", "index"}, {"labels", "linux/arm64", imagespec.LabelDebugpy}},
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := imagetest.Default()
			if c.spec != nil {
				c.spec(&spec)
			}
			root, err := spec.Push(ctx, fmt.Sprintf("%s/case%d:latest", reg, i))
			if err != nil {
				t.Fatal(err)
			}
			if c.publish != nil {
				c.publish(t, root, spec)
			} else {
				signAll(t, ctx, root.String(), k.signer, spec)
			}
			rep, err := verify.Image(ctx, root.Context().Tag("latest").String(), append([]verify.Option{verify.WithVerifier(k.pub)}, c.opts...)...)
			if err != nil {
				t.Fatalf("verify.Image: %v", err)
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("report:\n%s", text.String())
			if len(c.want) == 0 {
				if !rep.OK || rep.Err() != nil {
					t.Fatalf("image should verify:\n%s", text.String())
				}
				if len(rep.Manifests) != 3 {
					t.Errorf("report has %d manifests, want index + 2 platforms", len(rep.Manifests))
				}
				for _, m := range rep.Manifests {
					if m.Signatures != 1 {
						t.Errorf("%s %s: %d verified signatures, want 1", m.Platform, m.Digest, m.Signatures)
					}
				}
				return
			}
			if rep.OK || rep.Err() == nil {
				t.Fatalf("image verified, want failures %v:\n%s", c.want, text.String())
			}
			for _, w := range c.want {
				if !rep.HasFailure(verify.Check(w[0]), w[1:]...) {
					t.Errorf("no %s failure mentioning %q in:\n%s", w[0], w[1:], text.String())
				}
			}
		})
	}
}

func TestImageSingleManifest(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	reg := testutil.Registry(t)
	spec := imagetest.Default()
	spec.Platforms = []string{"linux/arm64"}
	d, err := spec.PushImage(ctx, reg+"/single:latest", "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, ctx, d.String(), k.signer, spec)

	// A single manifest has no index to carry BuildKit provenance.
	rep, err := verify.Image(ctx, reg+"/single:latest", verify.WithVerifier(k.pub))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !rep.HasFailure(verify.CheckProvenance, "linux/arm64", "no provenance") {
		t.Fatalf("single manifest without provenance: ok=%v failures=%v", rep.OK, rep.Failures)
	}

	pred := []byte(`{"builder":{"id":"https://github.com/imagectl/imagectl"},"buildType":"https://mobyproject.org/buildkit@v1"}`)
	if _, err := sign.Attest(ctx, d.String(), k.signer, imagespec.PredicateSLSA02, func(string) ([]byte, error) { return pred, nil }); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.Image(ctx, reg+"/single:latest", verify.WithVerifier(k.pub))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("single manifest should verify: %v", rep.Err())
	}
	if len(rep.Manifests) != 1 || rep.Manifests[0].Platform != "linux/arm64" || rep.Manifests[0].Contents == nil {
		t.Errorf("manifests = %+v, want one linux/arm64 with contents", rep.Manifests)
	}

	// The lock must name the image's platform.
	spec2 := imagetest.Default() // lock says amd64+arm64: fine for one of them
	d2, err := spec2.PushImage(ctx, reg+"/single2:latest", "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	spec3 := imagetest.Default()
	spec3.Platforms = []string{"linux/amd64"}
	d3, err := spec3.PushImage(ctx, reg+"/single3:latest", "linux/arm64") // lock: amd64 only, image: arm64
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d    name.Digest
		spec imagetest.Spec
		ok   bool
	}{{d2, spec2, true}, {d3, spec3, false}} {
		signAll(t, ctx, c.d.String(), k.signer, c.spec)
		rep, err := verify.Image(ctx, c.d.String(), verify.WithVerifier(k.pub), verify.WithSkipAttestations(true))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK != c.ok {
			t.Errorf("%s: ok=%v, want %v: %v", c.d, rep.OK, c.ok, rep.Failures)
		}
		if !c.ok && !rep.HasFailure(verify.CheckPlatforms, "not among the lock platforms") {
			t.Errorf("%s: want a lock platform failure, got %v", c.d, rep.Failures)
		}
	}
}

// A registry that serves other bytes for a layer than the manifest names
// (the layer is still a valid tar, with a ray of another version) must fail
// verify: go-containerregistry reports the digest mismatch only after the
// extracted stream's end-of-archive marker, so the scan must read on.
func TestImageLayerSwappedByTheRegistry(t *testing.T) {
	ctx := context.Background()
	k := newKeys(t)
	var swap struct {
		digest string
		body   []byte
	}
	inner := testutil.RegistryHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if swap.digest != "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+swap.digest) {
			w.Header().Set("Docker-Content-Digest", swap.digest)
			w.Write(swap.body)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")

	spec := imagetest.Default()
	spec.Platforms = []string{"linux/arm64"}
	d, err := spec.PushImage(ctx, reg+"/swapped:latest", "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	signAll(t, ctx, d.String(), k.signer, spec)
	pred := []byte(`{"builder":{"id":"https://github.com/imagectl/imagectl"},"buildType":"https://mobyproject.org/buildkit@v1"}`)
	if _, err := sign.Attest(ctx, d.String(), k.signer, imagespec.PredicateSLSA02, func(string) ([]byte, error) { return pred, nil }); err != nil {
		t.Fatal(err)
	}
	if rep, err := verify.Image(ctx, reg+"/swapped:latest", verify.WithVerifier(k.pub)); err != nil || !rep.OK {
		t.Fatalf("the untampered image must verify (else this test proves nothing): %v %v", err, rep.Err())
	}

	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	last, err := layers[len(layers)-1].Digest()
	if err != nil {
		t.Fatal(err)
	}
	other := imagetest.Default()
	other.Ray = "2.45.0"
	files := other.Files("linux/arm64")
	l, err := imagetest.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	swap.digest, swap.body = last.String(), body

	rep, err := verify.Image(ctx, reg+"/swapped:latest", verify.WithVerifier(k.pub))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !rep.HasFailure(verify.CheckContents, "linux/arm64", "reading image filesystem") {
		t.Fatalf("a layer swapped by the registry: ok=%v failures=%v", rep.OK, rep.Failures)
	}
}
