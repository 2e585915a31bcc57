// Package gallerytest runs a fake Visual Studio Marketplace and a fake Open VSX
// registry (httptest servers) that answer in the exact shapes of the real
// services (see shared notes upstream-apis.md) and serve real VSIX files
// (extensions/testdata/vsix, built with @vscode/vsce). Faults can be switched
// on per download (429 + Retry-After, 503 bursts, connection reset mid-body,
// truncated body, gzip with or without Content-Encoding, HTML with status
// 200, a replaced body), and every request and byte served is counted.
//
// Other packages' tests use it too:
//
//	builds, _ := gallerytest.LoadDir(gallerytest.FixtureDir())
//	f := gallerytest.New(builds)
//	defer f.Close()
//	marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()))
package gallerytest
