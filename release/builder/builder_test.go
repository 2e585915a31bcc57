package builder

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/sign"
)

func TestReleaseBuilderSignsOnlyWhatItBuilt(t *testing.T) {
	repo, err := name.NewRepository("localhost:5000/x")
	if err != nil {
		t.Fatal(err)
	}
	ref := repo.Digest("sha256:" + strings.Repeat("a", 64))
	newBuilder := func(s *sign.Signer) *Builder {
		rb, err := New(nil, pipeline.Request{Matrix: &matrix.Config{}}, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	if err := newBuilder(nil).Sign(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "no signer") {
		t.Errorf("Sign without a signer: %v", err)
	}
	err = newBuilder(&sign.Signer{}).Sign(context.Background(), ref)
	if err == nil || !strings.Contains(err.Error(), "was not built by this run") {
		t.Errorf("Sign of an image the publisher did not build: %v", err)
	}
}

// Close releases the sign stages of the images built and not signed: none
// is left to sign afterwards.
func TestReleaseBuilderCloseReleasesWhatWasNotSigned(t *testing.T) {
	rb, err := New(nil, pipeline.Request{Matrix: &matrix.Config{}}, nil, &sign.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	d := "sha256:" + strings.Repeat("b", 64)
	rb.built[d] = &pipeline.Signing{}
	rb.Close()
	rb.Close()
	if len(rb.built) != 0 {
		t.Errorf("after Close: %d sign stages held, want none", len(rb.built))
	}
	repo, err := name.NewRepository("localhost:5000/x")
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Sign(context.Background(), repo.Digest(d)); err == nil || !strings.Contains(err.Error(), "was not built by this run") {
		t.Errorf("Sign after Close: %v, want it refused", err)
	}
}
