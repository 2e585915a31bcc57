// Command fakeupstream runs the local stand-ins the end-to-end test needs in
// place of upstreams that cannot be reached offline:
//
//	fakeupstream registry -addr 127.0.0.1:0 -port-file F   OCI registry (referrers API on)
//	fakeupstream serve -dir D -addr 127.0.0.1:0 -port-file F   static files (PEP 503 index)
//	fakeupstream push-base -ref R -tar linux/amd64=A.tar -tar linux/arm64=B.tar
//	    pushes root filesystem tarballs as a multi-arch image index and prints
//	    {"index": ..., "platforms": {...}} as JSON.
//	fakeupstream gallery -urls-file F   fake Marketplace + Open VSX serving the VSIX fixtures
//	fakeupstream e2e-config -out DIR ...   writes the e2e matrix.yaml and catalog.json
//	fakeupstream copy SRC DST | delete-tag REPO:TAG | relabel -label K=V SRC DST   tampering
//	fakeupstream sbom-packages REF   the packages of each platform manifest's SBOM attestation, as JSON
//	fakeupstream break-image -platform P (-env K=V | -graft-from P2) SRC DST   broken images for smoke image
//
// It is test scaffolding, not part of imagectl.
package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/regauth/regauthtest"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeupstream registry|serve|push-base|gallery|e2e-config|copy|delete-tag|relabel [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "registry":
		err = runRegistry(ctx, os.Args[2:])
	case "serve":
		err = runServe(ctx, os.Args[2:])
	case "gallery":
		err = runGallery(ctx, os.Args[2:])
	case "e2e-config":
		err = runConfig(os.Args[2:])
	case "copy":
		err = runCopy(ctx, os.Args[2:])
	case "delete-tag":
		err = runDeleteTag(ctx, os.Args[2:])
	case "relabel":
		err = runRelabel(ctx, os.Args[2:])
	case "push-base":
		err = runPushBase(ctx, os.Args[2:], os.Stdout)
	case "sbom-packages":
		err = runSBOMPackages(ctx, os.Args[2:])
	case "break-image":
		err = runBreakImage(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeupstream %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// listen listens on addr and writes the chosen port to portFile (temp file +
// rename, so a reader never sees a partial number).
func listen(addr, portFile string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		tmp := portFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, portFile); err != nil {
			return nil, err
		}
	}
	return ln, nil
}

func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runRegistry(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("registry", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	portFile := fs.String("port-file", "", "write the port here once listening")
	logFile := fs.String("log", "", "request log (default: discarded)")
	user := fs.String("user", "", "require token authentication as Docker Hub does, with this user (and -password-file)")
	passwordFile := fs.String("password-file", "", "file holding the password of -user")
	fs.Parse(args)
	ln, err := listen(*addr, *portFile)
	if err != nil {
		return err
	}
	lw := io.Discard
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		lw = f
	}
	var h http.Handler = registry.New(registry.Logger(log.New(lw, "", log.LstdFlags)), registry.WithReferrersSupport(true))
	if *user != "" {
		pw, err := os.ReadFile(*passwordFile)
		if err != nil {
			return fmt.Errorf("-password-file: %w", err)
		}
		h = regauthtest.New(h, *user, strings.TrimSpace(string(pw)))
	}
	return serve(ctx, ln, countBytes(h, lw))
}

// countBytes logs the size of every blob upload so the benchmark can report
// bytes pushed as the registry saw them.
func countBytes(h http.Handler, w io.Writer) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodPost) && strings.Contains(r.URL.Path, "/blobs/uploads/") {
			cr := &countingReader{r: r.Body}
			r.Body = cr
			h.ServeHTTP(rw, r)
			fmt.Fprintf(w, "upload-bytes %d %s %s\n", cr.n, r.Method, r.URL.Path)
			return
		}
		h.ServeHTTP(rw, r)
	})
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
func (c *countingReader) Close() error { return c.r.Close() }

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to serve")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	portFile := fs.String("port-file", "", "write the port here once listening")
	fs.Parse(args)
	if *dir == "" {
		return errors.New("-dir is required")
	}
	ln, err := listen(*addr, *portFile)
	if err != nil {
		return err
	}
	return serve(ctx, ln, simpleIndex(*dir))
}

