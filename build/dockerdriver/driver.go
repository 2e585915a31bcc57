package dockerdriver

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Image is the buildkitd image the docker-container driver
// runs: the same BuildKit version as the client library imagectl links.
const Image = "moby/buildkit:v0.33.0"

// Ensure starts (or reuses) a privileged buildkitd container
// named name through the docker CLI, as buildx's docker-container driver
// does, and returns its address (docker-container://name), which the client
// dials through `docker exec`. It needs a reachable Docker engine.
func Ensure(ctx context.Context, name, image string) (string, error) {
	if image == "" {
		image = Image
	}
	docker := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, "docker", args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return "", fmt.Errorf("the docker-container driver needs a Docker engine: %w", err)
	}
	state, err := docker("container", "inspect", "--format", "{{.State.Running}}", name)
	switch {
	case err == nil && state == "true":
	case err == nil:
		if _, err := docker("container", "start", name); err != nil {
			return "", err
		}
	default:
		if _, err := docker("run", "-d", "--name", name, "--privileged", "--restart", "unless-stopped",
			"-v", name+"_state:/var/lib/buildkit", image); err != nil {
			return "", err
		}
	}
	addr := "docker-container://" + name
	// Wait for buildkitd inside the container to answer.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := docker("exec", name, "buildctl", "debug", "workers")
		if err == nil {
			return addr, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("buildkitd in container %s did not become ready: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
