package pylock

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	sumA = "3f7f57af3fd185e91940526ce2c0a3d8dc795e702a2ba4f87467397c85d7a96e"
	sumB = "3d1f73958d1bc899c07cec7260c1a1c28f3c6039ad1e828edc9c2466306c7851"
)

// pipMismatch is pip 23.2's output for a wheel whose hash is not the locked one.
const pipMismatch = `ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have tampered with them.
    click==8.1.8 from http://127.0.0.1:18765/files/click-8.1.8-py3-none-any.whl#sha256=` + sumB + ` (from -r /in/requirements.txt (line 3)):
        Expected sha256 ` + sumA + `
        Expected     or 0000000000000000000000000000000000000000000000000000000000000000
             Got        ` + sumB + `

    frozenlist==1.4.1 from http://127.0.0.1:18765/files/frozenlist-1.4.1-cp312-cp312-manylinux2014_aarch64.whl:
        Expected sha256 ` + sumB + `
             Got        ` + sumA + `

`

func TestHashMismatches(t *testing.T) {
	want := []Mismatch{
		{Requirement: "click==8.1.8", URL: "http://127.0.0.1:18765/files/click-8.1.8-py3-none-any.whl", Expected: []string{sumA, strings.Repeat("0", 64)}, Got: sumB},
		{Requirement: "frozenlist==1.4.1", URL: "http://127.0.0.1:18765/files/frozenlist-1.4.1-cp312-cp312-manylinux2014_aarch64.whl", Expected: []string{sumB}, Got: sumA},
	}
	if diff := cmp.Diff(want, HashMismatches("#12 1.234 "+pipMismatch)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := HashMismatches("ERROR: No matching distribution found for x\n"); got != nil {
		t.Errorf("no mismatch report, got %+v", got)
	}
}

func TestHashMismatchErrorIsOneLine(t *testing.T) {
	err := &HashMismatchError{Platform: "linux/arm64", Mismatches: HashMismatches(pipMismatch)}
	want := "python lock: wheel hash mismatch: " +
		"click 8.1.8 on linux/arm64: locked sha256 " + sumA + " or " + strings.Repeat("0", 64) + ", the index served sha256 " + sumB + " (http://127.0.0.1:18765/files/click-8.1.8-py3-none-any.whl); " +
		"frozenlist 1.4.1 on linux/arm64: locked sha256 " + sumB + ", the index served sha256 " + sumA + " (http://127.0.0.1:18765/files/frozenlist-1.4.1-cp312-cp312-manylinux2014_aarch64.whl)"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
