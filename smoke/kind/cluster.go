package kind

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"gopkg.in/yaml.v3"
)

// KindVersion is the kind CLI the smoke workflow installs (go install
// sigs.k8s.io/kind@KindVersion; a test checks the workflow). The harness
// runs it as it runs kubectl, git and the plugin: nothing of kind is linked
// into imagectl.
const KindVersion = "v0.33.0"

// ClusterWait is how long `kind create cluster` waits for the control
// plane to be ready.
const ClusterWait = "5m"

// kindCluster is one kind cluster, driven through the kind CLI on PATH.
type kindCluster struct {
	name       string
	kubeconfig string // where create writes, and delete removes, its context
	nodeImage  string // kindest/node image; empty: kind's default
}

// createArgs are `kind create cluster`'s arguments: the cluster's
// kubeconfig written to c.kubeconfig only (never ~/.kube/config), and the
// control plane waited for.
func (c kindCluster) createArgs() []string {
	args := []string{"create", "cluster", "--name", c.name, "--kubeconfig", c.kubeconfig, "--wait", ClusterWait}
	if c.nodeImage != "" {
		args = append(args, "--image", c.nodeImage)
	}
	return args
}

func (c kindCluster) deleteArgs() []string {
	return []string{"delete", "cluster", "--name", c.name, "--kubeconfig", c.kubeconfig}
}

func (c kindCluster) exportLogsArgs(dir string) []string {
	return []string{"export", "logs", dir, "--name", c.name}
}

func (c kindCluster) create(ctx context.Context) error {
	if err := runKind(ctx, c.createArgs()...); err != nil {
		return fmt.Errorf("creating kind cluster %s: %w", c.name, err)
	}
	return nil
}

func (c kindCluster) delete(ctx context.Context) error {
	return runKind(ctx, c.deleteArgs()...)
}

func (c kindCluster) exportLogs(ctx context.Context, dir string) error {
	return runKind(ctx, c.exportLogsArgs(dir)...)
}

// runKind runs the kind CLI; a failure names the command and carries the
// end of its output.
func runKind(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "kind", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kind %s: %w: %s", strings.Join(args, " "), err, tail(out.String(), 20))
	}
	return nil
}

// contextNamespace is the namespace of kubeconfig's current context, as
// kubectl takes it: "default" when the context names none.
func contextNamespace(kubeconfig string) (string, error) {
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	var kc struct {
		CurrentContext string `yaml:"current-context"`
		Contexts       []struct {
			Name    string `yaml:"name"`
			Context struct {
				Namespace string `yaml:"namespace"`
			} `yaml:"context"`
		} `yaml:"contexts"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	if kc.CurrentContext == "" {
		return "", fmt.Errorf("kubeconfig %s: no current-context, want the context kubectl uses", kubeconfig)
	}
	for _, c := range kc.Contexts {
		if c.Name != kc.CurrentContext {
			continue
		}
		if c.Context.Namespace == "" {
			return "default", nil
		}
		return c.Context.Namespace, nil
	}
	return "", errors.New("kubeconfig " + kubeconfig + ": current-context " + kc.CurrentContext + " names no entry of contexts")
}
