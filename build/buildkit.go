package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/platforms"
	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/credentials"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/moby/buildkit/client"
	_ "github.com/moby/buildkit/client/connhelper/dockercontainer" // docker-container:// addresses
	_ "github.com/moby/buildkit/client/connhelper/kubepod"         // kube-pod://POD?namespace=NS (kubectl exec)
	_ "github.com/moby/buildkit/client/connhelper/ssh"             // ssh://user@host (buildctl dial-stdio over ssh)
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/waitnotice"
	"github.com/imagectl/imagectl/regauth"
)

// DefaultAddress is buildkitd's standard socket.
const DefaultAddress = "unix:///run/buildkit/buildkitd.sock"

// BuildKit builds through buildkitd: one daemon for every platform, or one
// per platform (a native arm64 machine, BuildKit on Kubernetes).
type BuildKit struct {
	addr     string
	builders map[string]string
	dial     func(ctx context.Context, addr string) (*client.Client, error)
	// session returns what every solve's client session offers buildkitd;
	// by default the registry credentials of the docker config.
	session func() ([]session.Attachable, error)
}

// BuildKitOption configures NewBuildKit.
type BuildKitOption func(*BuildKit)

// WithAddress sets the default buildkitd address (tcp://, unix://,
// docker-container://NAME, ...).
func WithAddress(addr string) BuildKitOption {
	return func(b *BuildKit) {
		if addr != "" {
			b.addr = addr
		}
	}
}

// WithBuilder sends one platform's solve to another buildkitd.
func WithBuilder(platform, addr string) BuildKitOption {
	return func(b *BuildKit) { b.builders[platform] = addr }
}

// DockerAuth returns BuildKit's docker auth provider over the docker config
// ($DOCKER_CONFIG/config.json or ~/.docker/config.json: auths, credsStore,
// credHelpers), as buildctl attaches it. buildkitd pushes and pulls itself
// but asks the client session for credentials; without this provider every
// push is anonymous. The file is read when called (from regauth.ConfigDir,
// the same file go-containerregistry's keychain reads), so a login made
// after imagectl started is seen by the next solve; a malformed file is an
// error, not an anonymous push.
func DockerAuth() (session.Attachable, error) {
	cfg, err := config.Load(regauth.ConfigDir())
	if err != nil {
		return nil, fmt.Errorf("docker config for registry credentials: %w", err)
	}
	if !cfg.ContainsAuth() {
		cfg.CredentialsStore = credentials.DetectDefaultStore(cfg.CredentialsStore)
	}
	return authprovider.NewDockerAuthProvider(authprovider.DockerAuthProviderConfig{
		AuthConfigProvider: authprovider.LoadAuthConfig(cfg),
	}), nil
}

