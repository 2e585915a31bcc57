package github

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// sumsAsset is the aggregate checksum file of a python-build-standalone
// release (per-file .sha256 assets stopped with release 20250708).
const sumsAsset = "SHA256SUMS"

// maxSumsSize bounds SHA256SUMS (about 200 KiB for a release of ~1500 files).
const maxSumsSize = 8 << 20

// standaloneAssetRE matches a python-build-standalone Linux glibc tarball:
// cpython-3.12.11+20250808-x86_64-unknown-linux-gnu-install_only.tar.gz.
// Pre-release CPython versions (3.14.0rc1) do not match.
var standaloneAssetRE = regexp.MustCompile(`^cpython-(3\.(\d+)\.(\d+))\+(\d+)-(x86_64|aarch64)-unknown-linux-gnu-([a-z_]+)\.tar\.gz$`)

type asset struct {
	Name               string `json:"name"`
	BrowserDownloadURL string `json:"browser_download_url"`
	Size               int64  `json:"size"`
	// Digest is "sha256:<hex>" on newer releases, absent on older ones.
	Digest string `json:"digest"`
}

// releaseByTag is the part of GET /repos/{repo}/releases/tags/{tag} used:
// its embedded assets list is not used, because the API documents no bound
// on it and python-build-standalone releases carry well over 1,000 assets;
// they are listed through the paginated assets endpoint instead.
type releaseByTag struct {
	ID      int64  `json:"id"`
	TagName string `json:"tag_name"`
}

// releaseTagRE is a python-build-standalone release tag: a date.
var releaseTagRE = regexp.MustCompile(`^[0-9]{8}$`)

// NewerReleases implements catalog.PythonRuntimeSource: the tags of the
// published (not draft, not pre-release) releases of st.Repository that
// are dates later than st.Release, newest first, from GET
// {base}/repos/{repo}/releases (newest first, 100 a page; paging stops at
// the first page that reaches st.Release).
func (c *Client) NewerReleases(ctx context.Context, st matrix.Standalone) ([]string, error) {
	var out []string
	for page := 1; page <= maxPages; page++ {
		u := fmt.Sprintf("%s/repos/%s/releases?per_page=100&page=%d", c.base, st.Repository, page)
		resp, err := httpx.Get(ctx, c.hc, u, c.apiHeader())
		if err != nil {
			return nil, err
		}
		b, err := httpx.ReadJSONBody(resp.Body, u, 64<<20)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var rs []release
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", u, err)
		}
		reached := false
		for _, r := range rs {
			if !releaseTagRE.MatchString(r.TagName) {
				continue
			}
			if r.TagName <= st.Release {
				reached = true
				continue
			}
			if !r.Draft && !r.Prerelease {
				out = append(out, r.TagName)
			}
		}
		if reached || len(rs) < 100 {
			break
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return slices.Compact(out), nil
}

// maxAssetPages bounds the asset listing at 100 assets a page.
const maxAssetPages = 50

// PythonRuntimes implements catalog.PythonRuntimeSource: it reads the
// release st.Release of st.Repository (GET {base}/repos/{repo}/releases/tags/{tag}),
// picks for every CPython minor version keep accepts the highest patch
// whose st.Flavor tarball exists for both x86_64 and aarch64, and takes each
// tarball's sha256 from the release's SHA256SUMS asset, else from the
// asset's digest. A tarball with neither, or where the two disagree, fails.
func (c *Client) PythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool) ([]catalog.PythonRuntime, error) {
	return c.pythonRuntimes(ctx, st, keep, false)
}

// CheckedPythonRuntimes implements catalog.PythonRuntimeSource: it is
// PythonRuntimes for a release refresh may propose, where every tarball's
// sha256 must come from the release's SHA256SUMS (an asset digest is only
// compared with it). A release without SHA256SUMS, a tarball SHA256SUMS
// does not list, or a digest that disagrees gives an error wrapping
// catalog.ErrUnchecked.
func (c *Client) CheckedPythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool) ([]catalog.PythonRuntime, error) {
	return c.pythonRuntimes(ctx, st, keep, true)
}

func (c *Client) pythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool, checked bool) ([]catalog.PythonRuntime, error) {
	u := fmt.Sprintf("%s/repos/%s/releases/tags/%s", c.base, st.Repository, url.PathEscape(st.Release))
	resp, err := httpx.Get(ctx, c.hc, u, c.apiHeader())
	if err != nil {
		return nil, err
	}
	b, err := httpx.ReadJSONBody(resp.Body, u, 64<<20)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var rel releaseByTag
	if err := json.Unmarshal(b, &rel); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", u, err)
	}
	if rel.TagName != st.Release || rel.ID == 0 {
		return nil, fmt.Errorf("%s: tag_name %q and id %d, want tag %q and an id", u, rel.TagName, rel.ID, st.Release)
	}
	assets, err := c.listAssets(ctx, st.Repository, rel.ID)
	if err != nil {
		return nil, err
	}

	best, sums := pickRuntimes(assets, st, keep)
	if len(best) == 0 {
		return nil, nil
	}

	if checked && sums == nil {
		return nil, fmt.Errorf("%s: the release has no %s asset: %w", u, sumsAsset, catalog.ErrUnchecked)
	}
	var sumOf map[string]string
	if sums != nil {
		if sumOf, err = c.readSums(ctx, sums.BrowserDownloadURL); err != nil {
			return nil, err
		}
	}
	var out []catalog.PythonRuntime
	for minor, p := range best {
		r := catalog.PythonRuntime{
			Python: minor, Version: p.version,
			Repository: st.Repository, Release: st.Release, Flavor: st.Flavor,
			Files: map[string]catalog.RuntimeFile{},
		}
		for _, platform := range []string{"linux/amd64", "linux/arm64"} {
			arch, _ := catalog.RuntimeArch(platform)
			a := p.files[arch]
			if _, listed := sumOf[a.Name]; checked && !listed {
				return nil, fmt.Errorf("%s: asset %s: %s does not list it: %w", u, a.Name, sums.BrowserDownloadURL, catalog.ErrUnchecked)
			}
			sum, err := assetSum(a, sumOf, sums)
			if err != nil {
				if checked {
					return nil, fmt.Errorf("%s: %w: %w", u, err, catalog.ErrUnchecked)
				}
				return nil, fmt.Errorf("%s: %w", u, err)
			}
			if !strings.HasPrefix(a.BrowserDownloadURL, "https://") && !strings.HasPrefix(a.BrowserDownloadURL, "http://") {
				return nil, fmt.Errorf("%s: asset %s: browser_download_url %q is not an http(s) URL", u, a.Name, a.BrowserDownloadURL)
			}
			r.Files[platform] = catalog.RuntimeFile{URL: a.BrowserDownloadURL, SHA256: sum, Size: a.Size}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b catalog.PythonRuntime) int { return catalog.ComparePythons(a.Python, b.Python) })
	return out, nil
}

