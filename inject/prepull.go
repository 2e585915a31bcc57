package inject

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"
)

// PrepullName is the name of the pre-pull DaemonSet Prepull writes.
const PrepullName = "ray-debug-prepull"

// PrepullHoldCommand is the pre-pull DaemonSet's one long-running
// container's command, in the sidecar's image (pulled already by then, so
// the DaemonSet needs no image of its own, such as registry.k8s.io/pause,
// which a cluster that pulls only from its own mirror lacks): the init
// containers pull the images, then only this runs. As PID 1, sleep does
// not stop at SIGTERM: the Pod's grace period is 1 s.
var PrepullHoldCommand = []string{"sleep", "infinity"}

// PrepullImages are what Prepull's DaemonSet pulls onto every node.
type PrepullImages struct {
	// Ray are the Ray images, in the order the head and then each worker
	// group names them, each once.
	Ray []string
	// Sidecar is the code-server sidecar's image.
	Sidecar string
	// PullSecrets are the imagePullSecrets the head and worker pods name,
	// each once: the DaemonSet needs them to pull from a private registry.
	PullSecrets []string
	// Restricted: the sidecar is restricted (WithRestricted or
	// WithArbitraryUID: its securityContext has runAsNonRoot), so the
	// namespace may enforce PodSecurity "restricted", and the DaemonSet's
	// Pods are restricted too, as RunAsUser and RunAsGroup (the sidecar's,
	// "" when the platform picks them) with no capability, no privilege
	// escalation, RuntimeDefault seccomp and a read-only root.
	Restricted            bool
	RunAsUser, RunAsGroup string
}

// ImagesToPrepull reads the images of an injected manifest (imagectl
// inject's output): the Ray container's image (containers[0], as KubeRay
// takes it) of the head and of every worker group, the sidecar's image (the
// head container carrying the RecordEnv record, else the one named
// DefaultName) and the pods' imagePullSecrets, over every RayJob,
// RayCluster and RayService of the stream. A manifest with no Ray document,
// or a Ray document whose head has no sidecar, is an error naming it.
func ImagesToPrepull(file string, manifest []byte) (PrepullImages, error) {
	var p PrepullImages
	seen := map[string]bool{}
	add := func(list *[]string, v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	found := false
	for i, chunk := range splitDocuments(manifest) {
		root, err := parseDoc(chunk)
		if err != nil {
			return p, &Error{File: file, Document: i + 1, Err: err}
		}
		if root == nil {
			continue
		}
		kind, ok := rayDoc(root)
		if !ok {
			continue
		}
		found = true
		name := scalarAt(root, "metadata", "name")
		docErr := func(format string, a ...any) error {
			return &Error{File: file, Document: i + 1, Kind: kind, Name: name, Err: fmt.Errorf(format, a...)}
		}
		cluster := clusterOf(root, kind)
		head := valueAt(cluster, "headGroupSpec", "template", "spec")
		pods := []*yaml.Node{head}
		if gs := valueAt(cluster, "workerGroupSpecs"); gs != nil && gs.Kind == yaml.SequenceNode {
			for _, g := range gs.Content {
				pods = append(pods, valueAt(g, "template", "spec"))
			}
		}
		var sidecar, byName string
		var sidecarNode, byNameNode *yaml.Node
		if cs := valueAt(head, "containers"); cs != nil && cs.Kind == yaml.SequenceNode {
			for _, ct := range cs.Content[min(1, len(cs.Content)):] {
				if env := valueAt(ct, "env"); env != nil && env.Kind == yaml.SequenceNode {
					for _, e := range env.Content {
						if scalarAt(e, "name") == RecordEnv {
							sidecar, sidecarNode = scalarAt(ct, "image"), ct
						}
					}
				}
				if scalarAt(ct, "name") == DefaultName {
					byName, byNameNode = scalarAt(ct, "image"), ct
				}
			}
		}
		if sidecar == "" {
			sidecar, sidecarNode = byName, byNameNode
		}
		if sidecarNode != nil && scalarAt(sidecarNode, "securityContext", "runAsNonRoot") == "true" && !p.Restricted {
			p.Restricted = true
			p.RunAsUser = scalarAt(sidecarNode, "securityContext", "runAsUser")
			p.RunAsGroup = scalarAt(sidecarNode, "securityContext", "runAsGroup")
		}
		if sidecar == "" {
			return p, docErr("the head pod has no code-server sidecar (no container with the %s record or named %s): pre-pull the output of imagectl inject", RecordEnv, DefaultName)
		}
		if p.Sidecar != "" && p.Sidecar != sidecar {
			return p, docErr("the sidecar image %s differs from %s of an earlier document: one pre-pull DaemonSet per sidecar image", sidecar, p.Sidecar)
		}
		p.Sidecar = sidecar
		for j, pod := range pods {
			cs := valueAt(pod, "containers")
			if cs == nil || cs.Kind != yaml.SequenceNode || len(cs.Content) == 0 || scalarAt(cs.Content[0], "image") == "" {
				where := "the head pod"
				if j > 0 {
					where = fmt.Sprintf("worker group %d", j)
				}
				return p, docErr("%s has no Ray container image (containers[0].image)", where)
			}
			add(&p.Ray, scalarAt(cs.Content[0], "image"))
			if ps := valueAt(pod, "imagePullSecrets"); ps != nil && ps.Kind == yaml.SequenceNode {
				for _, s := range ps.Content {
					add(&p.PullSecrets, scalarAt(s, "name"))
				}
			}
		}
	}
	if !found {
		return p, &Error{File: file, Err: fmt.Errorf("%w: nothing to pre-pull", ErrNoRayKind)}
	}
	return p, nil
}

// Prepull writes the pre-pull DaemonSet (examples/prepull.yaml is its
// output for examples/rayjob.yaml; imagectl inject --prepull-file writes
// it, imagectl debug --prepull applies it): one init container per image that only
// runs `true`, so every node pulls the Ray and sidecar images before a
// RayCluster needs them, a container that sleeps in the sidecar's image
// (PrepullHoldCommand), and the imagePullSecrets.
func Prepull(p PrepullImages) ([]byte, error) {
	if len(p.Ray) == 0 || p.Sidecar == "" {
		return nil, errors.New("pre-pull: want at least one Ray image and the sidecar image")
	}
	type initContainer struct{ Name, Image string }
	var ics []initContainer
	for i, img := range p.Ray {
		n := "ray"
		if i > 0 {
			n = fmt.Sprintf("ray-%d", i+1)
		}
		ics = append(ics, initContainer{n, img})
	}
	ics = append(ics, initContainer{DefaultName, p.Sidecar})
	for _, ic := range ics {
		if _, err := name.ParseReference(ic.Image); err != nil || strings.ContainsAny(ic.Image, " \t\n#") {
			return nil, fmt.Errorf("pre-pull: image %q of init container %s is not an image reference", ic.Image, ic.Name)
		}
	}
	for _, s := range p.PullSecrets {
		if s == "" || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			return nil, fmt.Errorf("pre-pull: imagePullSecret %q is not a Secret name (lower-case letters, digits, '-' and '.')", s)
		}
	}
	var b bytes.Buffer
	// The IDs as numbers (YAML could read "010" as octal), a non-root user.
	ids := map[string]string{}
	for _, id := range []struct{ field, v string }{{"runAsUser", p.RunAsUser}, {"runAsGroup", p.RunAsGroup}} {
		if id.v == "" {
			continue
		}
		n, err := strconv.ParseInt(id.v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("pre-pull: the sidecar's %s %q: expected a number", id.field, id.v)
		}
		if id.field == "runAsUser" && n == 0 && p.Restricted {
			return nil, errors.New("pre-pull: the sidecar's runAsUser is 0 (root), which PodSecurity \"restricted\" refuses")
		}
		ids[id.field] = strconv.FormatInt(n, 10)
	}
	err := prepullTemplate.Execute(&b, map[string]any{"Name": PrepullName, "Init": ics, "Hold": p.Sidecar, "PullSecrets": p.PullSecrets,
		"Restricted": p.Restricted, "RunAsUser": ids["runAsUser"], "RunAsGroup": ids["runAsGroup"]})
	return b.Bytes(), err
}

