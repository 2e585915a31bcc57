package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/imagespec"
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
