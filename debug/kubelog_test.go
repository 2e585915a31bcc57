package debug

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// TestLogKubeErrors: what client-go hands to runtime.HandleError reaches
// the function as one plain line, and klog writes nothing (by default it
// writes "Unhandled Error" lines to stderr).
func TestLogKubeErrors(t *testing.T) {
	saved := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	var klogged bytes.Buffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for _, f := range [][2]string{{"logtostderr", "false"}, {"stderrthreshold", "FATAL"}} {
		if err := fs.Set(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(&klogged)
	t.Cleanup(func() {
		fs.Set("logtostderr", "true")
		fs.Set("stderrthreshold", "ERROR")
		klog.SetOutput(nil)
	})

	// The default handlers write klog: the check below can fail.
	utilruntime.HandleError(errors.New("before"))
	klog.Flush()
	if !bytes.Contains(klogged.Bytes(), []byte("Unhandled Error")) {
		t.Fatalf("apimachinery's default handler wrote %q to klog, want its Unhandled Error line: this test no longer sees what it checks", klogged.String())
	}
	klogged.Reset()

	var got []string
	LogKubeErrors(func(line string) { got = append(got, line) })
	utilruntime.HandleError(errors.New("an error occurred forwarding 36001 -> 8443: connection refused"))
	utilruntime.HandleErrorWithContext(context.Background(), errors.New("broken pipe"), "copying", "port", 8443)
	utilruntime.HandleError(nil)
	klog.Flush()
	want := []string{
		"an error occurred forwarding 36001 -> 8443: connection refused",
		"copying: broken pipe port=8443",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if klogged.Len() > 0 {
		t.Errorf("klog still wrote %q", klogged.String())
	}

	LogKubeErrors(nil)
	utilruntime.HandleError(errors.New("dropped"))
	klog.Flush()
	if klogged.Len() > 0 || len(got) != 2 {
		t.Errorf("with nil: klog wrote %q, the old function got %q", klogged.String(), got[2:])
	}
}
