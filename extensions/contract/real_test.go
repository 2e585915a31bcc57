package contract_test

import (
	"context"
	"os"
	"testing"

	"github.com/imagectl/imagectl/extensions/contract"
	"github.com/imagectl/imagectl/extensions/vsix"
)

// TestRealVSIX checks a real VSIX of the debugger extension named by
// IMAGECTL_DEBUGGER_VSIX (the project commits none: it is Anyscale's, under
// its own licence). It must be a version whose contract holds, e.g. 0.1.6.
func TestRealVSIX(t *testing.T) {
	p := os.Getenv("IMAGECTL_DEBUGGER_VSIX")
	if p == "" {
		t.Skip("IMAGECTL_DEBUGGER_VSIX is not set: no real VSIX of " + contract.ExtensionID + " to check")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.CheckVSIX(context.Background(), f, fi.Size(), vsix.Limits{}); err != nil {
		t.Errorf("%s: %v", p, err)
	}
}
