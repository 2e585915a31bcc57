package verify

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Check names one kind of check, for filtering and JSON output.
type Check string

// The checks Image runs.
const (
	CheckSignature  Check = "signature"
	CheckSBOM       Check = "sbom"
	CheckProvenance Check = "provenance"
	CheckLabels     Check = "labels"
	CheckPlatforms  Check = "platforms"
	CheckExtensions Check = "extensions"
	CheckPython     Check = "python"
	CheckContents   Check = "contents"
)

// Failure is one reason the image does not verify.
type Failure struct {
	Check Check `json:"check"`
	// Platform is os/arch of the manifest, empty for the index.
	Platform string `json:"platform,omitempty"`
	// Digest is the manifest the failure is about.
	Digest string `json:"digest,omitempty"`
	// Where is a path in the image, a label name or a tag.
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
}

func (f Failure) String() string {
	var b strings.Builder
	switch {
	case f.Platform != "":
		b.WriteString(f.Platform + " " + short(f.Digest) + ": ")
	case f.Digest != "":
		b.WriteString("index " + short(f.Digest) + ": ")
	}
	if f.Where != "" {
		b.WriteString(f.Where + ": ")
	}
	b.WriteString(f.Message)
	return b.String()
}

func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	return d
}

// Manifest is what was found for one manifest.
type Manifest struct {
	Digest    string `json:"digest"`
	Platform  string `json:"platform,omitempty"`
	MediaType string `json:"mediaType"`
	// Signatures is the number of signatures that verified.
	Signatures int `json:"signatures"`
	// SBOM and Provenance name where they were found ("cosign attestation
	// <predicateType>", "buildkit attestation manifest sha256:...").
	SBOM string `json:"sbom,omitempty"`
	// SBOMLocked counts the locked Python distributions and extensions
	// found in the SBOM with the locked version.
	SBOMLocked int `json:"sbomLocked,omitempty"`
	// ExtensionLicenses are the licences the SBOM records for the
	// extensions it lists.
	ExtensionLicenses []ExtensionLicense `json:"extensionLicenses,omitempty"`
	Provenance        string             `json:"provenance,omitempty"`
	Contents          *Contents          `json:"contents,omitempty"`
}

// Contents is what the platform's layers hold.
type Contents struct {
	Extensions []InstalledExtension `json:"extensions"`
	Python     string               `json:"python,omitempty"`
	Ray        string               `json:"ray,omitempty"`
	Debugpy    string               `json:"debugpy,omitempty"`
	// InterpreterSetting is python.defaultInterpreterPath in code-server's
	// user settings; VirtualEnv the image's VIRTUAL_ENV.
	InterpreterSetting string `json:"interpreterSetting,omitempty"`
	VirtualEnv         string `json:"virtualEnv,omitempty"`
}

// InstalledExtension is one extension directory.
type InstalledExtension struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	TargetPlatform string `json:"targetPlatform"`
	Dir            string `json:"dir"`
}

// ExtensionLicense is the licence an SBOM records for one extension.
type ExtensionLicense struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// License is the declared licence (document.Package.License), "" when the
	// SBOM asserts none.
	License string `json:"license"`
	// Source says where the licence was read (the SBOM's licence comment).
	Source string `json:"source,omitempty"`
}

// Report is the outcome of Image.
type Report struct {
	Ref       string     `json:"ref"`
	Digest    string     `json:"digest"`
	OK        bool       `json:"ok"`
	Manifests []Manifest `json:"manifests"`
	Failures  []Failure  `json:"failures"`
	// Skipped lists checks that were not run on request.
	Skipped []Check `json:"skipped,omitempty"`
}

// Err returns nil if the image verified, else an error listing every failure.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	if len(r.Failures) == 0 {
		return errors.New("verification failed")
	}
	msgs := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		msgs[i] = f.String()
	}
	return fmt.Errorf("%s does not verify (%d failures):\n  %s", r.Ref, len(r.Failures), strings.Join(msgs, "\n  "))
}

// HasFailure reports whether some failure of check c mentions all of subs.
func (r *Report) HasFailure(c Check, subs ...string) bool {
	for _, f := range r.Failures {
		if c != "" && f.Check != c {
			continue
		}
		s := f.String()
		all := true
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes a human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Ref)
	for _, m := range r.Manifests {
		what := "index"
		if m.Platform != "" {
			what = m.Platform
		}
		fmt.Fprintf(&b, "  %-12s %s  signatures: %d", what, m.Digest, m.Signatures)
		if m.SBOM != "" {
			fmt.Fprintf(&b, "  sbom: %s", m.SBOM)
			if m.SBOMLocked > 0 {
				fmt.Fprintf(&b, " (%d locked packages listed)", m.SBOMLocked)
			}
		}
		if m.Provenance != "" {
			fmt.Fprintf(&b, "  provenance: %s", m.Provenance)
		}
		b.WriteString("\n")
		for _, l := range m.ExtensionLicenses {
			lic := l.License
			if lic == "" {
				lic = "not stated in the SBOM"
			}
			fmt.Fprintf(&b, "               licence of %s@%s: %s", l.ID, l.Version, lic)
			if l.Source != "" {
				fmt.Fprintf(&b, " (%s)", l.Source)
			}
			b.WriteString("\n")
		}
		if c := m.Contents; c != nil {
			found := func(v string) string { return cmp.Or(v, "not found") }
			fmt.Fprintf(&b, "               python %s, ray %s, debugpy %s\n", found(c.Python), found(c.Ray), found(c.Debugpy))
			for _, e := range c.Extensions {
				fmt.Fprintf(&b, "               %s@%s (%s)\n", e.ID, e.Version, e.TargetPlatform)
			}
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "  skipped: %s\n", s)
	}
	if r.OK {
		b.WriteString("OK: verified\n")
	} else {
		fmt.Fprintf(&b, "FAILED: %d problem(s)\n", len(r.Failures))
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
