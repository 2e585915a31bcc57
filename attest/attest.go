package attest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/in-toto/in-toto-golang/in_toto"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Statement is an in-toto statement (v0.1 or v1): in-toto-golang's header
// and the predicate's bytes as read (the v1 protobuf Statement would
// re-encode the predicate).
type Statement struct {
	in_toto.StatementHeader
	Predicate json.RawMessage `json:"predicate"`
}

// The in-toto Statement types: a statement's _type is one of them. They
// are the two in-toto/attestation's Statement.Validate accepts (go/v1
// statement.go); cosign writes v0.1 (in-toto-golang's StatementInTotoV01).
const (
	StatementTypeV01 = "https://in-toto.io/Statement/v0.1"
	StatementTypeV1  = "https://in-toto.io/Statement/v1"
)

// DecodeStatement decodes JSON shaped like an in-toto statement without
// checking its _type (CheckType); ParseStatement does both.
func DecodeStatement(b []byte) (*Statement, error) {
	var st Statement
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %w", err)
	}
	return &st, nil
}

// CheckType returns an error naming the statement's _type unless it is an
// in-toto Statement type (StatementTypeV01 or StatementTypeV1).
func (s *Statement) CheckType() error {
	if s.Type == StatementTypeV01 || s.Type == StatementTypeV1 {
		return nil
	}
	return fmt.Errorf("in-toto statement _type %q is not an in-toto Statement type (want %s or %s)", s.Type, StatementTypeV01, StatementTypeV1)
}

// ParseStatement decodes an in-toto statement and checks its _type.
func ParseStatement(b []byte) (*Statement, error) {
	st, err := DecodeStatement(b)
	if err != nil {
		return nil, err
	}
	if err := st.CheckType(); err != nil {
		return nil, err
	}
	return st, nil
}

// Names reports whether one of the statement's subjects is the sha256
// digest d ("sha256:<hex>").
func (s *Statement) Names(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok {
		return false
	}
	for _, sub := range s.Subject {
		if sub.Digest["sha256"] == hex {
			return true
		}
	}
	return false
}

// ParseEnvelope decodes a DSSE envelope (the payload of a cosign
// attestation); it does not check the signatures.
func ParseEnvelope(b []byte) (*dsse.Envelope, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("not a DSSE envelope: %w", err)
	}
	return &env, nil
}

// EnvelopeStatement decodes a DSSE envelope and the in-toto statement that
// is its payload (ParseStatement: its _type is checked); it does not check
// the signatures.
func EnvelopeStatement(b []byte) (*Statement, error) {
	env, err := ParseEnvelope(b)
	if err != nil {
		return nil, err
	}
	raw, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("DSSE payload is not base64: %w", err)
	}
	return ParseStatement(raw)
}
