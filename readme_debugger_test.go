package imagectl_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/contract"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// readmeSection returns the text of README.md's "## title" section, up to
// the next "## ".
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("README.md has no section %q", "## "+title)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

// TestReadmeDebuggerDisclosure: the README tells people who pull which
// version of the debugger extension a build from the committed catalog
// ships (what resolve picks from catalog.json, not what the docs describe),
// which version the docs' account of its behaviour was read from, and that
// it sends usage analytics whatever code-server's telemetry setting says.
func TestReadmeDebuggerDisclosure(t *testing.T) {
	sec := readmeSection(t, "For people who pull")
	flat := strings.Join(strings.Fields(sec), " ")

	cfg, err := matrix.Load("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load("catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	sets, _, err := resolve.All(cfg, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, s := range sets {
		for _, e := range s.Extensions {
			if e.ID == contract.ExtensionID && !slices.Contains(versions, e.Version) {
				versions = append(versions, e.Version)
			}
		}
	}
	if len(versions) != 1 {
		t.Fatalf("the committed catalog builds %s at %v; the README states one version", contract.ExtensionID, versions)
	}
	if want := "A build from the committed `catalog.json` ships `" + contract.ExtensionID + "` **" + versions[0] + "**"; !strings.Contains(flat, want) {
		t.Errorf("README.md (For people who pull) does not say %q: the version resolve picks from catalog.json", want)
	}
	if want := "was read from " + contract.ReadFrom + "'s `dist/extension.js`"; !strings.Contains(flat, want) {
		t.Errorf("README.md (For people who pull) does not say the behaviour it describes %q (extensions/contract.ReadFrom)", want)
	}
	for _, re := range []string{
		`Google Analytics`,
		`machine ID`,
		`on activation, when a cluster dashboard becomes reachable \(connect\),? and on every attach`,
		`whatever code-server's telemetry setting \(` + "`telemetry.telemetryLevel`" + `\) says`,
		`without egress to the internet they fail quietly`,
	} {
		if !regexp.MustCompile(re).MatchString(flat) {
			t.Errorf("README.md (For people who pull) does not say /%s/", re)
		}
	}
}
