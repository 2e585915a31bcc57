package resolve

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/pylock"
)

// TestResolveIgnoresCatalogOrder shuffles every list of the committed
// catalog that resolution reads (including the ones it used to get sorted
// by a normalized deep copy: extension dependencies and pack members,
// Python closures, wheel Pythons) and checks that every set, explanation
// and All stay the same, and that the shuffled catalog is left as it was.
func TestResolveIgnoresCatalogOrder(t *testing.T) {
	cfg, err := matrix.Load("../matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load("../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	// Make the order of dependencies and pack members show: the debugger
	// depends on both Python extensions, which do not depend on each other
	// and come after it, and the Python extension's pack lists two more
	// extensions that are not in the set.
	slices.Reverse(cfg.Extensions)
	for i := range cat.Extensions {
		e := &cat.Extensions[i]
		for j := range e.Versions {
			switch e.ID {
			case "anyscalecompute.ray-distributed-debugger":
				e.Versions[j].Dependencies = []string{"ms-python.python", "ms-python.debugpy"}
			case "ms-python.debugpy":
				e.Versions[j].Dependencies = nil
			case "ms-python.python":
				e.Versions[j].ExtensionPack = append(e.Versions[j].ExtensionPack, "zz.absent", "aa.absent")
			}
		}
	}
	// The committed catalog locks no closure yet: lock each buildable set's.
	sets, _, err := All(cfg, cat, nil)
	if err != nil || len(sets) == 0 {
		t.Fatalf("All: %d sets, %v", len(sets), err)
	}
	for _, s := range sets {
		for _, p := range s.Platforms {
			cat.PythonLocks = append(cat.PythonLocks, pylock.Lock{
				Ray: s.Ray, RayExtras: s.RayExtras, Debugpy: s.Debugpy, Python: s.Python, Platform: p, Index: "https://pypi.org/simple",
				Distributions: []imagespec.PythonDist{
					catDist("ray", s.Ray, "ray-"+s.Ray+"-cp312-cp312-manylinux2014_x86_64.whl", 'r'),
					catDist("Frozen_List", "1.4.1", "frozen_list-1.4.1-py3-none-any.whl", 'f'),
					catDist("debugpy", s.Debugpy, "debugpy-"+s.Debugpy+"-py2.py3-none-any.whl", 'd'),
					catDist("aiosignal", "1.3.1", "aiosignal-1.3.1-py3-none-any.whl", 'a'),
				},
			})
		}
	}
	type result struct {
		Sets        []imagespec.Set
		Explanation []string
		All         []imagespec.Set
		Skipped     []Skipped
	}
	run := func(c *catalog.Catalog) result {
		var r result
		for _, p := range cat.Ray {
			set, ex, err := Resolve(cfg, c, Request{Ray: p.Version})
			if err != nil {
				r.Explanation = append(r.Explanation, "error: "+err.Error())
				continue
			}
			r.Sets = append(r.Sets, set)
			r.Explanation = append(r.Explanation, ex.String())
		}
		var err error
		if r.All, r.Skipped, err = All(cfg, c, nil); err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := run(cat)
	if len(want.Sets) == 0 {
		t.Fatal("the committed catalog resolves no set")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	shuffle := func(n int, swap func(i, j int)) { rng.Shuffle(n, swap) }
	for i := 0; i < 5; i++ {
		c := copyCatalog(t, cat)
		shuffle(len(c.CodeServer), func(a, b int) { c.CodeServer[a], c.CodeServer[b] = c.CodeServer[b], c.CodeServer[a] })
		for _, ps := range [][]catalog.PythonPackage{c.Ray, c.Debugpy} {
			shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
			for _, p := range ps {
				for _, vs := range p.Pythons {
					shuffle(len(vs), func(a, b int) { vs[a], vs[b] = vs[b], vs[a] })
				}
			}
		}
		shuffle(len(c.Extensions), func(a, b int) { c.Extensions[a], c.Extensions[b] = c.Extensions[b], c.Extensions[a] })
		for _, e := range c.Extensions {
			shuffle(len(e.Versions), func(a, b int) { e.Versions[a], e.Versions[b] = e.Versions[b], e.Versions[a] })
			for _, v := range e.Versions {
				shuffle(len(v.Dependencies), func(a, b int) { v.Dependencies[a], v.Dependencies[b] = v.Dependencies[b], v.Dependencies[a] })
				shuffle(len(v.ExtensionPack), func(a, b int) { v.ExtensionPack[a], v.ExtensionPack[b] = v.ExtensionPack[b], v.ExtensionPack[a] })
			}
		}
		shuffle(len(c.PythonLocks), func(a, b int) { c.PythonLocks[a], c.PythonLocks[b] = c.PythonLocks[b], c.PythonLocks[a] })
		for _, l := range c.PythonLocks {
			shuffle(len(l.Distributions), func(a, b int) { l.Distributions[a], l.Distributions[b] = l.Distributions[b], l.Distributions[a] })
		}
		shuffle(len(c.PythonRuntimes), func(a, b int) { c.PythonRuntimes[a], c.PythonRuntimes[b] = c.PythonRuntimes[b], c.PythonRuntimes[a] })
		before, _ := json.Marshal(c)
		if d := cmp.Diff(want, run(c)); d != "" {
			t.Fatalf("shuffle %d: results differ (-sorted +shuffled):\n%s", i, d)
		}
		if after, _ := json.Marshal(c); string(after) != string(before) {
			t.Fatalf("shuffle %d: resolution modified its catalog argument", i)
		}
	}
}

func copyCatalog(t *testing.T, c *catalog.Catalog) *catalog.Catalog {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out catalog.Catalog
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
