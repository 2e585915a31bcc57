package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/pylock"
)

// The catalog's Python locks (PythonLocks): found by key, validated with the
// rest of catalog.json, kept in order, and filled by LockPython. What a lock
// is (pylock.Lock, pylock.Key) is package pylock's.

// FindPythonLock returns the lock of k in c, if any.
func (c *Catalog) FindPythonLock(k pylock.Key) (pylock.Lock, bool) {
	for _, l := range c.PythonLocks {
		if l.Matches(k) {
			return l, true
		}
	}
	return pylock.Lock{}, false
}

// distName is a valid distribution name (PEP 508).
var distName = regexp.MustCompile(`^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$`)

// checkLock reports the first malformed field of l (the rules of Validate).
func checkLock(l pylock.Lock) error {
	v := &validator{}
	v.pythonLock("", l)
	if v.err != nil {
		return v.err
	}
	return nil
}

// pythonLock checks one lock at JSON path p: its key, its index, and a
// closure of well-formed wheels (each name once, ray and debugpy at the
// locked versions) or a reason it is blocked, never both.
func (v *validator) pythonLock(p string, l pylock.Lock) {
	at := func(field string) string {
		if p == "" {
			return field
		}
		return p + "." + field
	}
	v.pythonVersion(at("ray"), l.Ray)
	v.pythonVersion(at("debugpy"), l.Debugpy)
	for i, e := range l.RayExtras {
		if !distName.MatchString(e) {
			v.fail(fmt.Sprintf("%s[%d]", at("rayExtras"), i), "%s: want an extra name such as default", quote(e))
		}
	}
	if _, ok := PythonMinor(l.Python); !ok {
		v.fail(at("python"), "%s: want a CPython minor version such as 3.12", quote(l.Python))
	}
	if _, ok := RuntimeArch(l.Platform); !ok {
		v.fail(at("platform"), "%s: want linux/amd64 or linux/arm64", quote(l.Platform))
	}
	v.url(at("index"), l.Index, false)
	switch {
	case l.Blocked != nil && len(l.Distributions) > 0:
		v.fail(at("blocked"), "set together with distributions: a blocked lock has no closure")
		return
	case l.Blocked != nil:
		if l.Blocked.Detail == "" {
			v.fail(at("blocked.detail"), "empty: want pip's reason")
		}
		if d := l.Blocked.Distribution; d != "" && !distName.MatchString(d) {
			v.fail(at("blocked.distribution"), "%s: want a distribution name", quote(d))
		}
		return
	case len(l.Distributions) == 0:
		v.fail(at("distributions"), "empty and not blocked: want the closure pip resolved")
		return
	}
	seen := map[string]int{}
	for i, d := range l.Distributions {
		pd := fmt.Sprintf("%s[%d]", at("distributions"), i)
		v.distribution(pd, d)
		v.duplicate(seen, imagespec.NormalizeName(d.Name), pd+".name", at("distributions")+"[%d] (the same normalized name)")
		switch imagespec.NormalizeName(d.Name) {
		case "ray":
			if d.Version != l.Ray {
				v.fail(pd+".version", "%s: the closure's ray, want the locked ray %s", quote(d.Version), l.Ray)
			}
		case "debugpy":
			if d.Version != l.Debugpy {
				v.fail(pd+".version", "%s: the closure's debugpy, want the locked debugpy %s", quote(d.Version), l.Debugpy)
			}
		}
	}
	for _, top := range []string{"ray", "debugpy"} {
		if _, ok := seen[top]; !ok {
			v.fail(at("distributions"), "has no %s: the top-level requirements are part of the closure", top)
		}
	}
}

