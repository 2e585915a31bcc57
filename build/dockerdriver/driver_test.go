package dockerdriver_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/dockerdriver"
)

func TestEnsure(t *testing.T) {
	if err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Run(); err != nil {
		// Never required: CI machines and this one have the docker client
		// but no engine, and moby/buildkit cannot be pulled offline.
		t.Skipf("no Docker engine reachable through the docker CLI (%v): the docker-container driver cannot start a moby/buildkit container here", err)
	}
	if os.Getenv("IMAGECTL_TEST_DOCKER_DRIVER") == "" {
		t.Skip("IMAGECTL_TEST_DOCKER_DRIVER is not set: this test starts a privileged container and pulls " + dockerdriver.Image)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name := "imagectl-test-buildkit"
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	addr, err := dockerdriver.Ensure(ctx, name, "")
	if err != nil {
		t.Fatal(err)
	}
	native, err := build.NewBuildKit(build.WithAddress(addr)).Ping(ctx, "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("buildkitd in %s: native platform %s", addr, native)
}
