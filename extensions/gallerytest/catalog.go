package gallerytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/marketplace"
)

// WriteCatalog loads the catalog at src, makes every extension record what
// the fake Marketplace serves (source marketplace, its versions read through
// the real Marketplace client; no sha256 pinned) and writes it to dst: a
// catalog with which imagectl fetches from this fake.
func (f *Fake) WriteCatalog(ctx context.Context, src, dst string) error {
	cat, err := catalog.Load(src)
	if err != nil {
		return err
	}
	mkt := marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()))
	for i, r := range cat.Extensions {
		vs, err := mkt.Versions(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("versions of %s from the fake Marketplace: %w", r.ID, err)
		}
		cat.Extensions[i].Source, cat.Extensions[i].Versions = "marketplace", vs
	}
	b, err := json.MarshalIndent(cat, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