// NewBuildKit returns a BuildKit that talks to DefaultAddress unless told
// otherwise, with the docker config's registry credentials in its session.
func NewBuildKit(opts ...BuildKitOption) *BuildKit {
	b := &BuildKit{addr: DefaultAddress, builders: map[string]string{}, dial: func(ctx context.Context, addr string) (*client.Client, error) {
		return client.New(ctx, addr)
	}, session: func() ([]session.Attachable, error) {
		a, err := DockerAuth()
		return []session.Attachable{a}, err
	}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Address returns the buildkitd address used for platform.
func (b *BuildKit) Address(platform string) string {
	if a, ok := b.builders[platform]; ok {
		return a
	}
	return b.addr
}

// Ping connects to the buildkitd of platform and returns its native
// platform (the first platform of its first worker).
func (b *BuildKit) Ping(ctx context.Context, platform string) (p string, err error) {
	addr := b.Address(platform)
	// gRPC is no HTTP request: the command's wait notice is told here.
	stop := waitnotice.Start(ctx, addr, "buildkitd at "+addr+" to answer")
	defer func() { stop(err) }()
	c, err := b.dial(ctx, addr)
	if err != nil {
		return "", fmt.Errorf("connecting to buildkitd at %s: %w", addr, err)
	}
	defer c.Close()
	return nativePlatform(ctx, c, addr)
}

func nativePlatform(ctx context.Context, c *client.Client, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, err := c.ListWorkers(ctx)
	if err != nil {
		hint := ""
		if addr == DefaultAddress {
			hint = " (no buildkitd at the default address: set --buildkit-addr or BUILDKIT_HOST, or use --driver docker-container where Docker runs)"
		}
		return "", fmt.Errorf("listing workers of buildkitd at %s: %w%s", addr, err, hint)
	}
	if len(ws) == 0 || len(ws[0].Platforms) == 0 {
		return "", fmt.Errorf("buildkitd at %s has no worker", addr)
	}
	p := ws[0].Platforms[0]
	return imagespec.PlatformName(p.OS, p.Architecture, p.Variant), nil
}

// Build solves spec's platform with the dockerfile.v0 frontend built into
// buildkitd, and pushes it by digest (Spec.Push) or writes an OCI archive.
func (b *BuildKit) Build(ctx context.Context, spec Spec) (*PlatformResult, error) {
	addr := b.Address(spec.Platform)
	c, err := b.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to buildkitd at %s: %w", addr, err)
	}
	defer c.Close()
	native, err := nativePlatform(ctx, c, addr)
	if err != nil {
		return nil, err
	}
	attachables, err := b.session()
	if err != nil {
		return nil, err
	}
	opt, closeOut, err := solveOpt(spec)
	if err != nil {
		return nil, err
	}
	opt.Session = attachables
	res := &PlatformResult{Platform: spec.Platform, Builder: addr, BuildPlatform: native}
	ch := make(chan *client.SolveStatus)
	rec := newRecorder()
	logs := newLogTail()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ss := range ch {
			rec.add(ss)
			logs.add(ss)
			if spec.Status != nil {
				spec.Status <- ss
			}
		}
	}()
	start := time.Now()
	resp, err := c.Solve(ctx, nil, opt, ch)
	wg.Wait()
	res.Duration = Duration(time.Since(start))
	if cerr := closeOut(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		// A locked wheel that is not the locked bytes: pip's multi-line
		// report becomes one line (distribution, platform, both hashes).
		if herr := logs.hashMismatch(spec.Platform); herr != nil {
			err = herr
		}
		return nil, fmt.Errorf("building %s on %s: %w", spec.Platform, addr, err)
	}
	res.Exported = resp.ExporterResponse["containerimage.digest"]
	if res.Exported == "" {
		return nil, fmt.Errorf("building %s on %s: buildkitd returned no containerimage.digest", spec.Platform, addr)
	}
	rec.summarize(res, native)
	return res, nil
}

