package extensions

import (
	"fmt"
	"strings"

	"github.com/imagectl/imagectl/catalog"
)

// catalogFile returns the catalog's file of id@version for targetPlatform.
func catalogFile(cat *catalog.Catalog, id, version, targetPlatform string) (*catalog.ExtensionVersion, bool) {
	for i := range cat.Extensions {
		r := &cat.Extensions[i]
		if !strings.EqualFold(r.ID, id) {
			continue
		}
		for j := range r.Versions {
			v := &r.Versions[j]
			if v.Version != version {
				continue
			}
			if _, ok := v.Files[targetPlatform]; ok {
				return v, true
			}
		}
	}
	return nil, false
}

// RecordPins writes the sha256 and size of every fetched file into the
// catalog's record of that file where it has none, and returns the files it
// pinned. A file the catalog already pins with another digest is an error
// (Fetch refuses such a file, so this means the catalog changed meanwhile);
// a file the catalog does not list is an error too.
func RecordPins(cat *catalog.Catalog, fetched []Fetched) ([]Fetched, error) {
	var pinned []Fetched
	for _, f := range fetched {
		v, ok := catalogFile(cat, f.ID, f.Version, f.TargetPlatform)
		if !ok {
			return pinned, fmt.Errorf("extension %s@%s (%s): not in the catalog", f.ID, f.Version, f.TargetPlatform)
		}
		file := v.Files[f.TargetPlatform]
		switch {
		case file.SHA256 == "":
			file.SHA256, file.Size = f.SHA256, f.Size
			v.Files[f.TargetPlatform] = file
			pinned = append(pinned, f)
		case !strings.EqualFold(file.SHA256, f.SHA256):
			return pinned, fmt.Errorf("extension %s@%s (%s): the catalog pins sha256 %s, the file fetched is %s", f.ID, f.Version, f.TargetPlatform, file.SHA256, f.SHA256)
		}
	}
	return pinned, nil
}

// CarryPins copies into fresh (a refreshed catalog, whose upstreams publish
// no digest for most files) the sha256 and size old pinned for the same
// extension, version and target platform, so that a refresh never drops a
// pin: a file that changed upstream since it was pinned then fails the next
// fetch instead of being trusted anew. It returns how many pins it carried.
func CarryPins(old, fresh *catalog.Catalog) int {
	if old == nil || fresh == nil {
		return 0
	}
	n := 0
	for i := range fresh.Extensions {
		r := &fresh.Extensions[i]
		for j := range r.Versions {
			v := &r.Versions[j]
			for tp, file := range v.Files {
				if file.SHA256 != "" {
					continue
				}
				ov, ok := catalogFile(old, r.ID, v.Version, tp)
				if !ok {
					continue
				}
				if of := ov.Files[tp]; of.SHA256 != "" {
					file.SHA256, file.Size = of.SHA256, of.Size
					v.Files[tp] = file
					n++
				}
			}
		}
	}
	return n
}
