package kube

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/imagectl/imagectl/smoke/kind"
)

// TestSmokeHarness runs the smoke harness's own steps against this control
// plane (kind.RunUntilPods: inject, the password Secret, the pre-pull
// DaemonSet, the RayJob created as the plugin's -f does, the RayCluster
// and head-pod lookups) in a namespace of its own, and checks the head Pod
// the operator made of the harness's RayJob: the one the harness found,
// with the sidecar as the harness injected it.
func TestSmokeHarness(t *testing.T) {
	c := needCluster(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)
	guide := filepath.Join(dir, "guide")
	if err := os.Mkdir(guide, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := imagectlBin(t) // before the timeout starts: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	got, err := kind.RunUntilPods(ctx, kind.Config{Image: testImage, RayVersion: "2.46.0", Python: "3.12",
		KubeRayVersion: c.kuberay, Imagectl: bin, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}, kc, guide)
	if err != nil {
		t.Fatal(err)
	}
	o := rayObjects(t, readFile(t, filepath.Join(guide, kind.InjectedFile)))[0]
	if o.Kind != "RayJob" {
		t.Fatalf("%s holds a %s first, want the RayJob", kind.InjectedFile, o.Kind)
	}
	if cl := c.rayCluster(t, ns, o); cl != got.RayCluster {
		t.Errorf("the harness found RayCluster %q, the operator made %q", got.RayCluster, cl)
	}
	pod := c.headPod(t, ns, o)
	if pod.Name != got.HeadPod {
		t.Errorf("the harness found head Pod %q, the operator made %q", got.HeadPod, pod.Name)
	}
	c.checkHeadPod(t, ns, o, pod, testImage)
	c.checkHeadService(t, ns, o, pod)
}

// testWriter sends the harness's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
