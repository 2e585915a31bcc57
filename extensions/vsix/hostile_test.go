package vsix_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/vsix"
)

// withRaw appends an entry written raw: the header says what h says,
// whatever data is.
func withRaw(t *testing.T, src []byte, h *zip.FileHeader, data []byte) []byte {
	t.Helper()
	b, err := gallerytest.AddRawEntry(src, h, data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Validation reads every entry in full, not only the manifest and
// package.json: an entry whose data is not what its header says fails the
// VSIX at fetch time, before it is cached.
func TestValidateReadsEveryEntry(t *testing.T) {
	uni := readFixture(t, universalFixture)
	js := []byte("module.exports = function activate() { /* replaced */ };\n")
	stored := func(crc uint32, declared uint64, data []byte) *zip.FileHeader {
		return &zip.FileHeader{Name: "extension/out/bundle.js", Method: zip.Store, CRC32: crc, CompressedSize64: uint64(len(data)), UncompressedSize64: declared}
	}
	want := vsix.Expect{ID: fixtureID, Version: fixtureVersion, VSCode: "1.100.3"}
	for _, tc := range []struct {
		name string
		vsix []byte
	}{
		{"CRC-32 does not match", withRaw(t, uni, stored(crc32.ChecksumIEEE(js)^1, uint64(len(js)), js), js)},
		{"data longer than declared", withRaw(t, uni, stored(crc32.ChecksumIEEE(js), 10, js), js)},
		{"data shorter than declared", withRaw(t, uni, stored(crc32.ChecksumIEEE(js), uint64(len(js))+100, js), js)},
		{"deflate stream corrupt", withRaw(t, uni, &zip.FileHeader{Name: "extension/out/bundle.js", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(js), CompressedSize64: uint64(len(js)), UncompressedSize64: uint64(len(js))}, js)},
		{"liar as the last entry", liarVSIX(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := validate(tc.vsix, want, vsix.Limits{})
			if err == nil {
				t.Fatalf("accepted: %+v", *info)
			}
			if !strings.Contains(err.Error(), `entry "extension/`) || !strings.Contains(err.Error(), "does not match what it declares") {
				t.Errorf("err = %v, want it to name the entry whose data does not match its header", err)
			}
		})
	}
	// The same archive with an honest header passes: the check is on the
	// data, not on the presence of the entry.
	if _, err := validate(withRaw(t, uni, stored(crc32.ChecksumIEEE(js), uint64(len(js)), js), js), want, vsix.Limits{}); err != nil {
		t.Fatalf("honest entry rejected: %v", err)
	}
}

// manyNearMiB returns the universal fixture plus n deflated entries of
// zeros, each one byte under the 1 MiB ratio floor.
func manyNearMiB(t *testing.T, n int) []byte {
	t.Helper()
	zeros := make([]byte, 1<<20-1)
	var add []entry
	for i := range n {
		add = append(add, entry{name: "extension/chunk" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".bin", body: zeros})
	}
	return rewrite(t, readFixture(t, universalFixture), nil, nil, add...)
}

// The whole archive's expansion is bounded, not only that of entries from
// 1 MiB on: 64 entries just under 1 MiB (64 MiB from about 70 KB) fail by
// the total ratio, and the absolute cap holds for stored (ratio 1) data.
func TestValidateBoundsTotalExpansion(t *testing.T) {
	want := vsix.Expect{ID: fixtureID, Version: fixtureVersion}
	bomb := manyNearMiB(t, 64)
	if _, err := validate(bomb, want, vsix.Limits{}); err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("%d-byte archive of 64 MiB: err = %v, want the total ratio refused", len(bomb), err)
	}
	if err := extract(bomb, filepath.Join(t.TempDir(), "x"), vsix.Limits{}); err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("Extract: err = %v, want the total ratio refused", err)
	}
	// Both bounds are configurable: a higher ratio lets it through, ...
	if _, err := validate(bomb, want, vsix.Limits{MaxTotalRatio: 2000}); err != nil {
		t.Fatalf("with MaxTotalRatio 2000: %v", err)
	}
	// ... a lower absolute cap stops it whatever the ratio.
	if _, err := validate(bomb, want, vsix.Limits{MaxTotalRatio: 2000, MaxTotalBytes: 32 << 20}); err == nil || !strings.Contains(err.Error(), "uncompressed size exceeds the limit of 33554432 bytes") {
		t.Fatalf("with MaxTotalBytes 32 MiB: err = %v", err)
	}
	// The default absolute cap is sized to real extensions (tens of MB),
	// not gigabytes.
	if d := vsix.DefaultLimits.MaxTotalBytes; d > 1<<30 {
		t.Errorf("DefaultLimits.MaxTotalBytes = %d, want at most 1 GiB", d)
	}
}

// bigVSIX returns the universal fixture plus n MiB of random (stored,
// incompressible) data in n entries.
func bigVSIX(t *testing.T, n int) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var add []entry
	for i := range n {
		b := make([]byte, 1<<20)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		add = append(add, entry{name: "extension/dist/blob" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".bin", body: b, store: true})
	}
	return rewrite(t, readFixture(t, universalFixture), nil, nil, add...)
}

// cancelAfter is an io.ReaderAt that cancels ctx once more than n bytes
// were read through it, and counts what is read afterwards.
type cancelAfter struct {
	r      io.ReaderAt
	n      int64
	read   atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	if c.read.Add(int64(n)) > c.n {
		c.cancel()
	}
	return n, err
}

// A cancelled context stops extraction and validation within a buffer or
// two of the cancellation (here: by bytes read, not by wall time), and
// Extract leaves nothing behind.
func TestLongLoopsHonourTheContext(t *testing.T) {
	big := bigVSIX(t, 32) // 32 MiB
	const stopAt = 4 << 20
	const slack = 256 << 10 // one zip read-ahead buffer plus a copy buffer
	for _, op := range []string{"Extract", "Validate"} {
		t.Run(op, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &cancelAfter{r: bytes.NewReader(big), n: stopAt, cancel: cancel}
			dest := filepath.Join(t.TempDir(), "out", "ext")
			var err error
			switch op {
			case "Extract":
				err = vsix.Extract(ctx, r, int64(len(big)), dest, vsix.Limits{}, fixedTime)
			case "Validate":
				_, err = vsix.Validate(ctx, r, int64(len(big)), vsix.Expect{ID: fixtureID, Version: fixtureVersion}, vsix.Limits{})
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if got := r.read.Load(); got > stopAt+slack {
				t.Errorf("read %d bytes of %d after a cancellation at %d: the loop did not stop promptly", got, len(big), stopAt)
			}
			if _, err := os.Lstat(dest); !os.IsNotExist(err) {
				t.Errorf("%s left behind: %v", dest, err)
			}
			if _, err := os.Lstat(filepath.Dir(dest)); !os.IsNotExist(err) {
				t.Errorf("parent %s it created left behind: %v", filepath.Dir(dest), err)
			}
		})
	}
	// Uncancelled, the same archive validates and extracts.
	if _, err := validate(big, vsix.Expect{ID: fixtureID, Version: fixtureVersion}, vsix.Limits{}); err != nil {
		t.Fatal(err)
	}
}
