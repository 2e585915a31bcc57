package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/upstream/pip"
	"github.com/imagectl/imagectl/upstream/pypi"
)

// The e2e's fixture index (mkwheels.py), served by fakeupstream serve, is
// read by matrix refresh's PyPI client through the Simple API's JSON form;
// a request without that Accept gets the HTML page pip has always read.
func TestServeSimpleIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	if out, err := exec.Command("python3", "../mkwheels.py", dir).CombinedOutput(); err != nil {
		msg := "python3 ../mkwheels.py (the fixture index): " + err.Error() + ": " + string(out)
		if _, lerr := exec.LookPath("python3"); lerr != nil {
			testutil.SkipOrFail(t, "%s", msg)
		}
		t.Fatal(msg)
	}
	srv := httptest.NewServer(simpleIndex(dir))
	defer srv.Close()
	got, err := pypi.New(pypi.WithBaseURL(srv.URL)).Releases(context.Background(), "ray")
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.PythonPackage{{Version: "2.46.0", Pythons: map[string][]string{
		"linux/amd64": {"3.11", "3.12"}, "linux/arm64": {"3.11", "3.12"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ray from the fixture index (-want +got):\n%s", diff)
	}
	// pip (the lock, and the build's wheels stage) reads the same JSON
	// form: its file URLs are relative to the page.
	l := pip.New(pip.WithTimeout(20*time.Second), pip.WithRetries(0))
	if _, err := l.Check(context.Background()); err != nil {
		if testutil.ToolsRequired() {
			t.Fatal(err)
		}
		t.Logf("not locking with pip: %v", err)
	} else {
		ds, err := l.Lock(context.Background(), pylock.Request{Requirements: []string{"aiohttp==3.9.5"}, Python: "3.12", Platform: "linux/amd64", Index: srv.URL + "/simple"})
		if err != nil {
			t.Fatalf("pip against the fixture index: %v", err)
		}
		var files []string
		for _, d := range ds {
			files = append(files, d.URL)
		}
		if diff := cmp.Diff([]string{srv.URL + "/files/aiohttp-3.9.5-py3-none-any.whl", srv.URL + "/files/aiosignal-1.3.1-py3-none-any.whl", srv.URL + "/files/frozenlist-1.4.1-cp312-cp312-manylinux2014_x86_64.whl"}, files); diff != "" {
			t.Errorf("pip's closure of aiohttp (-want +got):\n%s", diff)
		}
	}
	resp, err := http.Get(srv.URL + "/simple/ray/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("without Accept: Content-Type %q, want the HTML page", ct)
	}
}
