package gallerytest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// openvsx serves the Open VSX REST API (RegistryAPI.java) for the builds.
func (f *Fake) openvsx(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[0] != "api" {
		f.ovsxNotFound(w, "")
		return
	}
	id := parts[1] + "." + parts[2]
	builds := f.versionsOf(id)
	if len(builds) == 0 {
		f.ovsxNotFound(w, id)
		return
	}
	base := "http://" + r.Host
	rest := parts[3:]
	switch {
	case len(rest) == 0: // latest
		f.ovsxMeta(w, base, builds, builds[0].Version, "")
	case len(rest) == 1 && rest[0] == "versions":
		f.ovsxVersions(w, r, base, builds)
	case len(rest) == 1:
		f.ovsxMeta(w, base, builds, rest[0], "")
	case len(rest) == 2:
		f.ovsxMeta(w, base, builds, rest[1], rest[0])
	case len(rest) == 4 && rest[2] == "file":
		tp, ver, file := rest[0], rest[1], rest[3]
		b, ok := f.exact(builds, ver, tp)
		if !ok {
			f.ovsxNotFound(w, id)
			return
		}
		switch {
		case file == vsixName(b):
			f.serveFile(w, r, b)
		case file == vsixName(b)+".sha256":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintln(w, b.SHA256())
		default:
			f.ovsxNotFound(w, id)
		}
	default:
		f.ovsxNotFound(w, id)
	}
}

func (f *Fake) ovsxNotFound(w http.ResponseWriter, id string) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "Extension not found: " + id})
}

func (f *Fake) exact(builds []Build, ver, tp string) (Build, bool) {
	for _, b := range builds {
		if b.Version == ver && b.TargetPlatform == tp {
			return b, true
		}
	}
	return Build{}, false
}

func vsixName(b Build) string {
	n := b.ID + "-" + b.Version
	if b.TargetPlatform != "universal" {
		n += "@" + b.TargetPlatform
	}
	return n + ".vsix"
}

func fileURL(base string, b Build) string {
	pub, name := b.split()
	return fmt.Sprintf("%s/api/%s/%s/%s/%s/file/%s", base, pub, name, b.TargetPlatform, b.Version, vsixName(b))
}

func (f *Fake) ovsxVersions(w http.ResponseWriter, r *http.Request, base string, builds []Build) {
	pub, name := builds[0].split()
	var vs []string
	seen := map[string]bool{}
	for _, b := range builds {
		if !seen[b.Version] {
			seen[b.Version] = true
			vs = append(vs, b.Version)
		}
	}
	size, offset := 18, 0 // Open VSX's default page size is 18
	if s, err := strconv.Atoi(r.URL.Query().Get("size")); err == nil && s > 0 {
		size = s
	}
	if o, err := strconv.Atoi(r.URL.Query().Get("offset")); err == nil && o >= 0 {
		offset = o
	}
	page := map[string]string{}
	for i := offset; i < len(vs) && i < offset+size; i++ {
		page[vs[i]] = fmt.Sprintf("%s/api/%s/%s/%s", base, pub, name, vs[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"offset": offset, "totalSize": len(vs), "versions": page})
}

// ovsxMeta writes the ExtensionJson of ver built for tp ("" = the universal
// build, else the first build of that version).
func (f *Fake) ovsxMeta(w http.ResponseWriter, base string, builds []Build, ver, tp string) {
	var b *Build
	downloads := map[string]string{}
	for i := range builds {
		if builds[i].Version != ver {
			continue
		}
		downloads[builds[i].TargetPlatform] = fileURL(base, builds[i])
		if b == nil && (tp == "" || builds[i].TargetPlatform == tp) {
			b = &builds[i]
		}
	}
	if b == nil {
		f.ovsxNotFound(w, builds[0].ID)
		return
	}
	pub, name := b.split()
	refs := func(ids []string) []map[string]string {
		out := []map[string]string{}
		for _, id := range ids {
			ns, n, _ := strings.Cut(id, ".")
			out = append(out, map[string]string{"url": fmt.Sprintf("%s/api/%s/%s", base, ns, n), "namespace": ns, "extension": n})
		}
		return out
	}
	var all []map[string]any
	seen := map[string]bool{}
	for _, x := range builds {
		if !seen[x.Version] {
			seen[x.Version] = true
			var tps []string
			for _, y := range builds {
				if y.Version == x.Version {
					tps = append(tps, y.TargetPlatform)
				}
			}
			all = append(all, map[string]any{"version": x.Version, "targetPlatforms": tps})
		}
	}
	dl := fileURL(base, *b)
	writeJSON(w, http.StatusOK, map[string]any{
		"namespaceUrl":              fmt.Sprintf("%s/api/%s", base, pub),
		"namespace":                 pub,
		"name":                      name,
		"version":                   b.Version,
		"targetPlatform":            b.TargetPlatform,
		"preRelease":                b.PreRelease,
		"verified":                  true,
		"timestamp":                 "2025-06-01T00:00:00.000000Z",
		"engines":                   map[string]string{"vscode": b.Engine},
		"dependencies":              refs(b.Dependencies),
		"bundledExtensions":         refs(b.ExtensionPack),
		"downloads":                 downloads,
		"allTargetPlatformVersions": all,
		"files": map[string]string{
			"download": dl,
			"sha256":   dl + ".sha256",
			"manifest": fmt.Sprintf("%s/api/%s/%s/%s/%s/file/package.json", base, pub, name, b.TargetPlatform, b.Version),
		},
	})
}
