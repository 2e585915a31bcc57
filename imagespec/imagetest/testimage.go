package imagetest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec"
)

// Extension is one extension installed in the image.
type Extension struct {
	ID      string // publisher.name
	Version string
	// Universal marks a universal VSIX; otherwise the target platform follows
	// the image platform (linux-x64 / linux-arm64).
	Universal bool
}

// Spec describes a fake image. Default() gives a valid two-platform one.
type Spec struct {
	Platforms  []string
	CodeServer string
	VSCode     string
	Python     string
	Ray        string
	Debugpy    string
	Extensions []Extension
	// SitePackages is the site-packages directory, "{py}" replaced by the
	// Python minor version.
	SitePackages string
	// Provenance adds one BuildKit provenance attestation manifest per
	// platform manifest to the index.
	Provenance bool
	// EditFiles, when set, rewrites the files of one platform's imagectl
	// layer (key: absolute path; a nil value deletes the file) before the
	// image is built — the place to break contents.
	EditFiles func(platform string, files map[string][]byte)
	// EditLabels, when set, rewrites one platform's labels.
	EditLabels func(platform string, labels map[string]string)
	// EditEnv, when set, rewrites one platform's config Env.
	EditEnv func(platform string, env []string) []string
}

// Env is the config Env of a correct image: the shipped Python is the
// active environment (imagespec.PythonDir).
func Env() []string {
	return []string{
		"PATH=" + imagespec.PythonDir + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"VIRTUAL_ENV=" + imagespec.PythonDir,
		"HOME=/config",
	}
}

// Default returns a valid linux/amd64 + linux/arm64 spec.
func Default() Spec {
	return Spec{
		Platforms:  []string{"linux/amd64", "linux/arm64"},
		CodeServer: "4.101.2",
		VSCode:     "1.101.2",
		Python:     "3.12",
		Ray:        "2.46.0",
		Debugpy:    "1.8.14",
		Extensions: []Extension{
			{ID: "ms-python.debugpy", Version: "2025.10.0"},
			{ID: "ms-python.python", Version: "2025.10.0"},
			{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Universal: true},
		},
		SitePackages: "/usr/local/lib/python{py}/site-packages",
		Provenance:   true,
	}
}

// TargetPlatform maps an OCI platform to the VS Code target platform
// (imagespec.VSCodeTarget), or "unknown" for a platform without one, so a
// test can build an image of such a platform.
func TargetPlatform(platform string) string {
	if t, err := imagespec.VSCodeTarget(platform); err == nil {
		return t
	}
	return "unknown"
}

// Lock returns the imagespec.Set the spec's images claim to be built from.
func (s Spec) Lock() imagespec.Set {
	set := imagespec.Set{
		CodeServer: imagespec.CodeServer{Version: s.CodeServer, VSCode: s.VSCode, Base: "lscr.io/linuxserver/code-server:" + s.CodeServer},
		Ray:        s.Ray,
		Python:     s.Python,
		RayPythons: []string{s.Python},
		RayExtras:  []string{"default"},
		Debugpy:    s.Debugpy,
		Platforms:  append([]string(nil), s.Platforms...),
		Tags:       []string{fmt.Sprintf("%s-ray%s-py%s", s.CodeServer, s.Ray, s.Python)},
	}
	for _, e := range s.Extensions {
		ext := imagespec.Extension{ID: e.ID, Version: e.Version, Source: "marketplace", Engine: "^1.95.0", Files: map[string]imagespec.File{}}
		for _, p := range s.Platforms {
			tp := TargetPlatform(p)
			if e.Universal {
				tp = imagespec.VSCodeUniversal
			}
			ext.Files[p] = imagespec.File{TargetPlatform: tp, SHA256: strings.Repeat("ab", 32)}
		}
		set.Extensions = append(set.Extensions, ext)
	}
	return set
}

// ExtensionDir is the directory name code-server gives an installed
// extension: id-version, plus -targetPlatform for platform-specific ones.
func ExtensionDir(e Extension, platform string) string {
	d := strings.ToLower(e.ID) + "-" + e.Version
	if !e.Universal {
		d += "-" + TargetPlatform(platform)
	}
	return d
}

