package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/sbom/document"
)

// runSBOMPackages prints, for every platform manifest of an image index,
// the packages of the SBOM attestation attached to it (cosign's .att tag):
// {"linux/amd64": [{"name", "version", "purl", "sha256", "license",
// "licenseComment"}], ...}; with -documents, the sha256 of each platform's
// SBOM document instead ({"linux/amd64": "sha256:..."}). It does not
// verify signatures (imagectl verify does); it shows what the SBOM says.
func runSBOMPackages(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sbom-packages", flag.ExitOnError)
	documents := fs.Bool("documents", false, "print each platform's SBOM document digest instead of its packages")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("usage: sbom-packages REF")
	}
	ref, err := name.ParseReference(fs.Arg(0))
	if err != nil {
		return err
	}
	ro := regauth.RemoteOptions(ctx)
	idx, err := remote.Index(ref, ro...)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	out := map[string][]map[string]any{}
	digests := map[string]string{}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		p := d.Platform.String()
		se, err := ociremote.SignedImage(ref.Context().Digest(d.Digest.String()), ociremote.WithRemoteOptions(ro...))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		atts, err := se.Attestations()
		if err != nil {
			return fmt.Errorf("%s attestations: %w", p, err)
		}
		sigs, err := atts.Get()
		if err != nil {
			return fmt.Errorf("%s attestations: %w", p, err)
		}
		found := false
		for _, s := range sigs {
			pred, ok, err := sbomPredicate(s)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			sum := sha256.Sum256(pred)
			digests[p] = "sha256:" + hex.EncodeToString(sum[:])
			pkgs, err := document.Packages(pred)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			list := []map[string]any{}
			for _, pk := range pkgs {
				list = append(list, map[string]any{"name": pk.Name, "version": pk.Version, "purl": pk.PURL, "sha256": pk.SHA256,
					"license": pk.License, "licenseComment": pk.LicenseComment})
			}
			out[p] = list
			found = true
		}
		if !found {
			return fmt.Errorf("%s (%s) has no SBOM attestation", p, d.Digest)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if *documents {
		return enc.Encode(digests)
	}
	return enc.Encode(out)
}

// sbomPredicate is the predicate of an attestation's in-toto statement;
// false when it is not an SPDX or CycloneDX SBOM.
func sbomPredicate(s oci.Signature) (json.RawMessage, bool, error) {
	payload, err := s.Payload()
	if err != nil {
		return nil, false, err
	}
	stmt, err := attest.EnvelopeStatement(payload)
	if err != nil {
		return nil, false, err
	}
	if !imagespec.IsSBOM(stmt.PredicateType) {
		return nil, false, nil
	}
	return stmt.Predicate, true, nil
}
