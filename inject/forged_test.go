package inject

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// userPod is a RayCluster whose head pod has the user's own emptyDir
// (mounted by the Ray container) and the user's own image pull secret.
var userPod = clusterWith(`    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          volumeMounts:
          - name: cache
            mountPath: /cache
        volumes:
        - name: cache
          emptyDir: {}
        imagePullSecrets:
        - name: user-secret
`, `  - groupName: w
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
`)

// TestRemoveRefusesAForgedRecord: Remove takes out an item the record
// lists only when it is what inject writes, the sidecar uses it, and
// nothing left refers to it; it never leaves an empty list key. A record
// edited by hand is refused, naming the item (issue 35 item 4).
func TestRemoveRefusesAForgedRecord(t *testing.T) {
	res, err := Apply(context.Background(), "f.yaml", []byte(userPod), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	const genuine = `{"added":[{"list":"volumeMounts","name":"ray-logs","how":"appended"},{"list":"containers","name":"code-server","how":"appended"},{"list":"volumes","name":"ray-logs","how":"appended"}]}`
	if !strings.Contains(string(res.Output), genuine) {
		t.Fatalf("the record is not as expected (else the cases below prove nothing):\n%s", res.Output)
	}
	removed, err := Remove("f.yaml", res.Output)
	if err != nil {
		t.Fatalf("Remove of a genuine record: %v", err)
	}
	if d := cmp.Diff(userPod, string(removed.Output)); d != "" {
		t.Fatalf("Remove of a genuine record (-in +out):\n%s", d)
	}

	for _, tc := range []struct {
		name   string
		record string
		want   []string // substrings of the error
	}{
		{
			name:   "the user's emptyDir and pull secret added to the record",
			record: `{"added":[{"list":"volumeMounts","name":"ray-logs","how":"appended"},{"list":"containers","name":"code-server","how":"appended"},{"list":"volumes","name":"ray-logs","how":"appended"},{"list":"volumes","name":"cache","how":"appended"},{"list":"imagePullSecrets","name":"user-secret","how":"appended"}]}`,
			want:   []string{`volumes "cache"`},
		},
		{
			name:   "the user's emptyDir instead of the sidecar's volume",
			record: `{"added":[{"list":"volumeMounts","name":"ray-logs","how":"appended"},{"list":"containers","name":"code-server","how":"appended"},{"list":"volumes","name":"cache","how":"appended"}]}`,
			want:   []string{`volumes "cache"`, `mounts /tmp/ray from "ray-logs"`},
		},
		{
			name:   "the user's only pull secret added to the record",
			record: `{"added":[{"list":"volumeMounts","name":"ray-logs","how":"appended"},{"list":"containers","name":"code-server","how":"appended"},{"list":"volumes","name":"ray-logs","how":"appended"},{"list":"imagePullSecrets","name":"user-secret","how":"appended"}]}`,
			want:   []string{`imagePullSecrets "user-secret"`, "only item", "empty"},
		},
		{
			name:   "the Ray container's mount left out of the record",
			record: `{"added":[{"list":"containers","name":"code-server","how":"appended"},{"list":"volumes","name":"ray-logs","how":"appended"}]}`,
			want:   []string{`volumes "ray-logs"`, `containers[0] "ray-head" still mounts it`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := strings.Replace(string(res.Output), genuine, tc.record, 1)
			out, err := Remove("f.yaml", []byte(forged))
			if err == nil {
				t.Fatalf("Remove followed a forged record:\n%s", out.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// Apply takes the old sidecar out first: the same refusal.
			if _, err := Apply(context.Background(), "f.yaml", []byte(forged), WithImage("example.com/cs:1")); err == nil {
				t.Errorf("Apply followed a forged record")
			}
		})
	}
}

// TestRemoveWithPullSecret: the pull secret inject adds is taken out again,
// appended after the user's or in a list inject created.
func TestRemoveWithPullSecret(t *testing.T) {
	noSecret := strings.Replace(userPod, "        imagePullSecrets:\n        - name: user-secret\n", "", 1)
	for _, in := range []string{userPod, noSecret} {
		res, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"), WithImagePullSecret("regcred"))
		if err != nil {
			t.Fatal(err)
		}
		removed, err := Remove("f.yaml", res.Output)
		if err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if d := cmp.Diff(in, string(removed.Output)); d != "" {
			t.Errorf("Remove after Apply with a pull secret (-in +out):\n%s", d)
		}
	}
}

// TestRayMountOfAMissingVolume: when the Ray container already mounts
// /tmp/ray from a volume the pod does not define, inject adds no volume
// (it adds one only with the mount it adds, so that --remove can refuse a
// record that lists a volume a container of the user's still mounts) and
// warns; Remove gives the input back.
func TestRayMountOfAMissingVolume(t *testing.T) {
	in := clusterWith(`    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          volumeMounts:
          - name: ray-logs
            mountPath: /tmp/ray
`, "  - groupName: w\n    rayStartParams: {}\n    template:\n      spec:\n        containers:\n        - name: w\n          image: rayproject/ray:2.46.0\n")
	res, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Output), "volumes:") {
		t.Errorf("a volume was added for the Ray container's own mount:\n%s", res.Output)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, `mounts /tmp/ray from the volume "ray-logs"`) || !strings.Contains(w, "does not define") {
		t.Errorf("warnings %q do not name the missing volume", w)
	}
	removed, err := Remove("f.yaml", res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, string(removed.Output)); d != "" {
		t.Errorf("Remove(Apply(in)) (-in +out):\n%s", d)
	}
}
