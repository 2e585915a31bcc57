package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct {
		name     string
		args     []string
		stdin    string
		code     int
		out, err string
	}{
		{"no verb", nil, "", 2, "", "usage: imagectl-sbom scan"},
		{"two verbs", []string{"scan", "version"}, "", 2, "", "usage:"},
		{"unknown verb", []string{"catalogue"}, "", 2, "", `unknown command "catalogue"`},
		{"version", []string{"version"}, "", 0, "v1.", ""},
		{"help", []string{"--help"}, "", 0, "usage:", ""},
		{"empty request: nothing to scan", []string{"scan"}, "", 0, "", ""},
		{"not JSON", []string{"scan"}, "{", 1, "", "imagectl-sbom: the request: unexpected EOF"},
		{"unknown field", []string{"scan"}, `{"image":"127.0.0.1:1/x` + digest + `","imagee":"x"}`, 1, "", `unknown field "imagee"`},
		{"no image", []string{"scan"}, `{"platform":"linux/amd64"}`, 1, "", `the request's "image" is empty`},
		{"by tag", []string{"scan"}, `{"image":"127.0.0.1:1/x:latest"}`, 1, "", `want REGISTRY/REPO@sha256:...`},
		{"a remote registry", []string{"scan"}, `{"image":"registry.example/x` + digest + `"}`, 1, "", "is not on a loopback address"},
		{"a private address", []string{"scan"}, `{"image":"10.0.0.1:5000/x` + digest + `"}`, 1, "", "is not on a loopback address"},
		{"nothing listens", []string{"scan"}, `{"image":"127.0.0.1:1/x` + digest + `"}`, 1, "", "reading 127.0.0.1:1/x@sha256:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, strings.NewReader(c.stdin), &out, &errb)
			if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", c.args, code, out.String(), errb.String(), c.code, c.out, c.err)
			}
			if c.out == "" && out.Len() > 0 {
				t.Errorf("run(%q) wrote %q on stdout, want nothing", c.args, out.String())
			}
		})
	}
}

func TestLoopbackDigest(t *testing.T) {
	d := "@sha256:" + strings.Repeat("b", 64)
	for _, ok := range []string{"127.0.0.1:5000/scan/x" + d, "localhost:80/x" + d, "[::1]:5000/x" + d, "127.1.2.3:9/x" + d} {
		if _, err := loopbackDigest(ok); err != nil {
			t.Errorf("loopbackDigest(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{"x" + d, "docker.io/x" + d, "192.168.1.2:5000/x" + d, "localhost.example.com/x" + d, "127.0.0.1:5000/x:t"} {
		if _, err := loopbackDigest(bad); err == nil {
			t.Errorf("loopbackDigest(%s) accepted", bad)
		}
	}
}
