package kind

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeKind puts a kind on PATH that records its argv (one line of
// tab-separated arguments in dir/calls, as fakeKubectl does) and exits with
// FAKE_KIND_EXIT (0 unless set), printing FAKE_KIND_SAY first; it returns
// dir. It checks the argv the harness gives the kind CLI; the real CLI runs
// only in the smoke workflow (GitHub Actions), where a Docker engine can
// host the cluster.
func fakeKind(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/bash
(IFS=$'\t'; echo "$*") >> "` + dir + `/calls"
[ -n "$FAKE_KIND_SAY" ] && echo "$FAKE_KIND_SAY" >&2
exit "${FAKE_KIND_EXIT:-0}"
`
	if err := os.WriteFile(filepath.Join(dir, "kind"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// The cluster's lifecycle through the kind CLI: create writes the
// cluster's kubeconfig to the harness's file only and waits for the
// control plane, with the node image when one is given; export logs and
// delete name the cluster (and delete the kubeconfig's context).
func TestKindClusterRunsTheKindCLI(t *testing.T) {
	dir := fakeKind(t)
	ctx := context.Background()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	for _, c := range []kindCluster{
		{name: "imagectl-smoke", kubeconfig: kc},
		{name: "other", kubeconfig: kc, nodeImage: "kindest/node:v1.33.1"},
	} {
		if err := c.create(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.exportLogs(ctx, "/logs/kind"); err != nil {
			t.Fatal(err)
		}
		if err := c.delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := [][]string{
		{"create", "cluster", "--name", "imagectl-smoke", "--kubeconfig", kc, "--wait", "5m"},
		{"export", "logs", "/logs/kind", "--name", "imagectl-smoke"},
		{"delete", "cluster", "--name", "imagectl-smoke", "--kubeconfig", kc},
		{"create", "cluster", "--name", "other", "--kubeconfig", kc, "--wait", "5m", "--image", "kindest/node:v1.33.1"},
		{"export", "logs", "/logs/kind", "--name", "other"},
		{"delete", "cluster", "--name", "other", "--kubeconfig", kc},
	}
	if diff := cmp.Diff(want, calls(t, dir)); diff != "" {
		t.Errorf("kind argv (-want +got):\n%s", diff)
	}
}

// A failing kind names the command and carries what kind said.
func TestKindClusterCreateFailure(t *testing.T) {
	fakeKind(t)
	t.Setenv("FAKE_KIND_EXIT", "1")
	t.Setenv("FAKE_KIND_SAY", `ERROR: failed to create cluster: node(s) already exist for a cluster with the name "imagectl-smoke"`)
	err := kindCluster{name: "imagectl-smoke", kubeconfig: "/tmp/kc"}.create(context.Background())
	for _, want := range []string{"creating kind cluster imagectl-smoke: kind create cluster --name imagectl-smoke --kubeconfig /tmp/kc --wait 5m: exit status 1", "node(s) already exist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

// Without kind on PATH, the error says so.
func TestKindClusterWithoutKind(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := kindCluster{name: "x", kubeconfig: "/tmp/kc"}.delete(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"kind": executable file not found`) {
		t.Errorf("err = %v, want kind not found on PATH", err)
	}
}

func TestContextNamespace(t *testing.T) {
	write := func(t *testing.T, text string) string {
		p := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// What kind writes: the context names no namespace.
	kindKC := "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://127.0.0.1:41234\n  name: kind-imagectl-smoke\n" +
		"contexts:\n- context:\n    cluster: kind-imagectl-smoke\n    user: kind-imagectl-smoke\n  name: kind-imagectl-smoke\n" +
		"current-context: kind-imagectl-smoke\nusers:\n- name: kind-imagectl-smoke\n  user: {}\n"
	for _, tc := range []struct {
		name, text, want, wantErr string
	}{
		{name: "kind's", text: kindKC, want: "default"},
		{name: "a namespace", text: "contexts: [{name: a, context: {namespace: other}}, {name: x, context: {cluster: c, namespace: team-a}}]\ncurrent-context: x\n", want: "team-a"},
		{name: "no current context", text: "contexts: [{name: x, context: {namespace: team-a}}]\n", wantErr: "no current-context"},
		{name: "unknown current context", text: "contexts: [{name: x, context: {}}]\ncurrent-context: y\n", wantErr: "current-context y names no entry of contexts"},
		{name: "not YAML", text: "contexts: [\n", wantErr: "kubeconfig "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, tc.text)
			got, err := contextNamespace(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v, want one naming %s and containing %q", err, p, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("contextNamespace = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := contextNamespace(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "reading the kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

// The smoke workflow installs the kind CLI the harness is written for.
func TestWorkflowInstallsKindVersion(t *testing.T) {
	b, err := os.ReadFile("../../.github/workflows/smoke.yml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "go install sigs.k8s.io/kind@" + KindVersion + "\n"; !strings.Contains(string(b), want) {
		t.Errorf(".github/workflows/smoke.yml does not run %q", strings.TrimSpace(want))
	}
}
