package inject

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
)

// headPodSpec decodes the head pod template of a Ray document (or the
// rendered head of Helm values is not decoded: nil) strictly into a
// PodSpec: every field must be one Kubernetes knows. The KubeRay API of
// go.mod predates authOptions, so the Ray object is not decoded whole.
func headPodSpec(t *testing.T, doc []byte, kind string) *corev1.PodSpec {
	t.Helper()
	var root yaml3.Node
	if err := yaml3.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	var m any
	if err := valueAt(root.Content[0], append(headTemplatePath(kind), "spec")...).Decode(&m); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ps corev1.PodSpec
	if err := dec.Decode(&ps); err != nil {
		t.Fatalf("the head pod spec does not decode strictly: %v\n%s", err, doc)
	}
	return &ps
}

const authJob = `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: job
spec:
  entrypoint: python main.py
  submissionMode: InteractiveMode
  rayClusterSpec:
    authOptions:
      mode: token
    rayVersion: "2.53.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.53.0
`

const authService = `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: serve
spec:
  rayClusterConfig:
    rayVersion: "2.53.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.53.0
            env:
            - name: RAY_AUTH_MODE
              value: token
            - name: RAY_AUTH_TOKEN
              valueFrom:
                secretKeyRef:
                  name: my-ray-token
                  key: token
          volumes:
          - name: data
            emptyDir: {}
`

