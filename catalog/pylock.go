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
)

// PythonLock is the complete closure of Python distributions that pip's own
// resolver chose for one set's top-level requirements
// (ray[<extras>]==Ray, debugpy==Debugpy) for CPython Python on one OCI
// platform, with the exact wheel of each: what the build installs with
// pip install --no-deps --require-hashes. imagectl matrix refresh records one
// per (set, platform) of matrix list.
type PythonLock struct {
	Ray       string   `json:"ray"`
	RayExtras []string `json:"rayExtras,omitempty"`
	Debugpy   string   `json:"debugpy"`
	// Python is the CPython minor version, e.g. "3.12".
	Python string `json:"python"`
	// Platform is the OCI platform, e.g. linux/arm64.
	Platform string `json:"platform"`
	// Index is the PEP 503 index pip resolved against
	// (matrix.yaml upstreams.packageIndex).
	Index string `json:"index"`
	// Distributions is the closure, sorted by normalized name; empty when
	// Blocked.
	Distributions []Distribution `json:"distributions,omitempty"`
	// Blocked says why pip found no installable closure on this platform,
	// e.g. a dependency with no wheel for it.
	Blocked *LockBlocked `json:"blocked,omitempty"`
}

// Distribution is one locked wheel.
type Distribution struct {
	// Name is the distribution name as its metadata spells it.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Filename is the wheel's file name.
	Filename string `json:"filename"`
	// URL is where pip found the wheel.
	URL string `json:"url"`
	// SHA256 is the wheel's hex sha256.
	SHA256 string `json:"sha256"`
}

// LockBlocked is why a closure could not be locked on a platform.
type LockBlocked struct {
	// Distribution is the distribution that has no installable wheel
	// (normalized name), or empty when pip reported a conflict instead.
	Distribution string `json:"distribution,omitempty"`
	// Detail is pip's own one-line reason.
	Detail string `json:"detail"`
}

// LockKey identifies what a PythonLock locks.
type LockKey struct {
	Ray       string
	RayExtras []string
	Debugpy   string
	Python    string
	Platform  string
}

// Key returns what l locks.
func (l PythonLock) Key() LockKey {
	return LockKey{Ray: l.Ray, RayExtras: l.RayExtras, Debugpy: l.Debugpy, Python: l.Python, Platform: l.Platform}
}

// Matches reports whether l locks k (extras compared as sets).
func (l PythonLock) Matches(k LockKey) bool {
	a, b := slices.Clone(l.RayExtras), slices.Clone(k.RayExtras)
	slices.Sort(a)
	slices.Sort(b)
	return l.Ray == k.Ray && l.Debugpy == k.Debugpy && l.Python == k.Python && l.Platform == k.Platform && slices.Equal(a, b)
}

// Requirements are the top-level requirements of k, as pip takes them.
func (k LockKey) Requirements() []string {
	ray := "ray"
	if len(k.RayExtras) > 0 {
		ex := slices.Clone(k.RayExtras)
		slices.Sort(ex)
		ray += "[" + strings.Join(ex, ",") + "]"
	}
	return []string{ray + "==" + k.Ray, "debugpy==" + k.Debugpy}
}

func (k LockKey) String() string {
	return fmt.Sprintf("%s and debugpy==%s for CPython %s on %s", k.Requirements()[0], k.Debugpy, k.Python, k.Platform)
}

// FindPythonLock returns the lock of k in c, if any.
func (c *Catalog) FindPythonLock(k LockKey) (PythonLock, bool) {
	for _, l := range c.PythonLocks {
		if l.Matches(k) {
			return l, true
		}
	}
	return PythonLock{}, false
}

// NormalizeName is the PEP 503 normalized form of a distribution name.
func NormalizeName(name string) string {
	return strings.ToLower(nameRuns.ReplaceAllString(name, "-"))
}

var (
	nameRuns = regexp.MustCompile(`[-_.]+`)
	// distName is a valid distribution name (PEP 508).
	distName = regexp.MustCompile(`^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$`)
	// wheelVersion is what a locked version may look like: PEP 440 public
	// and local versions, no spaces or requirement syntax.
	wheelVersion = regexp.MustCompile(`^[0-9A-Za-z!+._-]+$`)
)

// check reports the first malformed field of l.
func (l PythonLock) check() error {
	if l.Ray == "" || !wheelVersion.MatchString(l.Ray) {
		return fmt.Errorf("ray %q: want a version", l.Ray)
	}
	if l.Debugpy == "" || !wheelVersion.MatchString(l.Debugpy) {
		return fmt.Errorf("debugpy %q: want a version", l.Debugpy)
	}
	for _, e := range l.RayExtras {
		if !distName.MatchString(e) {
			return fmt.Errorf("rayExtras %q: want an extra name", e)
		}
	}
	if _, ok := PythonMinor(l.Python); !ok {
		return fmt.Errorf("python %q: want a CPython minor version such as 3.12", l.Python)
	}
	if _, ok := RuntimeArch(l.Platform); !ok {
		return fmt.Errorf("platform %q: want linux/amd64 or linux/arm64", l.Platform)
	}
	if u, err := url.Parse(l.Index); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("index %q: want the http(s) URL of a PEP 503 index", l.Index)
	}
	switch {
	case l.Blocked != nil && len(l.Distributions) > 0:
		return errors.New("both blocked and distributions: a blocked lock has no closure")
	case l.Blocked != nil:
		if l.Blocked.Detail == "" {
			return errors.New("blocked.detail is empty: want pip's reason")
		}
		if d := l.Blocked.Distribution; d != "" && !distName.MatchString(d) {
			return fmt.Errorf("blocked.distribution %q: want a distribution name", d)
		}
		return nil
	case len(l.Distributions) == 0:
		return errors.New("no distributions and not blocked: want the closure pip resolved")
	}
	seen := map[string]bool{}
	for i, d := range l.Distributions {
		if err := d.check(); err != nil {
			return fmt.Errorf("distributions[%d]: %w", i, err)
		}
		n := NormalizeName(d.Name)
		if seen[n] {
			return fmt.Errorf("distributions[%d]: %s appears twice", i, d.Name)
		}
		seen[n] = true
	}
	for _, top := range []string{"ray", "debugpy"} {
		if !seen[top] {
			return fmt.Errorf("the closure has no %s (a top-level requirement)", top)
		}
	}
	for _, d := range l.Distributions {
		switch NormalizeName(d.Name) {
		case "ray":
			if d.Version != l.Ray {
				return fmt.Errorf("ray %s in the closure, want %s", d.Version, l.Ray)
			}
		case "debugpy":
			if d.Version != l.Debugpy {
				return fmt.Errorf("debugpy %s in the closure, want %s", d.Version, l.Debugpy)
			}
		}
	}
	return nil
}

