package sign_test

import (
	"context"
	"testing"

	"github.com/imagectl/imagectl/sign"
)

func TestAttestSBOMFileRejectsNonSBOM(t *testing.T) {
	s, _, _ := newKey(t)
	if _, err := sign.AttestSBOMFile(context.Background(), "127.0.0.1:1/x:y", s, []byte(`{"hello":"world"}`)); err == nil {
		t.Error("AttestSBOMFile accepted a document that is neither SPDX nor CycloneDX")
	}
}