// TestTokenAuthSidecar: with Ray's token authentication, found either way
// (KubeRay's authOptions.mode: token, or RAY_AUTH_MODE=token on the head's
// Ray container) in a RayJob, a RayCluster, a RayService or Helm values,
// inject mounts the Secret that holds the token into the sidecar, runs the
// token proxy as the sidecar's command, points the extension's settings at
// it and says so; injecting again changes nothing and --remove gives the
// input back. Where the token cannot be found, it only warns and adds the
// sidecar as without token authentication.
func TestTokenAuthSidecar(t *testing.T) {
	sample := func(name string) string {
		return string(mustRead(t, filepath.Join("testdata", "kuberay-samples", name)))
	}
	// 55 characters: KubeRay keeps the last 50, whose first is a digit.
	longName := "xxxxx1" + strings.Repeat("b", 41) + "-cluster"
	tests := []struct {
		name, kind, input string
		helm              bool
		opts              []Option
		secret, key       string // "" when no proxy is expected
		port              string
		upstream          string
		warn              []string // substrings of the token warning
	}{
		{name: "RayCluster authOptions (KubeRay's sample)", kind: "RayCluster", input: sample("ray-cluster.auth.yaml"),
			secret: "ray-cluster-with-auth", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"spec.authOptions.mode is token (KubeRay token authentication): inject mounts the token from Secret \"ray-cluster-with-auth\", key \"auth_token\" (the Secret KubeRay creates for the RayCluster", "127.0.0.1:8266", "GET and HEAD only"}},
		{name: "RayCluster RAY_AUTH_MODE by hand (KubeRay's sample)", kind: "RayCluster", input: sample("ray-cluster.auth-manual.yaml"),
			secret: "ray-cluster-with-auth", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"the head's Ray container sets RAY_AUTH_MODE=token (Ray token authentication): inject mounts the token from Secret \"ray-cluster-with-auth\", key \"auth_token\" (the Secret the head's Ray container's RAY_AUTH_TOKEN refers to"}},
		{name: "RayCluster with a long name: KubeRay's CheckName", kind: "RayCluster",
			input:  strings.Replace(sample("ray-cluster.auth.yaml"), "name: ray-cluster-with-auth", "name: "+longName, 1),
			secret: "r" + strings.Repeat("b", 41) + "-cluster", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265"},
		{name: "RayCluster with dashboard-port 8266 and --dashboard", kind: "RayCluster",
			input: strings.Replace(sample("ray-cluster.auth.yaml"), "rayStartParams: {}\n    template", "rayStartParams:\n      dashboard-port: \"8266\"\n    template", 1),
			opts:  []Option{WithDashboard("127.0.0.1:8266")}, secret: "ray-cluster-with-auth", key: "auth_token", port: "8267", upstream: "127.0.0.1:8266"},
		{name: "RayJob authOptions.secretName", kind: "RayJob",
			input:  strings.Replace(authJob, "mode: token\n", "mode: token\n      secretName: job-token\n", 1),
			secret: "job-token", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"spec.rayClusterSpec.authOptions.mode is token", "(spec.rayClusterSpec.authOptions.secretName; create it before the cluster (KubeRay does not))"}},
		{name: "RayJob authOptions and the Ray container's own RAY_AUTH_TOKEN", kind: "RayJob",
			input:  strings.Replace(authJob, "            image: rayproject/ray:2.53.0\n", "            image: rayproject/ray:2.53.0\n            env:\n            - name: RAY_AUTH_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: own-token\n                  key: tok\n", 1),
			secret: "own-token", key: "tok", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"which KubeRay >= 1.6 keeps (1.5 puts its own Secret after it"}},
		{name: "RayJob authOptions without secretName", kind: "RayJob", input: authJob,
			warn: []string{"KubeRay keeps the token in a Secret named after the RayCluster it creates for this RayJob (job-<5 random characters>)", "401 Unauthorized: Missing authentication token", "Set spec.rayClusterSpec.authOptions.secretName (KubeRay >= 1.6)"}},
		{name: "RayService RAY_AUTH_MODE by hand, a volumes list to append to", kind: "RayService", input: authService,
			secret: "my-ray-token", key: "token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"the head's Ray container sets RAY_AUTH_MODE=token", "Secret \"my-ray-token\", key \"token\""}},
		{name: "RayService authOptions.secretName", kind: "RayService",
			input:  strings.Replace(strings.Replace(authService, "  rayClusterConfig:\n", "  rayClusterConfig:\n    authOptions:\n      mode: token\n      secretName: serve-token\n", 1), "            env:\n            - name: RAY_AUTH_MODE\n              value: token\n            - name: RAY_AUTH_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: my-ray-token\n                  key: token\n", "", 1),
			secret: "serve-token", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265"},
		{name: "RayService authOptions without secretName", kind: "RayService",
			input: strings.Replace(strings.Replace(authService, "  rayClusterConfig:\n", "  rayClusterConfig:\n    authOptions:\n      mode: token\n", 1), "            env:\n            - name: RAY_AUTH_MODE\n              value: token\n            - name: RAY_AUTH_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: my-ray-token\n                  key: token\n", "", 1),
			warn:  []string{"spec.rayClusterConfig.authOptions.mode is token", "for this RayService (serve-<5 random characters>)"}},
		{name: "enableK8sTokenAuth", kind: "RayCluster",
			input: strings.Replace(sample("ray-cluster.auth.yaml"), "mode: token\n", "mode: token\n    enableK8sTokenAuth: true\n", 1),
			warn:  []string{"with enableK8sTokenAuth: Ray checks Kubernetes ServiceAccount tokens"}},
		{name: "RAY_AUTH_TOKEN written in the file", kind: "RayCluster",
			input: strings.Replace(sample("ray-cluster.auth-manual.yaml"), "            valueFrom:\n              secretKeyRef:\n                key: auth_token\n                name: ray-cluster-with-auth # change this to match your Secret name\n          resources", "            value: s3cr3t-t0ken\n          resources", 1),
			warn:  []string{"its RAY_AUTH_TOKEN holds the token itself, written in this file: inject copies no token into the sidecar"}},
		{name: "no RAY_AUTH_TOKEN", kind: "RayCluster",
			input: strings.Replace(plainCluster, "          image: rayproject/ray:2.46.0\n", "          image: rayproject/ray:2.46.0\n          env:\n          - name: RAY_AUTH_MODE\n            value: token\n", 1),
			warn:  []string{"sets no RAY_AUTH_TOKEN from a Secret (Ray then reads RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): inject cannot find the token"}},
		{name: "fsGroup is code-server's group", kind: "RayCluster",
			input:  strings.Replace(sample("ray-cluster.auth-manual.yaml"), "    template:\n      spec:\n        containers:\n        - name: ray-head", "    template:\n      spec:\n        securityContext:\n          runAsGroup: 100\n          fsGroup: 100\n        containers:\n        - name: ray-head", 1),
			secret: "ray-cluster-with-auth", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"the kubelet gives the file group read for the pod's fsGroup 100, code-server's own group (PGID): code-server's user, and its terminal, can read it"}},
		{name: "Helm values", helm: true,
			input:  "image:\n  repository: rayproject/ray\n  tag: 2.53.0\nhead:\n  containerEnv:\n  - name: RAY_AUTH_MODE\n    value: token\n  - name: RAY_AUTH_TOKEN\n    valueFrom:\n      secretKeyRef:\n        name: chart-token\n        key: auth_token\n  rayStartParams: {}\n",
			secret: "chart-token", key: "auth_token", port: "8266", upstream: "127.0.0.1:8265",
			warn: []string{"head.containerEnv sets RAY_AUTH_MODE=token", "Secret \"chart-token\""}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]Option{WithImage("example.com/code-server-ray:1")}, tt.opts...)
			if tt.helm {
				opts = append(opts, WithHelmValues())
			}
			res, err := Apply(ctx, "f.yaml", []byte(tt.input), opts...)
			if err != nil {
				t.Fatal(err)
			}
			var tokenWarns []string
			for _, w := range res.Warnings {
				if strings.Contains(w, "RAY_AUTH_MODE") || strings.Contains(w, "authOptions") {
					tokenWarns = append(tokenWarns, w)
				}
			}
			if len(tokenWarns) != 1 {
				t.Fatalf("token warnings %q, want one", tokenWarns)
			}
			for _, sub := range tt.warn {
				if !strings.Contains(tokenWarns[0], sub) {
					t.Errorf("warning %q lacks %q", tokenWarns[0], sub)
				}
			}
			if strings.Contains(string(res.Output)+strings.Join(res.Warnings, "\n"), "s3cr3t-t0ken") && !strings.Contains(tt.input, "s3cr3t-t0ken") {
				t.Errorf("the token reached the output or a warning")
			}
			if strings.Contains(strings.Join(res.Warnings, "\n"), "s3cr3t-t0ken") {
				t.Errorf("a warning holds the token written in the file: %q", res.Warnings)
			}

			// Injecting again changes nothing; --remove gives the input back.
			opts2 := append([]Option{}, opts...)
			again, err := Apply(ctx, "f.yaml", res.Output, opts2...)
			if err != nil || again.Changed {
				t.Errorf("injecting again: changed=%v err=%v\n%s", again != nil && again.Changed, err, cmp.Diff(string(res.Output), string(again.Output)))
			}
			rm, err := Remove("f.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.input, string(rm.Output)); d != "" {
				t.Errorf("--remove did not give the input back (-input +removed):\n%s", d)
			}

			if tt.helm {
				checkHelmTokenSidecar(t, res.Output, tt.secret, tt.key, tt.port, tt.upstream)
				return
			}
			pod := headPodSpec(t, res.Output, tt.kind)
			sc := pod.Containers[len(pod.Containers)-1]
			var tokenVols []corev1.Volume
			for _, v := range pod.Volumes {
				if v.Secret != nil || v.Name == TokenVolume {
					tokenVols = append(tokenVols, v)
				}
			}
			for _, e := range sc.Env {
				if e.ValueFrom != nil && e.Name != "PASSWORD" || strings.Contains(e.Name, "RAY_AUTH") {
					t.Errorf("sidecar env %s: the token must reach the proxy as a file only", e.Name)
				}
			}
			if tt.secret == "" {
				if len(sc.Args) != 0 || len(tokenVols) != 0 || len(sc.VolumeMounts) != 1 || sc.Lifecycle != nil {
					t.Errorf("no token found, yet the sidecar has %d args, token volumes %+v, mounts %+v, lifecycle %+v", len(sc.Args), tokenVols, sc.VolumeMounts, sc.Lifecycle)
				}
				return
			}
			checkTokenSidecar(t, sc, tokenVols, tt.secret, tt.key, tt.port, tt.upstream)
		})
	}
}

