package pypi

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

// Releases against the fake PyPI (the Simple API's JSON form as warehouse
// writes it): Pythons per platform from the wheel names, yanked and
// pre-releases marked, empty releases and versions imagectl cannot order
// left out, newest first; one request, for the normalized project page.
func TestReleasesFromSimpleAPI(t *testing.T) {
	f := pypitest.New([]pypitest.Project{{Name: "Ray", RequiresPython: ">=3.9", Releases: map[string][]pypitest.File{
		"2.46.0": {
			pypitest.Wheel("ray-2.46.0-cp311-cp311-manylinux2014_x86_64.whl"),
			pypitest.Wheel("ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl"),
			pypitest.Wheel("ray-2.46.0-cp312-cp312-manylinux2014_aarch64.whl"),
			pypitest.Wheel("ray-2.46.0-cp312-cp312-macosx_12_0_arm64.whl"),
			pypitest.Yanked("ray-2.46.0-cp310-cp310-manylinux2014_x86_64.whl"),
			// Only a glibc newer than the base's: not installable.
			pypitest.Wheel("ray-2.46.0-cp313-cp313-manylinux_2_40_x86_64.whl"),
			{Filename: "ray-2.46.0.tar.gz"},
		},
		"2.45.0": {
			pypitest.Wheel("ray-2.45.0-cp312-cp312-manylinux_2_31_aarch64.whl"),
			pypitest.Wheel("ray-2.45.0-cp311-cp311-manylinux_2_24_x86_64.whl"),
		},
		"2.47.0rc1": {pypitest.Wheel("ray-2.47.0rc1-cp312-cp312-manylinux2014_x86_64.whl")},
		"2.40.0":    {pypitest.Yanked("ray-2.40.0-cp312-cp312-manylinux2014_x86_64.whl")},
		"2.39.0":    {{Filename: "ray-2.39.0.tar.gz"}},
		"2.0.0":     {},
		"not-a-version": {
			pypitest.Wheel("ray-x-cp312-cp312-manylinux2014_x86_64.whl"),
		},
	}}})
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := New(WithBaseURL(srv.URL)).Releases(context.Background(), "RAY")
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.PythonPackage{
		{Version: "2.47.0rc1", PreRelease: true, RequiresPython: ">=3.9", Pythons: map[string][]string{"linux/amd64": {"3.12"}}},
		{Version: "2.46.0", RequiresPython: ">=3.9", Pythons: map[string][]string{
			"linux/amd64": {"3.11", "3.12"}, "linux/arm64": {"3.12"}}},
		{Version: "2.45.0", RequiresPython: ">=3.9", Pythons: map[string][]string{
			"linux/amd64": {"3.11"}, "linux/arm64": {"3.12"}}},
		{Version: "2.40.0", Yanked: true, RequiresPython: ">=3.9"},
		{Version: "2.39.0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Releases (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/simple/ray/"}, f.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	// An unknown project is PyPI's 404, named in the error.
	_, err = New(WithBaseURL(srv.URL)).Releases(context.Background(), "nope")
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/simple/nope/: HTTP 404") {
		t.Errorf("unknown project: err = %v, want an HTTP 404 naming the URL", err)
	}
}
