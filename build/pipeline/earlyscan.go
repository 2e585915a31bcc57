package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/sbom"
)

// earlyScans are the platform images' SBOM scans started while the images
// are pushed: the solve prepares each image in its buildkitd's store
// first (prepareThenPush), and its scan reads it from there, with the
// base's layers the prefetch decompressed, as its push runs. The sign
// stage then attaches what the scan of the manifest it signs found
// (scanned), instead of scanning after the push.
type earlyScans struct {
	scanner Scanner
	images  builderImages
	layers  layerSource
	// base is the base image of each platform, by digest: the layers the
	// builder's store does not hold (a base's, never pulled because no
	// step ran on it) are read from there.
	base   map[string]name.Digest
	opts   sbom.Options // but Platform and LayerDir
	remote []remote.Option

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{} // maxConcurrentScans

	mu    sync.Mutex
	scans map[string]*earlyScan // by platform
}

// earlyScan is one platform's scan: done is closed when it ended.
type earlyScan struct {
	done     chan struct{}
	manifest string // the digest of the manifest scanned
	result   *sbom.Result
	readFrom string
	duration time.Duration
	err      error
}

// startEarlyScans returns the early scans of a build that scans its
// pushed images (Request.scansPushedImages) when b can open the images it
// built (builderImages); nil otherwise, and the scans run after the push.
// The scans start as each platform is prepared (start).
func startEarlyScans(ctx context.Context, req *Request, t *target, b build.Interface, layers layerSource) *earlyScans {
	images, ok := b.(builderImages)
	bases := baseDigests(t.set())
	if !ok || !req.scansPushedImages() || bases == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	return &earlyScans{
		scanner: req.Sign.Scanner, images: images, layers: layers, base: bases,
		opts:   scanOptions(t.repo, t.set(), t.epoch, sbomFormat(req.Sign.SBOMFormat)),
		remote: regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...),
		ctx:    ctx, cancel: cancel,
		sem:   make(chan struct{}, maxConcurrentScans),
		scans: map[string]*earlyScan{},
	}
}

// start starts the scan of the image r prepared (solveAll's prepared).
func (es *earlyScans) start(r *build.PlatformResult) {
	sc := &earlyScan{done: make(chan struct{})}
	es.mu.Lock()
	es.scans[r.Platform] = sc
	es.mu.Unlock()
	es.wg.Add(1)
	go func() {
		defer es.wg.Done()
		defer close(sc.done)
		start := time.Now()
		sc.err = es.scan(sc, r)
		sc.duration = time.Since(start)
	}()
}

// scan scans r's image into sc.
func (es *earlyScans) scan(sc *earlyScan, r *build.PlatformResult) error {
	select {
	case es.sem <- struct{}{}:
		defer func() { <-es.sem }()
	case <-es.ctx.Done():
		return es.ctx.Err()
	}
	base, err := remote.Image(es.base[r.Platform], append(es.remote, remote.WithContext(es.ctx))...)
	if err != nil {
		return fmt.Errorf("reading the base %s: %w", es.base[r.Platform], err)
	}
	img, closeImg, fellBack, err := es.images.Image(es.ctx, r, "", base)
	if err != nil {
		return err
	}
	defer func() { _ = closeImg() }()
	d, err := img.Digest()
	if err != nil {
		return err
	}
	sc.manifest = d.String()
	o := es.opts
	o.Platform = r.Platform
	if es.layers != nil {
		// A prefetch that failed leaves the scan to read the base's
		// layers itself; the scan after the push would do the same.
		o.LayerDir, _ = es.layers.layerDir(es.ctx, r.Platform)
	}
	if sc.result, err = es.scanner.Scan(es.ctx, img, o); err != nil {
		return err
	}
	sc.readFrom = readFromBuilder(fellBack())
	return nil
}

// scanned waits for the scan of platform's image and returns it when it
// scanned the manifest digest; nil when none was started, it failed (err
// says why) or it scanned another manifest.
func (es *earlyScans) scanned(ctx context.Context, platform, digest string) (*earlyScan, error) {
	if es == nil {
		return nil, nil
	}
	es.mu.Lock()
	sc := es.scans[platform]
	es.mu.Unlock()
	if sc == nil {
		return nil, nil
	}
	select {
	case <-sc.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	switch {
	case sc.err != nil:
		return nil, sc.err
	case sc.manifest != digest:
		return nil, fmt.Errorf("it scanned the manifest %s, and %s was pushed", sc.manifest, digest)
	}
	return sc, nil
}

// stop cancels the scans still running and waits for them.
func (es *earlyScans) stop() {
	if es == nil {
		return
	}
	es.cancel()
	es.wg.Wait()
}

// prepared is the solve's prepared callback: nil without early scans.
func (es *earlyScans) prepared() func(*build.PlatformResult) {
	if es == nil {
		return nil
	}
	return es.start
}

// sbomFormat is the format of the platform SBOMs (SignOptions.SBOMFormat,
// default SPDX).
func sbomFormat(f string) string {
	if f == "" {
		return sbom.FormatSPDX
	}
	return f
}
