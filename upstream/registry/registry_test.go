package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
)

func platformImage(t *testing.T, arch string) v1.Image {
	t.Helper()
	img, err := imagetest.RandomPlatformImage(arch)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestCodeServers(t *testing.T) {
	host := testutil.Registry(t)
	repo := host + "/linuxserver/code-server"

	amd, arm := platformImage(t, "amd64"), platformImage(t, "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
	)
	push := func(tag string, f func(name.Reference) error) {
		ref, err := name.ParseReference(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(ref); err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	}
	for _, tag := range []string{"4.101.2", "4.101.2-ls280", "version-4.101.2", "latest", "4.99.4", "4.90.0"} {
		push(tag, func(r name.Reference) error { return remote.WriteIndex(r, idx) })
	}
	push("amd64-4.101.2", func(r name.Reference) error { return remote.Write(r, amd) })
	push("4.100.0", func(r name.Reference) error { return remote.Write(r, amd) }) // single-arch tag

	src, err := New(repo, `^(\d+\.\d+\.\d+)$`, map[string]string{"4.99.4": "1.99.3"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.CodeServers(context.Background(), func(v string) bool { return v != "4.90.0" })
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	amdDigest, _ := amd.Digest()
	armDigest, _ := arm.Digest()
	both := map[string]string{"linux/amd64": amdDigest.String(), "linux/arm64": armDigest.String()}
	want := []catalog.CodeServer{
		{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2", IndexDigest: idxDigest.String(), Platforms: both},
		{Version: "4.100.0", VSCode: "1.100.0", Tag: "4.100.0", Platforms: map[string]string{"linux/amd64": amdDigest.String()}},
		{Version: "4.99.4", VSCode: "1.99.3", Tag: "4.99.4", IndexDigest: idxDigest.String(), Platforms: both},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CodeServers mismatch (-want +got):\n%s", diff)
	}
}

func TestCodeServersErrors(t *testing.T) {
	if _, err := New("x", `^\d+$`, nil); err == nil || !strings.Contains(err.Error(), "no group") {
		t.Errorf("New without group: %v", err)
	}
	host := testutil.Registry(t)
	src, err := New(host+"/nope/none", `^(\d+\.\d+\.\d+)$`, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.CodeServers(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "listing tags of") {
		t.Errorf("error = %v, want a listing error naming the repository", err)
	}
}
