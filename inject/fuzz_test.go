package inject

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzInject: whatever the input, Apply either fails or writes a stream
// that parses, and Remove of its output gives the input back byte for byte
// when the input carried no sidecar of inject's: the input as Apply takes
// it, without the fields the API server fills in (StripServerFields; for
// a manifest as the user writes it, the input itself).
func FuzzInject(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "testdata/kuberay-samples/*.yaml", "testdata/kuberay-samples/v1.5.0/*.yaml", "testdata/ray-cluster-chart/*/values.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, filepath.Base(filepath.Dir(filepath.Dir(file))) == "ray-cluster-chart" || filepath.Base(file) == "helm-values.yaml")
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, helm bool) {
		opts := []Option{WithImage("example.com/code-server-ray:1"), WithImagePullSecret("regcred")}
		if helm {
			opts = append(opts, WithHelmValues())
		}
		plain, err := Remove("f.yaml", in)
		res, aerr := Apply(context.Background(), "f.yaml", in, opts...)
		if aerr != nil {
			return
		}
		if err := parsesAll(res.Output); err != nil {
			t.Fatalf("the output does not parse: %v\ninput:\n%s\noutput:\n%s", err, in, res.Output)
		}
		if err != nil || plain.Changed {
			return // the input carried a sidecar already
		}
		want := in
		if !helm {
			stripped, err := StripServerFields("f.yaml", in)
			if err != nil {
				t.Fatalf("Apply took the input, StripServerFields did not: %v\ninput:\n%s", err, in)
			}
			want = stripped.Output
		}
		removed, err := Remove("f.yaml", res.Output)
		if err != nil {
			t.Fatalf("Remove of Apply's output: %v\ninput:\n%s\noutput:\n%s", err, in, res.Output)
		}
		if !bytes.Equal(removed.Output, want) {
			t.Fatalf("Remove of Apply's output is not the input (without server fields)\ninput:\n%q\noutput:\n%q\nremoved:\n%q\nwant:\n%q", in, res.Output, removed.Output, want)
		}
	})
}

// parsesAll parses every document of a YAML stream with yaml.v3.
func parsesAll(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}
