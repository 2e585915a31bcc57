package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
)

func TestLock(t *testing.T) {
	set := imagespec.Set{CodeServer: imagespec.CodeServer{Version: "4.101.2", VSCode: "1.101.2", Platforms: map[string]string{}},
		Ray: "2.46.0", Python: "3.12", Debugpy: "1.8.14", Platforms: []string{"linux/amd64"},
		Extensions: []imagespec.Extension{{ID: "ms-python.python", Version: "2025.10.0"}}}
	labels := build.Labels(set, "linux/amd64", "sha256:"+strings.Repeat("1", 64), time.Unix(0, 0), build.LabelSource{})
	got, problems := Lock(labels)
	if got == nil || got.Ray != "2.46.0" || got.Debugpy != "1.8.14" || len(problems) != 0 {
		t.Fatalf("Lock = %+v, %v; want the set and no problem", got, problems)
	}
	labels[imagespec.LabelDebugpy] = "1.8.0"
	if got, problems = Lock(labels); got == nil || len(problems) != 1 ||
		problems[0] != `label dev.imagectl.debugpy.version: "1.8.0", but the lock (dev.imagectl.lock) says "1.8.14"` {
		t.Errorf("disagreeing label: %+v, %q", got, problems)
	}
	delete(labels, imagespec.LabelLock)
	if got, problems = Lock(labels); got != nil || len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), "label dev.imagectl.lock: missing") {
		t.Errorf("no lock: %+v, %q", got, problems)
	}
}
