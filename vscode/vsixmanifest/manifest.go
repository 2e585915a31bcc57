package vsixmanifest

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
)

// The property ids of extension.vsixmanifest (and of the Marketplace's
// version properties, which carry the same keys).
const (
	PropertyEngine        = "Microsoft.VisualStudio.Code.Engine"
	PropertyPreRelease    = "Microsoft.VisualStudio.Code.PreRelease"
	PropertyDependencies  = "Microsoft.VisualStudio.Code.ExtensionDependencies"
	PropertyExtensionPack = "Microsoft.VisualStudio.Code.ExtensionPack"
)

// manifestXML is the part of extension.vsixmanifest imagectl reads.
type manifestXML struct {
	Metadata struct {
		Identity struct {
			ID             string `xml:"Id,attr"`
			Version        string `xml:"Version,attr"`
			Publisher      string `xml:"Publisher,attr"`
			TargetPlatform string `xml:"TargetPlatform,attr"`
		} `xml:"Identity"`
		Properties struct {
			Property []struct {
				ID    string `xml:"Id,attr"`
				Value string `xml:"Value,attr"`
			} `xml:"Property"`
		} `xml:"Properties"`
	} `xml:"Metadata"`
}

// Info is what a VS Code extension says about itself in its manifest (and,
// in a valid VSIX, in extension/package.json, which must agree).
type Info struct {
	Publisher      string
	Name           string
	Version        string
	TargetPlatform string
	Engine         string
	PreRelease     bool
	Dependencies   []string
	ExtensionPack  []string
}

// ID returns publisher.name.
func (i Info) ID() string { return i.Publisher + "." + i.Name }

// Parse decodes an extension.vsixmanifest (in a VSIX) or a .vsixmanifest
// (in an installed extension's folder). A manifest without TargetPlatform
// describes a universal build (imagespec.VSCodeUniversal).
func Parse(data []byte) (Info, error) {
	var m manifestXML
	if err := xml.Unmarshal(data, &m); err != nil {
		return Info{}, fmt.Errorf("not a VSIX manifest: %w", err)
	}
	id := m.Metadata.Identity
	if id.Publisher == "" || id.ID == "" || id.Version == "" {
		return Info{}, fmt.Errorf("VSIX manifest Identity needs Publisher, Id and Version (got %q, %q, %q)", id.Publisher, id.ID, id.Version)
	}
	info := Info{Publisher: id.Publisher, Name: id.ID, Version: id.Version, TargetPlatform: id.TargetPlatform}
	if info.TargetPlatform == "" {
		info.TargetPlatform = imagespec.VSCodeUniversal
	}
	for _, p := range m.Metadata.Properties.Property {
		switch p.ID {
		case PropertyEngine:
			info.Engine = p.Value
		case PropertyDependencies:
			info.Dependencies = SplitIDs(p.Value)
		case PropertyExtensionPack:
			info.ExtensionPack = SplitIDs(p.Value)
		case PropertyPreRelease:
			info.PreRelease = p.Value == "true"
		}
	}
	return info, nil
}

// SplitIDs splits a comma-separated list of extension ids, dropping blanks.
func SplitIDs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
