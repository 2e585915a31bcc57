package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

// The pipeline builds no gallery client of its own: a request without
// Extensions.Sources fails the fetch stage, naming the field.
func TestFetchStageNeedsSources(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetchStage(context.Background(), &Request{Extensions: ExtensionOptions{Cache: c}}, &imagespec.Set{})
	if err == nil || !strings.Contains(err.Error(), "Request.Extensions.Sources") {
		t.Fatalf("fetchStage without sources: %v, want an error naming Request.Extensions.Sources", err)
	}
}

// removingSource downloads through src; before downloading the file
// before, it removes the cache blob of the file already fetched (sha256
// gone), so a fetch stage that read the cache again after Fetch would not
// find it.
type removingSource struct {
	src    extensions.Source
	c      *cache.Cache
	before string
	gone   string
}

func (s *removingSource) Download(ctx context.Context, id, version, tp string, w io.Writer) (vsix.Origin, error) {
	if id == s.before {
		if err := os.Remove(s.c.BlobPath(s.gone)); err != nil {
			return vsix.Origin{}, fmt.Errorf("test source: removing the blob of the first file: %w", err)
		}
	}
	return s.src.Download(ctx, id, version, tp, w)
}

// The fetch stage hands on what Fetch validated as each file arrived: it
// does not read a fresh download back from the cache to validate it again.
// Fetched one at a time, the first file's blob is removed while the last
// one downloads; the stage still returns the first file, as validated.
func TestFetchStageUsesWhatFetchValidated(t *testing.T) {
	req, g := happyInputs(t)
	c := req.Extensions.Cache
	first := req.Set.Extensions[0] // ms-python.debugpy, one file per platform
	firstSHA := first.Files["linux/amd64"].SHA256
	src := &removingSource{src: req.Extensions.Sources[matrix.SourceMarketplace], c: c, before: req.Set.Extensions[1].ID, gone: firstSHA}
	req.Extensions.Sources = map[string]extensions.Source{matrix.SourceMarketplace: src}
	req.Extensions.Options = append(req.Extensions.Options, extensions.WithParallelism(1))

	files, err := fetchStage(context.Background(), &req, req.Set)
	if err != nil {
		t.Fatalf("fetchStage: %v", err)
	}
	if g.Stats().Downloads != 3 || len(files) != 3 {
		t.Fatalf("%d downloads, %d files; want 3 of each", g.Stats().Downloads, len(files))
	}
	k := cache.Key{ID: first.ID, Version: first.Version, TargetPlatform: first.Files["linux/amd64"].TargetPlatform}
	vf, ok := files[k]
	if !ok {
		t.Fatalf("no file %s among %v", k, files)
	}
	if vf.Entry.SHA256 != firstSHA || vf.Info.ID() != first.ID || vf.Info.Version != first.Version || vf.Info.TargetPlatform != k.TargetPlatform {
		t.Errorf("%s: %+v, want the file as Fetch validated it (sha256 %s)", k, vf, firstSHA)
	}
	if _, err := os.Stat(vf.Entry.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the test source did not remove %s (%v): the test proves nothing", vf.Entry.Path, err)
	}
}
