package gallerytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

const (
	assetVSIX     = "Microsoft.VisualStudio.Services.VSIXPackage"
	assetManifest = "Microsoft.VisualStudio.Code.Manifest"
)

// marketplace serves extensionquery, vspackage and assetbyname downloads.
func (f *Fake) marketplace(w http.ResponseWriter, r *http.Request) {
	p := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	switch {
	case r.Method == http.MethodPost && p == "_apis/public/gallery/extensionquery":
		f.extensionQuery(w, r)
	// _apis/public/gallery/publishers/{pub}/vsextensions/{name}/{ver}/vspackage
	case r.Method == http.MethodGet && len(parts) == 9 && parts[0] == "_apis" && parts[3] == "publishers" && parts[5] == "vsextensions" && parts[8] == "vspackage":
		f.mktDownload(w, r, parts[4]+"."+parts[6], parts[7], r.URL.Query().Get("targetPlatform"))
	// _apis/public/gallery/publisher/{pub}/extension/{name}/{ver}/assetbyname/{asset}
	case r.Method == http.MethodGet && len(parts) == 10 && parts[3] == "publisher" && parts[5] == "extension" && parts[8] == "assetbyname":
		id, ver, tp := parts[4]+"."+parts[6], parts[7], r.URL.Query().Get("targetPlatform")
		switch parts[9] {
		case assetVSIX:
			f.mktDownload(w, r, id, ver, tp)
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *Fake) mktDownload(w http.ResponseWriter, r *http.Request, id, ver, tp string) {
	b, ok := f.pick(id, ver, tp)
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"$id":"1","innerException":null,"message":"Version %s of extension %s was not found.","typeName":"Microsoft.VisualStudio.Services.Gallery.WebApi.ExtensionVersionNotFoundException","typeKey":"ExtensionVersionNotFoundException","errorCode":0,"eventId":3000}`, ver, id)
		return
	}
	f.serveFile(w, r, b)
}

type mktQuery struct {
	Filters []struct {
		Criteria []struct {
			FilterType int    `json:"filterType"`
			Value      string `json:"value"`
		} `json:"criteria"`
		PageNumber int `json:"pageNumber"`
		PageSize   int `json:"pageSize"`
	} `json:"filters"`
	Flags int `json:"flags"`
}

type mktProperty struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type mktFile struct {
	AssetType string `json:"assetType"`
	Source    string `json:"source"`
}

type mktVersion struct {
	Version          string        `json:"version"`
	TargetPlatform   string        `json:"targetPlatform,omitempty"`
	Flags            string        `json:"flags"`
	LastUpdated      string        `json:"lastUpdated"`
	Files            []mktFile     `json:"files"`
	Properties       []mktProperty `json:"properties"`
	AssetURI         string        `json:"assetUri"`
	FallbackAssetURI string        `json:"fallbackAssetUri"`
}

// mktVersionOf is build b of pub.name as the query answers it: with its
// files (flags 0x2) and properties (flags 0x10).
func mktVersionOf(base, pub, name string, b Build, flags int) mktVersion {
	asset := fmt.Sprintf("%s/_apis/public/gallery/publisher/%s/extension/%s/%s/assetbyname", base, pub, name, b.Version)
	v := mktVersion{
		Version: b.Version, Flags: "validated", LastUpdated: "2025-06-01T00:00:00.000Z",
		AssetURI: asset, FallbackAssetURI: asset,
	}
	tpq := ""
	if b.TargetPlatform != "universal" {
		v.TargetPlatform = b.TargetPlatform
		tpq = "?targetPlatform=" + b.TargetPlatform
	}
	if flags&0x2 != 0 {
		v.Files = []mktFile{
			{assetManifest, asset + "/" + assetManifest + tpq},
			{assetVSIX, asset + "/" + assetVSIX + tpq},
		}
	}
	if flags&0x10 != 0 {
		v.Properties = []mktProperty{
			{"Microsoft.VisualStudio.Code.ExtensionDependencies", strings.Join(b.Dependencies, ",")},
			{"Microsoft.VisualStudio.Code.ExtensionPack", strings.Join(b.ExtensionPack, ",")},
			{"Microsoft.VisualStudio.Code.Engine", b.Engine},
		}
		if b.PreRelease {
			v.Properties = append(v.Properties, mktProperty{"Microsoft.VisualStudio.Code.PreRelease", "true"})
		}
	}
	return v
}

func (f *Fake) extensionQuery(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "api-version=") {
		// The real service answers an HTML/other shape without api-version;
		// the fake insists so that clients send what VS Code sends.
		http.Error(w, "missing api-version in Accept", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var q mktQuery
	if err := json.Unmarshal(body, &q); err != nil || len(q.Filters) == 0 {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	base := "http://" + r.Host
	var exts []any
	for _, c := range q.Filters[0].Criteria {
		if c.FilterType != 7 {
			continue
		}
		builds := f.versionsOf(c.Value)
		if len(builds) == 0 {
			continue
		}
		pub, name := builds[0].split()
		var versions []mktVersion
		for _, b := range builds {
			v := mktVersionOf(base, pub, name, b, q.Flags)
			versions = append(versions, v)
			if q.Flags&0x200 != 0 { // IncludeLatestVersionOnly
				break
			}
		}
		exts = append(exts, map[string]any{
			"publisher":     map[string]any{"publisherId": "00000000-0000-0000-0000-000000000000", "publisherName": pub, "displayName": pub, "flags": "verified"},
			"extensionId":   "00000000-0000-0000-0000-000000000001",
			"extensionName": name,
			"displayName":   name,
			"flags":         "validated, public",
			"versions":      versions,
		})
	}
	if exts == nil {
		exts = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"results": []any{map[string]any{
			"extensions":     exts,
			"pagingToken":    nil,
			"resultMetadata": []any{map[string]any{"metadataType": "ResultCount", "metadataItems": []any{map[string]any{"name": "TotalCount", "count": len(exts)}}}},
		}},
	})
}
