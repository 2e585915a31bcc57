package smoke

import (
	"os"
	"path/filepath"
	"testing"
)

// Without --probe-binary smoke kind copies imagectl-probe from beside
// imagectl when it is there (an executable file), else imagectl itself.
func TestDefaultProbe(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "imagectl")
	probe := filepath.Join(dir, "imagectl-probe")
	if got := defaultProbe(exe); got != exe {
		t.Errorf("no imagectl-probe beside %s: %s, want imagectl itself", exe, got)
	}
	if err := os.WriteFile(probe, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := defaultProbe(exe); got != exe {
		t.Errorf("an imagectl-probe that is not executable: %s, want imagectl itself", got)
	}
	if err := os.Chmod(probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := defaultProbe(exe); got != probe {
		t.Errorf("an executable imagectl-probe beside imagectl: %s, want %s", got, probe)
	}
}