// runtimePick is one CPython version's tarballs of the release.
type runtimePick struct {
	version string
	patch   int
	files   map[string]asset // arch -> asset
}

// pickRuntimes picks, for every CPython minor version keep accepts, the
// highest patch whose st.Flavor tarball exists for both arches (by minor),
// and finds the SHA256SUMS asset (nil when there is none).
func pickRuntimes(assets []asset, st matrix.Standalone, keep func(minor string) bool) (map[string]*runtimePick, *asset) {
	// per minor, per full version, the assets found
	byVersion := map[string]*runtimePick{}
	var sums *asset
	for i := range assets {
		a := assets[i]
		if a.Name == sumsAsset {
			sums = &assets[i]
			continue
		}
		m := standaloneAssetRE.FindStringSubmatch(a.Name)
		if m == nil || m[4] != st.Release || m[6] != st.Flavor {
			continue
		}
		minor := "3." + m[2]
		if !keep(minor) {
			continue
		}
		p := byVersion[m[1]]
		if p == nil {
			var patch int
			fmt.Sscan(m[3], &patch)
			p = &runtimePick{version: m[1], patch: patch, files: map[string]asset{}}
			byVersion[m[1]] = p
		}
		p.files[m[5]] = a
	}
	best := map[string]*runtimePick{} // minor -> highest patch with both arches
	for _, p := range byVersion {
		if len(p.files) != 2 {
			continue
		}
		minor := p.version[:strings.LastIndex(p.version, ".")]
		if b := best[minor]; b == nil || p.patch > b.patch {
			best[minor] = p
		}
	}
	return best, sums
}

// listAssets pages through GET {base}/repos/{repo}/releases/{id}/assets.
func (c *Client) listAssets(ctx context.Context, repo string, id int64) ([]asset, error) {
	var out []asset
	for page := 1; page <= maxAssetPages; page++ {
		u := fmt.Sprintf("%s/repos/%s/releases/%d/assets?per_page=100&page=%d", c.base, repo, id, page)
		resp, err := httpx.Get(ctx, c.hc, u, c.apiHeader())
		if err != nil {
			return nil, err
		}
		b, err := httpx.ReadJSONBody(resp.Body, u, 16<<20)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var as []asset
		if err := json.Unmarshal(b, &as); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", u, err)
		}
		out = append(out, as...)
		if len(as) < 100 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("release %d of %s has more than %d pages of assets", id, repo, maxAssetPages)
}

// assetSum is a's sha256 from SHA256SUMS (sumOf, nil without that asset),
// else from its digest field.
func assetSum(a asset, sumOf map[string]string, sums *asset) (string, error) {
	d, hasDigest := strings.CutPrefix(a.Digest, "sha256:")
	if hasDigest && !isHex64(d) {
		return "", fmt.Errorf("asset %s: digest %q is not sha256:<64 hex digits>", a.Name, a.Digest)
	}
	s, inSums := sumOf[a.Name]
	switch {
	case inSums && hasDigest && s != d:
		return "", fmt.Errorf("asset %s: %s says sha256 %s but the asset digest is sha256:%s", a.Name, sums.BrowserDownloadURL, s, d)
	case inSums:
		return s, nil
	case hasDigest:
		return d, nil
	case sums == nil:
		return "", fmt.Errorf("asset %s: no sha256 (the release has no %s asset and the asset no digest)", a.Name, sumsAsset)
	}
	return "", fmt.Errorf("asset %s: no sha256 (%s does not list it and the asset has no digest)", a.Name, sums.BrowserDownloadURL)
}

// readSums downloads and parses a SHA256SUMS file: lines "<hex>  <name>"
// (or "<hex> *<name>"). Anything else, HTML included, is an error.
func (c *Client) readSums(ctx context.Context, u string) (map[string]string, error) {
	resp, err := httpx.Get(ctx, c.hc, u, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSumsSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(b) > maxSumsSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", u, maxSumsSize)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty, want lines of <sha256>  <file name>", u)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if !ok || !isHex64(sum) || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("%s line %d: %.60q is not \"<sha256>  <file name>\" (an HTML page or another format?)", u, n, line)
		}
		if prev, dup := out[name]; dup && prev != sum {
			return nil, fmt.Errorf("%s line %d: %s listed twice with different sums", u, n, name)
		}
		out[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	return out, nil
}

func isHex64(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }
