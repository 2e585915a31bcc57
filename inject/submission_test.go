package inject

import (
	"context"
	"strings"
	"testing"
)

// TestSubmissionWarnings: a RayJob the kubectl ray plugin cannot submit
// with -f is named with its mode: one not in InteractiveMode (K8sJobMode
// when unset), one that is not the first document of its file (naming the
// first), and nothing for an InteractiveMode RayJob first in its file.
func TestSubmissionWarnings(t *testing.T) {
	job := func(name, mode string) string {
		m := ""
		if mode != "" {
			m = "  submissionMode: " + mode + "\n"
		}
		return "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: " + name + "\nspec:\n  entrypoint: python x.py\n" + m +
			"  runtimeEnvYAML: |\n    pip: [\"debugpy>=1.8.0\"]\n  rayClusterSpec:\n    headGroupSpec:\n      template:\n        spec:\n          containers:\n          - name: ray-head\n            image: rayproject/ray:2.46.0\n"
	}
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: code\ndata:\n  a: b\n"
	notInteractive := "not InteractiveMode: KubeRay submits the entrypoint itself, so `kubectl ray job submit -f` refuses this RayJob, and `imagectl debug` follows the job KubeRay submits but can upload no --working-dir"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"interactive, first", job("j", "InteractiveMode"), nil},
		{"interactive, after a comment-only head and ---", "# my job\n---\n" + job("j", "InteractiveMode"), nil},
		{"unset", job("j", ""), []string{"document 1 (RayJob j): submissionMode K8sJobMode (unset: KubeRay's default), " + notInteractive}},
		{"K8sJobMode", job("j", "K8sJobMode"), []string{"document 1 (RayJob j): submissionMode K8sJobMode, " + notInteractive}},
		{"SidecarMode", job("j", "SidecarMode"), []string{"document 1 (RayJob j): submissionMode SidecarMode, " + notInteractive}},
		{"HTTPMode", job("j", "HTTPMode"), []string{"document 1 (RayJob j): submissionMode HTTPMode, " + notInteractive}},
		{"interactive, second", cm + "---\n" + job("j", "InteractiveMode"), []string{
			"document 2 (RayJob j): this RayJob (submissionMode InteractiveMode) is not the first document of the file: `kubectl ray job submit -f` reads only the first, document 1 (ConfigMap code), and ignores the rest without an error; put the RayJob first",
		}},
		{"two RayJobs, the second sidecar mode", job("a", "InteractiveMode") + "---\n" + job("b", "SidecarMode"), []string{
			"document 2 (RayJob b): submissionMode SidecarMode, " + notInteractive,
			"document 2 (RayJob b): this RayJob (submissionMode SidecarMode) is not the first document of the file: `kubectl ray job submit -f` reads only the first, document 1 (RayJob a),",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "job.yaml", []byte(tc.in), WithImage("registry.example/cs:1"))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != len(tc.want) {
				t.Fatalf("warnings:\n%s\nwant %d:\n%s", strings.Join(res.Warnings, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(res.Warnings[i], w) {
					t.Errorf("warning\n  %s\ndoes not start with\n  %s", res.Warnings[i], w)
				}
			}
		})
	}
	// A RayCluster or RayService is never warned about: the plugin's -f
	// takes RayJobs only, and imagectl debug submits to a RayCluster itself.
	rc := strings.Replace(strings.Replace(job("c", ""), "kind: RayJob", "kind: RayCluster", 1), "  entrypoint: python x.py\n  runtimeEnvYAML: |\n    pip: [\"debugpy>=1.8.0\"]\n  rayClusterSpec:\n", "", 1)
	rc = strings.ReplaceAll(rc, "\n    ", "\n  ")
	res, err := Apply(context.Background(), "rc.yaml", []byte(cm+"---\n"+rc), WithImage("registry.example/cs:1"))
	if err != nil {
		t.Fatalf("%v\n%s", err, rc)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("RayCluster second in its file: warnings %q", res.Warnings)
	}
}