func checkTokenSidecar(t *testing.T, sc corev1.Container, vols []corev1.Volume, secret, key, port, upstream string) {
	t.Helper()
	wantArgs := []string{imagespec.InterpreterPath, "-c", TokenProxyScript, "127.0.0.1:" + port, upstream, TokenFile}
	if d := cmp.Diff(wantArgs, sc.Args); d != "" || len(sc.Command) != 0 {
		t.Errorf("sidecar command %q args (-want +got):\n%s", sc.Command, d)
	}
	mode := int32(TokenFileMode)
	wantVol := corev1.Volume{Name: TokenVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: "token"}}, DefaultMode: &mode}}}
	if len(vols) != 1 {
		t.Fatalf("token volumes %+v, want one", vols)
	}
	if d := cmp.Diff(wantVol, vols[0]); d != "" {
		t.Errorf("token volume (-want +got):\n%s", d)
	}
	if len(sc.VolumeMounts) != 2 || sc.VolumeMounts[0].MountPath != RayTmp ||
		sc.VolumeMounts[1] != (corev1.VolumeMount{Name: TokenVolume, MountPath: TokenMountPath, ReadOnly: true}) {
		t.Errorf("sidecar mounts %+v, want /tmp/ray and the token volume read-only at %s", sc.VolumeMounts, TokenMountPath)
	}
	if sc.Lifecycle == nil || sc.Lifecycle.PostStart == nil || sc.Lifecycle.PostStart.Exec == nil {
		t.Fatalf("no postStart hook pointing the extension at the proxy")
	}
	if cmd := sc.Lifecycle.PostStart.Exec.Command; len(cmd) != 4 || cmd[3] != "127.0.0.1:"+port {
		t.Errorf("postStart %q: want the extension's dashboard set to the proxy 127.0.0.1:%s", cmd, port)
	}
}