// check reports the first malformed field of d.
func (d Distribution) check() error {
	if !distName.MatchString(d.Name) {
		return fmt.Errorf("name %q: want a distribution name", d.Name)
	}
	if d.Version == "" || !wheelVersion.MatchString(d.Version) {
		return fmt.Errorf("%s: version %q: want a version", d.Name, d.Version)
	}
	if !strings.HasSuffix(d.Filename, ".whl") || strings.ContainsAny(d.Filename, "/\\ ") {
		return fmt.Errorf("%s: filename %q: want a wheel file name (*.whl)", d.Name, d.Filename)
	}
	parts := strings.Split(strings.TrimSuffix(d.Filename, ".whl"), "-")
	if len(parts) < 5 || NormalizeName(parts[0]) != NormalizeName(d.Name) {
		return fmt.Errorf("%s: filename %q does not name a wheel of %s", d.Name, d.Filename, d.Name)
	}
	if u, err := url.Parse(d.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: url %q: want an http(s) URL", d.Name, d.URL)
	}
	if !validHex(d.SHA256) {
		return fmt.Errorf("%s: sha256 %q: want 64 lowercase hex digits", d.Name, d.SHA256)
	}
	return nil
}

// normalizePythonLocks sorts the locks (newest Ray first, then debugpy,
// Python, platform) and each closure by normalized name.
func normalizePythonLocks(ls []PythonLock) {
	for i := range ls {
		slices.Sort(ls[i].RayExtras)
		slices.SortStableFunc(ls[i].Distributions, func(a, b Distribution) int {
			return strings.Compare(NormalizeName(a.Name), NormalizeName(b.Name))
		})
	}
	slices.SortStableFunc(ls, func(a, b PythonLock) int {
		if d := CompareVersions(b.Ray, a.Ray); d != 0 {
			return d
		}
		if d := CompareVersions(b.Debugpy, a.Debugpy); d != 0 {
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

// LockRequest is one closure for a PythonLocker to resolve.
type LockRequest struct {
	// Requirements are the top-level requirements, e.g. "ray[default]==2.46.0".
	Requirements []string
	// Python is the target CPython minor version and Platform the OCI platform.
	Python   string
	Platform string
	// Index is the PEP 503 index URL.
	Index string
}

// BlockedError is returned by a PythonLocker when the closure has no
// installable wheel on the platform (recorded as PythonLock.Blocked, not a
// refresh failure).
type BlockedError struct {
	Blocked LockBlocked
}

func (e *BlockedError) Error() string {
	if e.Blocked.Distribution != "" {
		return fmt.Sprintf("blocked by %s: %s", e.Blocked.Distribution, e.Blocked.Detail)
	}
	return "blocked: " + e.Blocked.Detail
}

// PythonLocker resolves the complete closure of a LockRequest with pip's
// own resolver (upstream/pip).
type PythonLocker interface {
	Lock(ctx context.Context, req LockRequest) ([]Distribution, error)
}

// LockPython resolves the closure of every key with l against index and
// records the locks in c, replacing any earlier lock of the same key; keys
// are locked at most parallel at a time (at least 1). A closure with no
// installable wheel is recorded as blocked; any other error fails the whole
// call and leaves c untouched.
func LockPython(ctx context.Context, c *Catalog, keys []LockKey, index string, l PythonLocker, parallel int) error {
	if l == nil {
		return errors.New("python lock: no locker")
	}
	if parallel < 1 {
		parallel = 1
	}
	var uniq []LockKey
	seen := map[string]bool{}
	for _, k := range keys {
		if s := k.String(); !seen[s] {
			seen[s] = true
			uniq = append(uniq, k)
		}
	}
	locks := make([]PythonLock, len(uniq))
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
			lock := PythonLock{Ray: k.Ray, RayExtras: slices.Clone(k.RayExtras), Debugpy: k.Debugpy, Python: k.Python, Platform: k.Platform, Index: index}
			ds, err := l.Lock(ctx, LockRequest{Requirements: k.Requirements(), Python: k.Python, Platform: k.Platform, Index: index})
			var be *BlockedError
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
			}
			normalizePythonLocks([]PythonLock{lock})
			if err := lock.check(); err != nil {
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
		c.PythonLocks = slices.DeleteFunc(c.PythonLocks, func(o PythonLock) bool { return o.Matches(lock.Key()) })
		c.PythonLocks = append(c.PythonLocks, lock)
	}
	normalizePythonLocks(c.PythonLocks)
	return nil
}