// distribution checks one locked wheel at JSON path p.
func (v *validator) distribution(p string, d imagespec.PythonDist) {
	if !distName.MatchString(d.Name) {
		v.fail(p+".name", "%s: want a distribution name", quote(d.Name))
		return
	}
	if d.Version == "" || !versionRE.MatchString(d.Version) {
		v.fail(p+".version", "%s: want a version such as 1.3.1", quote(d.Version))
	}
	parts := strings.Split(strings.TrimSuffix(d.Filename, ".whl"), "-")
	switch {
	case !strings.HasSuffix(d.Filename, ".whl") || strings.ContainsAny(d.Filename, "/\\ "):
		v.fail(p+".filename", "%s: want a wheel file name (*.whl)", quote(d.Filename))
	case len(parts) < 5 || imagespec.NormalizeName(parts[0]) != imagespec.NormalizeName(d.Name) || parts[1] != strings.ReplaceAll(d.Version, "-", "_"):
		v.fail(p+".filename", "%s: not a wheel of %s %s", quote(d.Filename), d.Name, d.Version)
	}
	v.url(p+".url", d.URL, false)
	if !validHex(d.SHA256) {
		v.fail(p+".sha256", "%s: want 64 lowercase hex digits", quote(d.SHA256))
	}
}

// normalizePythonLocks sorts the locks (newest Ray first, then debugpy,
// Python, platform) and each closure by normalized name.
func normalizePythonLocks(ls []pylock.Lock) {
	for i := range ls {
		slices.Sort(ls[i].RayExtras)
		pylock.SortClosure(ls[i].Distributions)
	}
	slices.SortStableFunc(ls, func(a, b pylock.Lock) int {
		if d := ComparePythonVersions(b.Ray, a.Ray); d != 0 {
			return d
		}
		if d := ComparePythonVersions(b.Debugpy, a.Debugpy); d != 0 {
			return d
		}
		if d := ComparePythons(a.Python, b.Python); d != 0 {
			return d
		}
		if d := strings.Compare(a.Platform, b.Platform); d != 0 {
			return d
		}
		return strings.Compare(strings.Join(a.RayExtras, ","), strings.Join(b.RayExtras, ","))
	})
}

// LockPython resolves the closure of every key with l against index and
// records the locks in c, replacing any earlier lock of the same key; keys
// are locked at most parallel at a time (at least 1). A closure with no
// installable wheel is recorded as blocked; any other error fails the whole
// call and leaves c untouched. l gets index as it is; c records it, and every
// wheel URL, without userinfo.
func LockPython(ctx context.Context, c *Catalog, keys []pylock.Key, index string, l pylock.Locker, parallel int) error {
	if l == nil {
		return errors.New("python lock: no locker")
	}
	if parallel < 1 {
		parallel = 1
	}
	var uniq []pylock.Key
	seen := map[string]bool{}
	for _, k := range keys {
		if s := k.String(); !seen[s] {
			seen[s] = true
			uniq = append(uniq, k)
		}
	}
	locks := make([]pylock.Lock, len(uniq))
	errs := make([]error, len(uniq))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, k := range uniq {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			lock := pylock.Lock{Ray: k.Ray, RayExtras: slices.Clone(k.RayExtras), Debugpy: k.Debugpy, Python: k.Python, Platform: k.Platform, Index: withoutUserinfo(index)}
			ds, err := l.Lock(ctx, pylock.Request{Requirements: k.Requirements(), Python: k.Python, Platform: k.Platform, Index: index})
			var be *pylock.BlockedError
			switch {
			case errors.As(err, &be):
				b := be.Blocked
				lock.Blocked = &b
			case err != nil:
				errs[i] = fmt.Errorf("python lock of %s: %w", k, err)
				cancel()
				return
			default:
				lock.Distributions = ds
				for j := range lock.Distributions {
					lock.Distributions[j].URL = withoutUserinfo(lock.Distributions[j].URL)
				}
			}
			normalizePythonLocks([]pylock.Lock{lock})
			if err := checkLock(lock); err != nil {
				errs[i] = fmt.Errorf("python lock of %s: %w", k, err)
				cancel()
				return
			}
			locks[i] = lock
		}()
	}
	wg.Wait()
	// The first real failure, not the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, lock := range locks {
		c.PythonLocks = slices.DeleteFunc(c.PythonLocks, func(o pylock.Lock) bool { return o.Matches(lock.Key()) })
		c.PythonLocks = append(c.PythonLocks, lock)
	}
	normalizePythonLocks(c.PythonLocks)
	return nil
}

// withoutUserinfo returns raw without the user and password of its URL: what
// the catalog, a committed file, records of an index given with credentials
// (pip gets them, the file never does).
func withoutUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
