package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/imagectl/imagectl/attest"
	"github.com/sigstore/cosign/v2/pkg/oci"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

// maxAttestation bounds an attestation envelope Attested downloads (verify
// reads statements of at most 32 MiB).
const maxAttestation = 32 << 20

// Attested reports whether the manifest ref (repo@sha256:...) already
// carries an attestation of predicateType that s's key signed, whose
// in-toto subject is that digest and whose predicate match accepts (nil
// accepts any). The predicate types are read from the attestation image's
// manifest first; only envelopes of predicateType are downloaded.
//
// A keyless signer never finds one: its key is ephemeral, so an earlier
// run's attestation is signed by another key (and a new one records the
// signing in the transparency log). why says what was found or missing, for
// a report.
func Attested(ctx context.Context, ref string, s *Signer, predicateType string, match func(predicate []byte) error, opts ...Option) (ok bool, why string, err error) {
	if s == nil {
		return false, "", errors.New("attested: no signer")
	}
	if s.Keyless() {
		return false, "keyless signing: an earlier attestation is signed by another ephemeral key", nil
	}
	o := makeOptions(ctx, opts)
	d, err := name.NewDigest(ref, o.nameOpts...)
	if err != nil {
		return false, "", fmt.Errorf("attested: %q is not a digest reference: %w", ref, err)
	}
	atts, err := ociremote.SignedUnknown(d, o.ociOpts()...).Attestations()
	if err != nil {
		return false, "", fmt.Errorf("reading the attestations of %s: %w", d, err)
	}
	list, err := atts.Get()
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return false, "no attestation", nil
		}
		return false, "", fmt.Errorf("reading the attestations of %s: %w", d, err)
	}
	if len(list) == 0 {
		return false, "no attestation", nil
	}
	why = "no " + predicateType + " attestation"
	for _, a := range list {
		ann, err := a.Annotations()
		if err != nil || ann["predicateType"] != predicateType {
			continue
		}
		reason, err := attestedBy(a, s, d, predicateType, match)
		if err != nil {
			return false, "", fmt.Errorf("reading the %s attestation of %s: %w", predicateType, d, err)
		}
		if reason == "" {
			return true, "a " + predicateType + " attestation signed by " + s.String() + " is there", nil
		}
		why = "its " + predicateType + " attestation " + reason
	}
	return false, why, nil
}

// attestedBy checks one attestation: "" when it is s's and matches, else
// what is wrong with it.
func attestedBy(a oci.Signature, s *Signer, d name.Digest, predicateType string, match func([]byte) error) (string, error) {
	if mt, err := a.MediaType(); err != nil || string(mt) != types.DssePayloadType {
		return "is not a DSSE envelope", nil
	}
	if size, err := a.Size(); err != nil || size > maxAttestation {
		return fmt.Sprintf("is larger than %d bytes", maxAttestation), nil
	}
	payload, err := a.Payload()
	if err != nil {
		return "", err
	}
	if err := dsse.WrapVerifier(s.sv).VerifySignature(bytes.NewReader(payload), nil); err != nil {
		return "is not signed by " + s.String(), nil
	}
	env, err := attest.ParseEnvelope(payload)
	if err != nil {
		return "is " + err.Error(), nil
	}
	raw, err := env.DecodeB64Payload()
	if err != nil {
		return "has a payload that is not base64", nil
	}
	st, err := attest.ParseStatement(raw)
	if err != nil {
		return "is " + err.Error(), nil
	}
	if st.PredicateType != predicateType {
		return "says predicate type " + st.PredicateType, nil
	}
	if !st.Names(d.DigestStr()) {
		return "is about another subject", nil
	}
	if match != nil {
		if err := match(st.Predicate); err != nil {
			return err.Error(), nil
		}
	}
	return "", nil
}

// SamePredicate returns a match for Attested that accepts a predicate with
// the content of doc (JSON): the statement holds the predicate re-encoded
// (object keys sorted), so the two are compared as JSON values.
func SamePredicate(doc []byte) func([]byte) error {
	want, werr := canonicalJSON(doc)
	return func(p []byte) error {
		if werr != nil {
			return fmt.Errorf("cannot be compared: %w", werr)
		}
		got, err := canonicalJSON(p)
		if err != nil || !bytes.Equal(got, want) {
			return errors.New("has another document")
		}
		return nil
	}
}

// canonicalJSON re-encodes a JSON value as cosign's statement generator
// does: decoded into Go values and encoded with sorted object keys.
func canonicalJSON(b []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