// Labels returns the labels a correct image carries.
func (s Spec) Labels() (map[string]string, error) {
	lock, err := json.Marshal(s.Lock())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range s.Extensions {
		ids = append(ids, e.ID+"@"+e.Version)
	}
	return map[string]string{
		imagespec.LabelLock:                    string(lock),
		imagespec.LabelCodeServer:              s.CodeServer,
		imagespec.LabelVSCode:                  s.VSCode,
		imagespec.LabelRay:                     s.Ray,
		imagespec.LabelPython:                  s.Python,
		imagespec.LabelDebugpy:                 s.Debugpy,
		imagespec.LabelExtensions:              strings.Join(ids, ","),
		imagespec.LabelInputs:                  "sha256:" + strings.Repeat("cd", 32),
		"org.opencontainers.image.version":     s.CodeServer,
		"org.opencontainers.image.base.name":   "lscr.io/linuxserver/code-server:" + s.CodeServer,
		"org.opencontainers.image.source":      "https://github.com/imagectl/imagectl",
		"org.opencontainers.image.created":     "2025-06-01T00:00:00Z",
		"org.opencontainers.image.revision":    "0123456789abcdef",
		"org.opencontainers.image.base.digest": "sha256:" + strings.Repeat("ef", 32),
	}, nil
}

