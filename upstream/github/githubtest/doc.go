// Package githubtest is an in-process fake of the GitHub REST API, the part
// imagectl reads (see shared notes upstream-apis.md), answering in GitHub's
// shapes:
//
//	GET /repos/{owner}/{repo}/releases?per_page=&page=      [release...] (paginated)
//	GET /repos/{owner}/{repo}/releases/tags/{tag}           release
//	GET /repos/{owner}/{repo}/releases/{id}                 release
//	GET /repos/{owner}/{repo}/releases/{id}/assets?per_page=&page=  [asset...] (paginated)
//	GET /{owner}/{repo}/releases/download/{tag}/{name}      the asset's bytes (browser_download_url)
//
// A release is {"url", "assets_url", "html_url", "id", "tag_name", "name",
// "draft", "prerelease", "created_at", "published_at", "assets": [asset...]}
// and an asset {"url", "id", "name", "label", "content_type", "state",
// "size", "digest": "sha256:<hex>" or null, "download_count", "created_at",
// "updated_at", "browser_download_url"}. Pagination is GitHub's: per_page
// defaults to 30 and is capped at 100, page counts from 1, a page past the
// end is [], and a Link header names the next and last pages.
//
// Like a release of python-build-standalone (well over 1,000 assets), the
// assets list embedded in a release is cut short (EmbeddedAssets), so a
// client must page through the assets endpoint; Release.Padding puts other
// assets first so the wanted ones lie past the first page.
//
// Unknown repositories, releases and assets get GitHub's 404 answer
// {"message": "Not Found", ...}. Options make the API, or named downloads,
// answer an HTML page with status 200 (a login page or a proxy's error).
// Every request is recorded with its Authorization header.
//
// Downloads are served directly, without GitHub's redirect to its object
// store. URLs in answers name the host the request came to.
//
//	f := githubtest.New([]githubtest.Release{{Repository: "astral-sh/python-build-standalone",
//		TagName: "20250808", Padding: 150, Assets: assets}})
//
// where assets might be
//
//	x := githubtest.Asset{Name: "cpython-3.12.11+20250808-x86_64-unknown-linux-gnu-install_only.tar.gz", SHA256: sum, Digest: true}
//	assets := []githubtest.Asset{x, githubtest.SumsAsset(githubtest.Sums([]githubtest.Asset{x}))}
//	srv := httptest.NewServer(f)
package githubtest
