package smoketest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docFiles are the texts users run commands from: README.md, docs/*.md and
// the CLI's help texts (the non-test Go sources of cmd/imagectl/app).
func docFiles(t *testing.T) []string {
	t.Helper()
	files := append([]string{"../../README.md"}, mustGlob(t, "../../docs/*.md")...)
	for _, f := range mustGlob(t, "../../cmd/imagectl/app/*.go") {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	return files
}

// commandLines joins shell continuation lines (a trailing backslash), so a
// flag on the next line counts as part of its command.
func commandLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimRight(l, " \t"); strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// docProblems are the commands and claims of text that fail as written:
// cosign's verify (and verify-attestation) have no --platform flag (only
// copy and download have it), and code-server's listen address depends on
// the base (0.0.0.0:8443 in linuxserver 4.101.2-ls285, [::]:8443 from
// 4.127.0-ls350), so the docs do not state one.
func docProblems(text string) []string {
	var probs []string
	verify := regexp.MustCompile(`cosign\s+verify(-attestation)?\s.*\s--platform\b`)
	comment := regexp.MustCompile(`(^|\s)#.*$`)
	for _, l := range commandLines(text) {
		if verify.MatchString(comment.ReplaceAllString(l, "")) {
			probs = append(probs, "cosign verify has no --platform flag: "+strings.TrimSpace(l))
		}
	}
	for _, addr := range []string{"[::]:8443", "0.0.0.0:8443"} {
		if strings.Contains(text, addr) {
			probs = append(probs, "states the listen address "+addr+", which depends on the base version")
		}
	}
	return probs
}

// TestDocsRunAsWritten: no documented command uses a flag its tool lacks,
// and no doc states a listen address that holds for one base only.
func TestDocsRunAsWritten(t *testing.T) {
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range docProblems(string(b)) {
			t.Errorf("%s: %s", filepath.Base(f), p)
		}
	}
}

// TestDocProblemsCatchesMistakes proves the check above can fail.
func TestDocProblemsCatchesMistakes(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
	}{
		{"platform on the line", `cosign verify "$IMG" --platform linux/arm64`, 1},
		{"platform continued", "cosign verify \\\n  --key cosign.pub \\\n  --platform linux/arm64 IMG", 1},
		{"verify-attestation", "cosign verify-attestation --type spdxjson --platform linux/amd64 IMG", 1},
		{"in a comment only", "cosign verify IMG # cosign verify has no --platform flag", 0},
		{"a comment line", "# one platform manifest: cosign verify has no --platform flag", 0},
		{"platform digest", "DIGEST=$(crane digest --platform linux/arm64 \"$IMG\")\ncosign verify \"${IMG%:*}@$DIGEST\"", 0},
		{"copy has it", "cosign copy --platform linux/arm64 A B", 0},
		{"ipv6 address", "code-server listens on `[::]:8443`", 1},
		{"ipv4 address", "bound to 0.0.0.0:8443 here", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, len(docProblems(tt.text))); diff != "" {
				t.Errorf("problems %q (-want +got count):\n%s", docProblems(tt.text), diff)
			}
		})
	}
}