// checkHelmTokenSidecar checks the Helm values' head: the token volume in
// head.volumes, the proxy in the sidecar of head.sidecarContainers.
func checkHelmTokenSidecar(t *testing.T, out []byte, secret, key, port, upstream string) {
	t.Helper()
	var v struct {
		Head struct {
			Volumes           []corev1.Volume    `json:"volumes"`
			SidecarContainers []corev1.Container `json:"sidecarContainers"`
		} `json:"head"`
	}
	var m any
	if err := yaml3.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var vols []corev1.Volume
	for _, vol := range v.Head.Volumes {
		if vol.Secret != nil {
			vols = append(vols, vol)
		}
	}
	if len(v.Head.SidecarContainers) != 1 {
		t.Fatalf("head.sidecarContainers %+v", v.Head.SidecarContainers)
	}
	checkTokenSidecar(t, v.Head.SidecarContainers[0], vols, secret, key, port, upstream)
}

// TestTokenVolumeNameTaken: a volume of the token volume's name that inject
// did not add is an error naming it.
func TestTokenVolumeNameTaken(t *testing.T) {
	in := string(mustRead(t, filepath.Join("testdata", "kuberay-samples", "ray-cluster.auth-manual.yaml")))
	in = strings.Replace(in, "  workerGroupSpecs:", "        volumes:\n        - name: "+TokenVolume+"\n          emptyDir: {}\n  workerGroupSpecs:", 1)
	_, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/code-server-ray:1"))
	if err == nil || !strings.Contains(err.Error(), `already has a volume named "`+TokenVolume+`" that imagectl inject did not add`) {
		t.Errorf("err = %v, want the volume name taken", err)
	}
}

// TestRemoveChecksTheTokenVolume: --remove takes out the token volume only
// as inject writes it and only when the sidecar mounts it; an edited one
// is an error naming it, and nothing is taken out.
func TestRemoveChecksTheTokenVolume(t *testing.T) {
	in := mustRead(t, filepath.Join("testdata", "kuberay-samples", "ray-cluster.auth-manual.yaml"))
	res, err := Apply(context.Background(), "f.yaml", in, WithImage("example.com/code-server-ray:1"))
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	for _, tc := range []struct{ name, from, to, want string }{
		{"another file name", "path: token", "path: other", `volumes "` + TokenVolume + `"`},
		{"another mode", "defaultMode: 256", "defaultMode: 292", `volumes "` + TokenVolume + `"`},
		{"not mounted by the sidecar", "mountPath: " + TokenMountPath, "mountPath: /elsewhere", "does not mount it at " + TokenMountPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(out, tc.from) {
				t.Fatalf("the output has no %q", tc.from)
			}
			_, err := Remove("f.yaml", []byte(strings.Replace(out, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