// sharedKeys keys buildkitd's copies of the local contexts by content, so
// an unchanged context is not sent again and a changed one is sent in full.
// buildkitd keeps one transferred copy per (context, session shared key,
// per-context key) and re-sends only files whose size or mtime changed; the
// contexts have fixed mtimes (reproducibility), so a same-size change
// (extensions.json listing 0.1.4 -> 0.1.6, a digest in the Dockerfile)
// would be missed. The session key (SolveOpt.SharedKey) covers the platform
// and the unnamed contexts (the Dockerfile's, the main one), which have no
// key of their own; each named context gets its own key from its content
// (the frontend attribute sharedkey:localdir:NAME), so an extension bump
// sends that extension's context and extensions.json, not the others.
func sharedKeys(platform string, mounts map[string]string) (session string, perContext map[string]string, err error) {
	names := slices.Sorted(maps.Keys(mounts))
	// The contexts are hashed concurrently, one per CPU: together they are
	// every extension's files.
	sums := make([]string, len(names))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, n := range names {
		g.Go(func() error {
			ch := sha256.New()
			if err := hashTree(ch, mounts[n]); err != nil {
				return fmt.Errorf("hashing build context %s (%s): %w", n, mounts[n], err)
			}
			sums[i] = hex.EncodeToString(ch.Sum(nil))[:32]
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "platform %s\n", platform)
	perContext = map[string]string{}
	for i, n := range names {
		if named(n) {
			perContext[n] = sums[i]
			continue
		}
		fmt.Fprintf(h, "%s %s\n", n, sums[i])
	}
	return "imagectl-" + hex.EncodeToString(h.Sum(nil))[:32], perContext, nil
}

// hashTree writes every file of root (path, mode, size, content; in walk
// order, which is sorted) to h.
func hashTree(h io.Writer, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %v %d\n", filepath.ToSlash(rel), info.Mode(), info.Size())
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
}

// solveOpt maps a Spec onto BuildKit's SolveOpt. The returned func closes
// the archive file, if any.
func solveOpt(spec Spec) (client.SolveOpt, func() error, error) {
	noop := func() error { return nil }
	mounts := map[string]fsutil.FS{}
	for name, dir := range spec.Contexts.Mounts() {
		fs, err := fsutil.NewFS(dir)
		if err != nil {
			return client.SolveOpt{}, noop, fmt.Errorf("build context %s (%s): %w", name, dir, err)
		}
		mounts[name] = fs
	}
	attrs, session, err := frontendAttrs(spec)
	if err != nil {
		return client.SolveOpt{}, noop, err
	}
	opt := client.SolveOpt{
		Frontend:      "dockerfile.v0",
		FrontendAttrs: attrs,
		LocalMounts:   mounts,
		SharedKey:     session,
	}
	for _, ref := range spec.CacheFrom {
		opt.CacheImports = append(opt.CacheImports, client.CacheOptionsEntry{Type: "registry", Attrs: map[string]string{"ref": platformCacheRef(ref, spec.Platform)}})
	}
	for _, ref := range spec.CacheTo {
		opt.CacheExports = append(opt.CacheExports, client.CacheOptionsEntry{Type: "registry", Attrs: map[string]string{"ref": platformCacheRef(ref, spec.Platform), "mode": "max", "oci-mediatypes": "true", "image-manifest": "true"}})
	}
	closeOut, err := setExport(&opt, spec)
	if err != nil {
		return opt, noop, err
	}
	return opt, closeOut, nil
}

// frontendAttrs are the Dockerfile frontend's attributes of spec and the
// session's shared key.
func frontendAttrs(spec Spec) (map[string]string, string, error) {
	attrs := map[string]string{
		"filename":       "Dockerfile",
		"platform":       spec.Platform,
		"multi-platform": "true", // names vertices "[platform ...]" and exports an index
	}
	for k, v := range spec.BuildArgs {
		attrs["build-arg:"+k] = v
	}
	attrs["build-arg:SOURCE_DATE_EPOCH"] = epochString(spec.SourceDateEpoch)
	for k, v := range spec.Labels {
		attrs["label:"+k] = v
	}
	session, keys, err := sharedKeys(spec.Platform, spec.Contexts.Mounts())
	if err != nil {
		return nil, "", err
	}
	for name, key := range keys {
		attrs["context:"+name] = "local:" + name
		attrs["sharedkey:localdir:"+name] = key
	}
	if spec.Provenance {
		attrs["attest:provenance"] = "mode=max"
	}
	if spec.SBOM {
		v := ""
		if spec.SBOMGenerator != "" {
			v = "generator=" + spec.SBOMGenerator
		}
		attrs["attest:sbom"] = v
	}
	return attrs, session, nil
}

// setExport sets opt's export from spec: push by digest, an OCI archive
// (the returned func closes it) or the image store (prepare).
func setExport(opt *client.SolveOpt, spec Spec) (func() error, error) {
	noop := func() error { return nil }
	// No rewrite-timestamp: every layer the definition adds is made with
	// fixed times where it is produced (contexts by PrepareContexts, RUN
	// outputs touched to SOURCE_DATE_EPOCH), and the build-arg
	// SOURCE_DATE_EPOCH alone makes BuildKit set the config's created and
	// history times. Rewriting would decompress, rewrite and recompress every
	// new layer on every export, cached or not.
	exp := map[string]string{
		"oci-mediatypes": "true",
	}
	closeOut := noop
	switch {
	case spec.Push:
		if spec.Repo == "" {
			return noop, errors.New("push requested without a repository")
		}
		exp["name"] = spec.Repo
		exp["push"] = "true"
		exp["push-by-digest"] = "true"
		opt.Exports = []client.ExportEntry{{Type: client.ExporterImage, Attrs: exp}}
	case spec.Archive != "":
		if err := os.MkdirAll(filepath.Dir(spec.Archive), 0o755); err != nil {
			return noop, err
		}
		f, err := os.Create(spec.Archive)
		if err != nil {
			return noop, err
		}
		closeOut = f.Close
		if spec.Repo != "" {
			exp["name"] = spec.Repo
		}
		exp["tar"] = "true"
		opt.Exports = []client.ExportEntry{{Type: client.ExporterOCI, Attrs: exp, Output: func(map[string]string) (io.WriteCloser, error) {
			return nopCloser{f}, nil
		}}}
	case spec.Prepare:
		exp["push"] = "false"
		opt.Exports = []client.ExportEntry{{Type: client.ExporterImage, Attrs: exp}}
	default:
		return noop, errors.New("neither push, nor an archive path, nor prepare: nothing to export")
	}
	return closeOut, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// platformCacheRef gives each platform its own cache tag: repo:tag ->
// repo:tag-arm64, so two platforms' exports do not overwrite each other.
func platformCacheRef(ref, platform string) string {
	arch := strings.ReplaceAll(strings.TrimPrefix(platform, "linux/"), "/", "-")
	if t, err := name.NewTag(ref, name.WithDefaultTag("")); err == nil && t.TagStr() != "" {
		return ref + "-" + arch
	}
	return ref + ":buildcache-" + arch
}

// runVertex matches the names the Dockerfile frontend gives RUN steps in a
// multi-platform solve: "[linux/arm64 stage 2/3] RUN ..." or, for a stage on
// the build platform targeting another, "[linux/amd64->arm64 wheels 1/1] RUN".
var runVertex = regexp.MustCompile(`^\[([a-z0-9]+/[a-z0-9_]+(?:/[a-z0-9]+)?)(?:->\S+)?\s[^\]]*\]\s+RUN\s`)

// recorder keeps the last state of every vertex and push progress.
type recorder struct {
	mu       sync.Mutex
	vertices map[string]*client.Vertex
	order    []string
	pushed   map[string]int64
}

func newRecorder() *recorder {
	return &recorder{vertices: map[string]*client.Vertex{}, pushed: map[string]int64{}}
}

func (r *recorder) add(ss *client.SolveStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range ss.Vertexes {
		k := v.Digest.String()
		if _, ok := r.vertices[k]; !ok {
			r.order = append(r.order, k)
		}
		cp := *v
		r.vertices[k] = &cp
	}
	for _, s := range ss.Statuses {
		if strings.HasPrefix(s.ID, "pushing ") || strings.HasPrefix(s.ID, "sha256:") {
			if v, ok := r.vertices[s.Vertex.String()]; ok && strings.HasPrefix(v.Name, "exporting") && s.Total > 0 {
				r.pushed[s.ID] = s.Total
			}
		}
	}
}

func (r *recorder) summarize(res *PlatformResult, native string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.order {
		v := r.vertices[k]
		m := runVertex.FindStringSubmatch(v.Name)
		if m == nil {
			continue
		}
		if v.Cached {
			res.CachedSteps++
			continue
		}
		if v.Started == nil {
			continue
		}
		res.Steps++
		if samePlatform(m[1], native) {
			continue
		}
		res.EmulatedSteps++
		res.Emulated = append(res.Emulated, v.Name)
	}
	for _, n := range r.pushed {
		res.BytesPushed += n
	}
}

// samePlatform reports whether the native platform b runs a without
// emulation (containerd's compatibility match, same architecture).
func samePlatform(a, b string) bool {
	pa, err1 := platforms.Parse(a)
	pb, err2 := platforms.Parse(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return platforms.Only(pb).Match(pa) && pa.Architecture == pb.Architecture
}
