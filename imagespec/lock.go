package imagespec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// EncodeLock is the set as compact JSON, the value of LabelLock. The same set
// always gives the same bytes (encoding/json sorts map keys), which
// InputsDigest and the image digests depend on: never change the encoding
// (field names, order, omitempty) without bumping the inputs encoding.
func EncodeLock(set Set) []byte {
	b, err := json.Marshal(set)
	if err != nil {
		// Set holds only strings, slices and maps of strings.
		panic(fmt.Sprintf("imagespec: encoding Set: %v", err))
	}
	return b
}

// DecodeLock reads the value of LabelLock strictly: exactly one JSON object
// of the Set's fields, nothing unknown, nothing after it. Callers decide what
// an error means (verify reports it, sign fails, plan treats the image as
// having no readable lock).
func DecodeLock(raw string) (Set, error) {
	switch strings.TrimSpace(raw) {
	case "":
		return Set{}, errors.New("empty, want a JSON object")
	case "null":
		return Set{}, errors.New("null, want a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var set Set
	if err := dec.Decode(&set); err != nil {
		return Set{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Set{}, fmt.Errorf("data after the JSON object at byte %d", dec.InputOffset())
	}
	return set, nil
}