// simpleIndex serves dir's files, and each project page of the Simple API
// (GET /simple/{project}/) as pypi.org negotiates it: its JSON form
// (index.json, written by mkwheels.py) when the Accept header asks for
// application/vnd.pypi.simple.v1+json, its HTML (index.html) otherwise.
func simpleIndex(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean(r.URL.Path)
		if strings.HasPrefix(p, "/simple/") && strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Vary", "Accept")
			if pypitest.SelectContentType(r.Header.Get("Accept")) == pypitest.SimpleJSONType {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p), "index.json"))
				if err == nil {
					w.Header().Set("Content-Type", pypitest.SimpleJSONType)
					w.Write(b)
					return
				}
				if !errors.Is(err, os.ErrNotExist) {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
			}
		}
		files.ServeHTTP(w, r)
	})
}

type tarFlags map[string]string

func (t tarFlags) String() string { return fmt.Sprint(map[string]string(t)) }
func (t tarFlags) Set(v string) error {
	p, f, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want PLATFORM=FILE, got %q", v)
	}
	t[p] = f
	return nil
}

func runPushBase(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("push-base", flag.ExitOnError)
	ref := fs.String("ref", "", "destination reference, e.g. 127.0.0.1:5000/base:bookworm")
	tars := tarFlags{}
	fs.Var(tars, "tar", "PLATFORM=ROOTFS.tar (repeatable)")
	fs.Parse(args)
	if *ref == "" || len(tars) == 0 {
		return errors.New("-ref and at least one -tar are required")
	}
	tag, err := name.NewTag(*ref, name.Insecure)
	if err != nil {
		return err
	}
	plats := make([]string, 0, len(tars))
	for p := range tars {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	res := struct {
		Index     string            `json:"index"`
		Platforms map[string]string `json:"platforms"`
	}{Platforms: map[string]string{}}
	for _, p := range plats {
		img, err := rootfsImage(tars[p], p)
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		if err := remote.Write(tag.Context().Digest(d.String()), img, regauth.RemoteOptions(ctx)...); err != nil {
			return fmt.Errorf("push %s: %w", p, err)
		}
		pl, _ := v1.ParsePlatform(p)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: pl}})
		res.Platforms[p] = d.String()
	}
	if err := remote.WriteIndex(tag, idx, regauth.RemoteOptions(ctx)...); err != nil {
		return fmt.Errorf("push index %s: %w", tag, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	res.Index = d.String()
	return json.NewEncoder(out).Encode(res)
}

// tarHasInit reports whether the root filesystem tarball has /init.
func tarHasInit(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", p, err)
		}
		if strings.TrimPrefix(h.Name, "./") == "init" {
			return true, nil
		}
	}
}

// rootfsImage makes a one-layer image from an mmdebstrap root filesystem
// tarball, configured like linuxserver/code-server where imagectl cares
// (HOME=/config, files of user abc 911:911 under /config).
func rootfsImage(path, platform string) (v1.Image, error) {
	pl, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(path, tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer from %s: %w", path, err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = pl.OS, pl.Architecture, pl.Variant
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/config"}
	cf.Config.Cmd = []string{"/bin/sh"}
	// A root filesystem with the code-server stand-in (hack/standin) starts
	// like linuxserver/code-server: ENTRYPOINT ["/init"], port 8443.
	if hasInit, err := tarHasInit(path); err != nil {
		return nil, err
	} else if hasInit {
		cf.Config.Entrypoint, cf.Config.Cmd = []string{"/init"}, nil
		cf.Config.ExposedPorts = map[string]struct{}{"8443/tcp": {}}
	}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "imagectl e2e stand-in base (" + filepath.Base(path) + ")"}
	return mutate.ConfigFile(img, cf)
}
