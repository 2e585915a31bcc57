package sign_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sign"
)

// Attested finds an attestation of the predicate type signed by the key, on
// that digest, whose predicate matches; nothing else.
func TestAttested(t *testing.T) {
	ctx := context.Background()
	reg := testutil.Registry(t)
	root, err := imagetest.Default().Push(ctx, reg+"/code-server-ray:test")
	if err != nil {
		t.Fatal(err)
	}
	im, err := imagetest.PushedIndex(root)
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS != "unknown" {
			plats = append(plats, root.Context().Digest(d.Digest.String()).String())
		}
	}
	if len(plats) < 2 {
		t.Fatalf("test image has %d platform manifests, want 2", len(plats))
	}
	s, _, _ := newKey(t)
	other, _, _ := newKey(t)
	doc := []byte(`{"spdxVersion":"SPDX-2.3","name":"x","packages":[]}`)
	if _, err := sign.Attest(ctx, plats[0], s, imagespec.PredicateSPDX, func(string) ([]byte, error) { return doc, nil }, sign.WithAllManifests(false)); err != nil {
		t.Fatal(err)
	}
	reject := func([]byte) error { return errors.New("was made by another scanner") }
	for _, c := range []struct {
		name, ref     string
		signer        *sign.Signer
		predicateType string
		match         func([]byte) error
		want          bool
	}{
		{"signed by the key", plats[0], s, imagespec.PredicateSPDX, nil, true},
		{"same document", plats[0], s, imagespec.PredicateSPDX, sign.SamePredicate(doc), true},
		{"another document", plats[0], s, imagespec.PredicateSPDX, sign.SamePredicate([]byte(`{"spdxVersion":"SPDX-2.3","name":"y","packages":[]}`)), false},
		{"predicate rejected", plats[0], s, imagespec.PredicateSPDX, reject, false},
		{"another key", plats[0], other, imagespec.PredicateSPDX, nil, false},
		{"another predicate type", plats[0], s, imagespec.PredicateCycloneDX, nil, false},
		{"another manifest (no attestation)", plats[1], s, imagespec.PredicateSPDX, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, why, err := sign.Attested(ctx, c.ref, c.signer, c.predicateType, c.match)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.want || why == "" {
				t.Errorf("Attested = %v (%q), want %v and a reason", ok, why, c.want)
			}
		})
	}
	// The attestation of one digest does not count for another: copy it to
	// the second manifest's .att tag and look there.
	src := root.Context().Tag(digestTag(plats[0]) + ".att")
	desc, err := remote.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(root.Context().Tag(digestTag(plats[1])+".att"), img); err != nil {
		t.Fatal(err)
	}
	if ok, why, err := sign.Attested(ctx, plats[1], s, imagespec.PredicateSPDX, nil); err != nil || ok {
		t.Errorf("an attestation about %s counted for %s: %v %q %v", plats[0], plats[1], ok, why, err)
	}
	if _, _, err := sign.Attested(ctx, reg+"/code-server-ray:test", s, imagespec.PredicateSPDX, nil); err == nil {
		t.Error("Attested accepted a tag, not a digest")
	}
}

func digestTag(ref string) string {
	_, d, _ := strings.Cut(ref, "@sha256:")
	return "sha256-" + d
}
