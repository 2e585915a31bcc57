package inject

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// chartVersions are the ray-cluster chart releases in
// testdata/ray-cluster-chart/<version> (see SOURCE.md there; tests/kube
// renders them with helm and applies what the operator under test accepts).
var chartVersions = []string{"v1.3.2", "v1.4.2", "v1.5.1", "v1.6.2", "v1.7.0"}

// TestHelmChartValues injects into the ray-cluster chart's own values.yaml
// of every supported KubeRay release, as it is and with the edits users
// make: head.image (the chart then renders it, not image, for the head),
// and RAY_DEBUG in common.containerEnv (the chart puts it before each
// group's containerEnv on every Ray container; the last one wins).
func TestHelmChartValues(t *testing.T) {
	const headImage = "head:\n  image:\n    repository: rayproject/ray\n    tag: 2.47.1-py311\n    pullPolicy: IfNotPresent\n"
	const why = ": breakpoint() does nothing, so no task pauses for the debugger"
	for _, v := range chartVersions {
		orig, err := os.ReadFile(filepath.Join("testdata", "ray-cluster-chart", v, "values.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var chart struct {
			Image struct{ Tag string } `json:"image"`
		}
		if err := yaml.Unmarshal(orig, &chart); err != nil {
			t.Fatal(err)
		}
		minor := rayMinor(RayVersionOf(chart.Image.Tag))
		// common.containerEnv: [] is the first "  containerEnv: []" line.
		withCommon := strings.Replace(string(orig), "  containerEnv: []\n", "  containerEnv:\n  - name: RAY_DEBUG\n    value: \"0\"\n", 1)
		var common struct {
			Common struct{ ContainerEnv []corev1.EnvVar } `json:"common"`
		}
		if err := yaml.Unmarshal([]byte(withCommon), &common); err != nil || len(common.Common.ContainerEnv) != 1 {
			t.Fatalf("%s: common.containerEnv is not where the test expects it (%v)", v, err)
		}
		withHeadOverride := strings.Replace(withCommon, "  containerEnv: []\n", "  containerEnv:\n  - name: RAY_DEBUG\n    value: \"1\"\n", 1)
		tests := []struct {
			name     string
			values   string
			image    string
			warnings []string
		}{
			{"as released", string(orig), DefaultRepository + ":ray" + minor, nil},
			{"head.image", strings.Replace(string(orig), "head:\n", headImage, 1), DefaultRepository + ":ray2.47", nil},
			{"common.containerEnv RAY_DEBUG=0", withCommon, DefaultRepository + ":ray" + minor,
				[]string{`common.containerEnv sets RAY_DEBUG=0 for the head's Ray container and the worker group's Ray container` + why}},
			{"head.containerEnv overrides common", withHeadOverride, DefaultRepository + ":ray" + minor,
				[]string{`common.containerEnv sets RAY_DEBUG=0 for the worker group's Ray container` + why}},
		}
		for _, tt := range tests {
			t.Run(v+"/"+tt.name, func(t *testing.T) {
				res, err := Apply(context.Background(), "values.yaml", []byte(tt.values), WithHelmValues())
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.image, res.Targets[0].Image); d != "" {
					t.Errorf("image (-want +got):\n%s", d)
				}
				var warnings []string
				for _, w := range res.Warnings {
					warnings = append(warnings, strings.TrimPrefix(w, "document 1 (Helm values): "))
				}
				if d := cmp.Diff(tt.warnings, warnings); d != "" {
					t.Errorf("warnings (-want +got):\n%s", d)
				}
				var values struct {
					Head struct {
						SidecarContainers []corev1.Container   `json:"sidecarContainers"`
						Volumes           []corev1.Volume      `json:"volumes"`
						VolumeMounts      []corev1.VolumeMount `json:"volumeMounts"`
					} `json:"head"`
				}
				if err := yaml.Unmarshal(res.Output, &values); err != nil {
					t.Fatal(err)
				}
				h := values.Head
				if len(h.SidecarContainers) != 1 || len(h.Volumes) != 1 || len(h.VolumeMounts) != 1 ||
					h.SidecarContainers[0].VolumeMounts[0].Name != "log-volume" || h.VolumeMounts[0].Name != "log-volume" {
					t.Errorf("head: want one sidecar sharing the chart's log-volume at /tmp/ray:\n%s", res.Output)
				}
				removed, err := Remove("values.yaml", res.Output)
				if err != nil || string(removed.Output) != tt.values {
					t.Errorf("Remove: %v\n%s", err, cmp.Diff(tt.values, string(removed.Output)))
				}
			})
		}
	}
}
