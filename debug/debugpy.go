package debug

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/imagectl/imagectl/internal/pep440"
)

// DebugpyRequirement is what Ray's debugger needs in a worker: with an
// older debugpy, or none, breakpoint() logs "Module 'debugpy>=1.8.0'
// cannot be loaded" and does not pause.
const DebugpyRequirement = "debugpy>=1.8.0"

// debugpyProbe prints the debugpy version the Ray container's Python
// imports, or nothing: `python` as Ray's workers run it, else python3.
const debugpyProbe = `for p in python python3; do command -v "$p" >/dev/null 2>&1 || continue; "$p" -c 'import debugpy; print(debugpy.__version__)' 2>/dev/null; exit 0; done`

// execTimeout bounds the probe.
const execTimeout = 30 * time.Second

// Exec runs command in a container of a Pod of c's namespace, as kubectl
// exec does (WebSocket, else SPDY), and returns its standard output.
func (c *Cluster) Exec(ctx context.Context, pod, container string, command ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := c.stream(ctx, pod, container, command, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec in Pod %s container %s: %w%s", pod, container, err, suffixLines(stderr.String()))
	}
	return stdout.String(), nil
}

// stream runs command in a container with the streams of so (stdin when
// so.Stdin is set), as kubectl exec does: WebSocket, else SPDY.
func (c *Cluster) stream(ctx context.Context, pod, container string, command []string, so remotecommand.StreamOptions) error {
	u := c.Core.PodSubresourceURL(c.Namespace, pod, "exec",
		&corev1.PodExecOptions{Container: container, Command: command, Stdin: so.Stdin != nil, Stdout: so.Stdout != nil, Stderr: so.Stderr != nil})
	spdyExec, err := remotecommand.NewSPDYExecutor(c.Config, http.MethodPost, u)
	if err != nil {
		return err
	}
	exec := spdyExec
	if ws, err := remotecommand.NewWebSocketExecutor(c.Config, http.MethodGet, u.String()); err == nil {
		if exec, err = remotecommand.NewFallbackExecutor(ws, spdyExec, func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		}); err != nil {
			return err
		}
	}
	return exec.StreamWithContext(ctx, so)
}

func suffixLines(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return ": " + oneLine(s)
}

// hasDebugpy reports whether env's packages (pip, uv or conda) name
// debugpy.
func hasDebugpy(env map[string]any) bool {
	for _, k := range []string{"pip", "uv", "conda"} {
		if strings.Contains(strings.ToLower(fmt.Sprint(env[k])), "debugpy") {
			return true
		}
	}
	return false
}

// addDebugpy adds DebugpyRequirement to env's pip packages, when env names
// no package manager or pip; it reports whether it did.
func addDebugpy(env map[string]any) bool {
	if env["uv"] != nil || env["conda"] != nil {
		return false
	}
	switch p := env["pip"].(type) {
	case nil:
		env["pip"] = []any{DebugpyRequirement}
	case []any:
		env["pip"] = append(p, DebugpyRequirement)
	case map[string]any:
		pk, ok := p["packages"].([]any)
		if !ok && p["packages"] != nil {
			return false
		}
		p["packages"] = append(pk, DebugpyRequirement)
	default:
		return false
	}
	return true
}

// debugpyOK reports whether version satisfies DebugpyRequirement.
func debugpyOK(version string) bool {
	spec, err := pep440.ParseSpecifier(">=1.8.0")
	if err != nil {
		return false
	}
	v, err := pep440.Parse(strings.TrimSpace(version))
	return err == nil && spec.Contains(v) // an installed pre-release counts, as a version comparison in Ray does
}

// ensureDebugpy adds debugpy to the runtime env when the head's Ray image
// lacks it and the env does not name it, saying what it found.
func (s *session) ensureDebugpy(ctx context.Context, head *corev1.Pod, env map[string]any) {
	if hasDebugpy(env) || len(head.Spec.Containers) == 0 {
		return
	}
	ray := head.Spec.Containers[0].Name
	out, err := s.c.Exec(ctx, head.Name, ray, "sh", "-c", debugpyProbe)
	if err != nil {
		s.report(Event{Kind: KindWarning, Pod: head.Name, Message: fmt.Sprintf("warning: could not check for debugpy in the Ray image (%v): if breakpoint() does not pause, add %q to the runtime env's pip", err, DebugpyRequirement)})
		return
	}
	if v := strings.TrimSpace(out); v != "" && debugpyOK(v) {
		return
	}
	found := "no debugpy"
	if v := strings.TrimSpace(out); v != "" {
		found = "debugpy " + v
	}
	if addDebugpy(env) {
		s.report(Event{Kind: KindWarning, Pod: head.Name, Message: fmt.Sprintf("the Ray image of container %s has %s: added %q to the runtime env's pip (the workers install it from the cluster's package index)", ray, found, DebugpyRequirement)})
		return
	}
	s.report(Event{Kind: KindWarning, Pod: head.Name, Message: fmt.Sprintf("warning: the Ray image of container %s has %s and the runtime env uses uv or conda: add %q to it, or breakpoint() will not pause", ray, found, DebugpyRequirement)})
}