var prepullTemplate = template.Must(template.New("prepull").Parse(`# Pulls the Ray image(s) and the code-server sidecar's image onto every
# node, so that a RayCluster does not wait minutes for them (the kubectl ray
# plugin deletes its RayJob when the RayCluster is not ready within 120 s).
# Written by imagectl (inject.Prepull) from the injected manifest: this one
# is examples/rayjob.yaml's (a test checks). For yours,
# ` + "`imagectl inject -f FILE --prepull-file prepull.yaml`" + ` writes it, and
# ` + "`imagectl debug --prepull`" + ` applies it. The init containers only run
# ` + "`true`" + `, then one container sleeps in the sidecar's image (no other
# image is needed); the images stay on the nodes after
# ` + "`kubectl delete -f prepull.yaml`" + `.
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{.Name}}
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: {{.Name}}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{.Name}}
    spec:
      terminationGracePeriodSeconds: 1
{{- if .Restricted}}
      securityContext:
{{- if .RunAsUser}}
        runAsUser: {{.RunAsUser}}
{{- end}}
{{- if .RunAsGroup}}
        runAsGroup: {{.RunAsGroup}}
{{- end}}
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
{{- end}}
{{- if .PullSecrets}}
      imagePullSecrets:
{{- range .PullSecrets}}
      - name: {{.}}
{{- end}}
{{- end}}
      initContainers:
{{- range .Init}}
      - name: {{.Name}}
        image: {{.Image}}
        command: ["true"]
        resources:
          requests: {cpu: 10m, memory: 16Mi}
          limits: {memory: 64Mi}
{{- if $.Restricted}}
        securityContext: {{template "containerSecurity"}}
{{- end}}
{{- end}}
      containers:
      - name: hold
        image: {{.Hold}}
        command: ["sleep", "infinity"]
        resources:
          requests: {cpu: 1m, memory: 8Mi}
          limits: {memory: 16Mi}
{{- if .Restricted}}
        securityContext: {{template "containerSecurity"}}
{{- end}}
{{define "containerSecurity"}}{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}{{end -}}
`))