// Files returns the files imagectl's layer adds for platform.
func (s Spec) Files(platform string) map[string][]byte {
	files := map[string][]byte{}
	type ref struct {
		ID   string `json:"id"`
		UUID string `json:"uuid,omitempty"`
	}
	type loc struct {
		Mid    int    `json:"$mid"`
		Path   string `json:"path"`
		Scheme string `json:"scheme"`
	}
	type entry struct {
		Identifier       ref            `json:"identifier"`
		Version          string         `json:"version"`
		Location         loc            `json:"location"`
		RelativeLocation string         `json:"relativeLocation"`
		Metadata         map[string]any `json:"metadata"`
	}
	var entries []entry
	for _, e := range s.Extensions {
		pub, nm, _ := strings.Cut(e.ID, ".")
		dir := path.Join(imagespec.ExtensionsDir, ExtensionDir(e, platform))
		tp := TargetPlatform(platform)
		if e.Universal {
			tp = imagespec.VSCodeUniversal
		}
		pkg, _ := json.MarshalIndent(map[string]any{
			"name": nm, "publisher": pub, "version": e.Version, "engines": map[string]string{"vscode": "^1.95.0"},
			"main": "./out/extension.js", "activationEvents": []string{"onStartupFinished"},
		}, "", "  ")
		files[dir+"/package.json"] = pkg
		files[dir+"/.vsixmanifest"] = []byte(fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">
  <Metadata>
    <Identity Language="en-US" Id="%s" Version="%s" Publisher="%s" TargetPlatform="%s"/>
    <DisplayName>%s</DisplayName>
  </Metadata>
</PackageManifest>
`, nm, e.Version, pub, tp, nm))
		files[dir+"/out/extension.js"] = []byte("exports.activate = () => {};\n")
		md := map[string]any{"installedTimestamp": 1748736000000, "source": "vsix", "targetPlatform": tp}
		entries = append(entries, entry{
			Identifier:       ref{ID: strings.ToLower(e.ID)},
			Version:          e.Version,
			Location:         loc{Mid: 1, Path: dir, Scheme: "file"},
			RelativeLocation: ExtensionDir(e, platform),
			Metadata:         md,
		})
	}
	ej, _ := json.Marshal(entries)
	files[imagespec.ExtensionsDir+"/extensions.json"] = ej
	settings, _ := json.Marshal(imagespec.ImageSettings(map[string]any{
		"workbench.startupEditor":          "none",
		imagespec.SettingClusterDashboards: []any{map[string]any{"host": "127.0.0.1:8265", "localRoot": imagespec.DebuggerLocalRoot}},
	}))
	files[imagespec.SettingsPath] = append(settings, '\n')
	files[imagespec.InterpreterPath] = []byte("\x7fELF stand-in\n")
	sp := strings.ReplaceAll(s.SitePackages, "{py}", s.Python)
	for _, p := range []struct{ name, version string }{{"ray", s.Ray}, {"debugpy", s.Debugpy}} {
		di := fmt.Sprintf("%s/%s-%s.dist-info", sp, p.name, p.version)
		files[di+"/METADATA"] = []byte(fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: test stand-in\n\nlong description\n", p.name, p.version))
		files[di+"/RECORD"] = []byte("")
		files[sp+"/"+p.name+"/__init__.py"] = []byte("")
	}
	return files
}

// Layer builds an uncompressed-tar layer holding files (parent directories
// added), sorted, with fixed timestamps.
func Layer(files map[string][]byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	mt := time.Unix(1748736000, 0)
	for _, n := range names {
		rel := strings.TrimPrefix(path.Clean(n), "/")
		var dirs []string
		for d := path.Dir(rel); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append([]string{d}, dirs...)
		}
		for _, d := range dirs {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mt}); err != nil {
				return nil, err
			}
		}
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(b)), ModTime: mt}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// Image builds one platform image.
func (s Spec) Image(platform string) (v1.Image, error) {
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	var layers []v1.Layer
	for i := 0; i < 2; i++ {
		l, err := random.Layer(2048, types.OCILayer)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	files := s.Files(platform)
	if s.EditFiles != nil {
		s.EditFiles(platform, files)
		for k, v := range files {
			if v == nil {
				delete(files, k)
			}
		}
	}
	l, err := Layer(files)
	if err != nil {
		return nil, err
	}
	layers = append(layers, l)
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	labels, err := s.Labels()
	if err != nil {
		return nil, err
	}
	if s.EditLabels != nil {
		s.EditLabels(platform, labels)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Labels = labels
	cf.Config.User = "abc"
	cf.Config.Env = Env()
	if s.EditEnv != nil {
		cf.Config.Env = s.EditEnv(platform, cf.Config.Env)
	}
	return mutate.ConfigFile(img, cf)
}

// AttestationManifest builds a BuildKit-style attestation manifest for the
// image with digest subject: one in-toto layer with a provenance statement.
func AttestationManifest(subject v1.Hash, predicateType string) (v1.Image, error) {
	st, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"predicateType": predicateType,
		"subject":       []any{map[string]any{"name": "pkg:docker/example/image", "digest": map[string]string{"sha256": subject.Hex}}},
		"predicate":     map[string]any{"builder": map[string]string{"id": ""}, "buildType": "https://mobyproject.org/buildkit@v1"},
	})
	if err != nil {
		return nil, err
	}
	l := static.NewLayer(st, "application/vnd.in-toto+json")
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: l, Annotations: map[string]string{imagespec.AnnotationPredicateType: predicateType}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "unknown", "unknown"
	return mutate.ConfigFile(img, cf)
}

// Index builds the multi-platform index (with attestation manifests when
// Provenance is set).
func (s Spec) Index() (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds, atts []mutate.IndexAddendum
	for _, pl := range s.Platforms {
		img, err := s.Image(pl)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", pl, err)
		}
		p, _ := v1.ParsePlatform(pl)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
		if s.Provenance {
			d, err := img.Digest()
			if err != nil {
				return nil, err
			}
			att, err := AttestationManifest(d, imagespec.PredicateSLSA02)
			if err != nil {
				return nil, err
			}
			atts = append(atts, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{
					imagespec.AnnotationReferenceDigest: d.String(),
					imagespec.AnnotationReferenceType:   imagespec.ReferenceTypeAttestation,
				},
			}})
		}
	}
	return mutate.AppendManifests(idx, append(adds, atts...)...), nil
}

// Push writes the index to ref and returns its digest reference.
func (s Spec) Push(ctx context.Context, ref string, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, err
	}
	idx, err := s.Index()
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.WriteIndex(r, idx, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}

// PushedIndex reads the manifest of the index root names from its
// registry.
func PushedIndex(root name.Digest, opts ...remote.Option) (*v1.IndexManifest, error) {
	idx, err := remote.Index(root, opts...)
	if err != nil {
		return nil, err
	}
	return idx.IndexManifest()
}

// PushImage writes a single-platform image (no index) to ref.
func (s Spec) PushImage(ctx context.Context, ref, platform string, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, err
	}
	img, err := s.Image(platform)
	if err != nil {
		return name.Digest{}, err
	}
	if err := remote.Write(r, img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return r.Context().Digest(d.String()), nil
}
