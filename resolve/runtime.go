package resolve

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec"
)

// toolsImage pins matrix.yaml's build.toolsImage with the digest the catalog
// records for exactly that reference. A reference that already carries a
// digest is used as is.
func (r *resolver) toolsImage(ex *Explanation) string {
	ref := r.cfg.Build.ToolsImage
	if ref == "" {
		return ref
	}
	if _, err := name.NewDigest(ref); err == nil {
		return ref
	}
	t := r.cat.ToolsImage
	switch {
	case t == nil:
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown, the catalog records none; run imagectl matrix refresh to pin it (until then builds use whatever the tag names)", ref))
	case t.Ref != ref:
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown, the catalog records %s (matrix.yaml build.toolsImage changed since); run imagectl matrix refresh to pin it", ref, t.Ref))
	case t.Digest == "":
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown in the catalog; run imagectl matrix refresh to pin it (until then builds use whatever the tag names)", ref))
	default:
		return ref + "@" + t.Digest
	}
	return ref
}

// pythonRuntime returns the catalog's python-build-standalone runtime of
// python for matrix.yaml's build.standalone (its repository and flavor, a
// release not older than build.standalone.release: refresh locks the newest
// complete one), when build.pythonRuntime is standalone; otherwise, or when
// the catalog has none, nil (with a note).
func (r *resolver) pythonRuntime(python string, ex *Explanation) *imagespec.PythonRuntime {
	if r.cfg.Build.PythonRuntime != imagespec.PythonRuntimeStandalone {
		return nil
	}
	st := r.cfg.Build.Standalone
	var other []string
	for _, rt := range r.cat.PythonRuntimes {
		if rt.Python != python {
			continue
		}
		// Release tags are dates of 8 digits: they order as strings.
		if rt.Repository != st.Repository || rt.Release < st.Release || rt.Flavor != st.Flavor {
			other = append(other, fmt.Sprintf("%s release %s (%s)", rt.Repository, rt.Release, rt.Flavor))
			continue
		}
		out := &imagespec.PythonRuntime{Version: rt.Version, Release: rt.Release, Files: map[string]imagespec.RuntimeFile{}}
		for p, f := range rt.Files {
			out.Files[p] = imagespec.RuntimeFile{URL: f.URL, SHA256: f.SHA256}
		}
		ex.add(Decision{Component: "python runtime", Chosen: rt.Version,
			Reason: fmt.Sprintf("python-build-standalone %s of %s release %s, as catalog.json locks it (sha256 linux/amd64 %s, linux/arm64 %s)",
				rt.Flavor, rt.Repository, rt.Release, short(rt.Files["linux/amd64"].SHA256), short(rt.Files["linux/arm64"].SHA256))})
		return out
	}
	note := fmt.Sprintf("python runtime: the catalog records no python-build-standalone runtime of Python %s for %s release %s or later (%s)", python, st.Repository, st.Release, st.Flavor)
	if len(other) > 0 {
		note += "; it records " + strings.Join(other, ", ") + " (matrix.yaml build.standalone changed since)"
	}
	ex.Notes = append(ex.Notes, note+"; run imagectl matrix refresh to lock it (a build fails until then)")
	return nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
