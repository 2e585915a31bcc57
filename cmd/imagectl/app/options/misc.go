package options

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/imagectl/imagectl/internal/sourcedate"
)

// WriteJSON writes v as indented JSON, HTML characters unescaped.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// FirstNonEmpty is the first of v that is not "".
func FirstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// SourceDateEpoch picks the time every timestamp in the image is set to
// (build and release): --source-date-epoch, else SOURCE_DATE_EPOCH, else
// the time of the git commit, else the Unix epoch.
func SourceDateEpoch(flag string) (time.Time, error) {
	return sourcedate.Resolve("--source-date-epoch", flag, gitCommitTime)
}

// gitCommitTime is the commit time of HEAD, or "" outside a git checkout.
func gitCommitTime() (source, value string) {
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		return "", ""
	}
	return "the git commit time", strings.TrimSpace(string(out))
}

// GitRevision is the commit of HEAD, or "" outside a git checkout.
func GitRevision() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
