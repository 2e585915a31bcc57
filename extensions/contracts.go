package extensions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/contract"
	"github.com/imagectl/imagectl/extensions/vsix"
)

// CheckContracts checks every fetched file of an extension whose behaviour
// the image depends on (contract.ExtensionID, the Ray Distributed Debugger)
// against what the image assumes (package contract), reading the file from
// the cache (Fetched.Path) under the archive limits lim. It is the check of
// a version entering the catalog: run it on what Fetch returned before
// RecordPins, so that a version whose code differs is never pinned. It
// returns nil when every such file holds; otherwise an error joining one
// *contract.Error per file that differs (errors.As finds the first), each
// naming the version, the file and every difference.
func CheckContracts(ctx context.Context, fetched []Fetched, lim vsix.Limits) error {
	var errs []error
	for _, f := range fetched {
		if !strings.EqualFold(f.ID, contract.ExtensionID) {
			continue
		}
		where := fmt.Sprintf("%s file, sha256 %s", f.TargetPlatform, f.SHA256)
		if err := checkContract(ctx, f, lim); err != nil {
			var ce *contract.Error
			if errors.As(err, &ce) {
				ce.Where = where
				errs = append(errs, ce)
				continue
			}
			errs = append(errs, fmt.Errorf("extension %s@%s (%s): checking what the image assumes of its code: %w", f.ID, f.Version, where, err))
		}
	}
	return errors.Join(errs...)
}

func checkContract(ctx context.Context, f Fetched, lim vsix.Limits) error {
	if f.Path == "" {
		return errors.New("no cached file")
	}
	r, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		return err
	}
	return contract.CheckVSIX(ctx, r, fi.Size(), lim)
}

// UncheckedVersions returns the versions of the extensions with a contract
// (contract.ExtensionID) that fresh lists and old does not, as "id@version",
// in fresh's order: versions a refresh brought in whose code no pin has
// checked yet (CheckContracts runs when they are pinned). old may be nil.
func UncheckedVersions(old, fresh *catalog.Catalog) []string {
	var out []string
	if fresh == nil {
		return nil
	}
	for _, r := range fresh.Extensions {
		if !strings.EqualFold(r.ID, contract.ExtensionID) {
			continue
		}
		for _, v := range r.Versions {
			known := false
			if old != nil {
				for tp := range v.Files {
					if _, ok := catalogFile(old, r.ID, v.Version, tp); ok {
						known = true
					}
				}
			}
			if !known {
				out = append(out, r.ID+"@"+v.Version)
			}
		}
	}
	return out
}
