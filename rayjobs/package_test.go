package rayjobs

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// goldenCase is a line of testdata/cases.json.
type goldenCase struct {
	Name             string   `json:"name"`
	Dir              string   `json:"dir"`
	Excludes         []string `json:"excludes"`
	IgnoreGitignore  bool     `json:"ignore_gitignore"`
	IncludeParentDir bool     `json:"include_parent_dir"`
}

// goldenEntry is a zip entry as gen_golden.py writes it from Python's
// zipfile.ZipInfo.
type goldenEntry struct {
	Name           string `json:"name"`
	FlagBits       int    `json:"flag_bits"`
	CompressType   int    `json:"compress_type"`
	DateTime       []int  `json:"date_time"`
	CRC            uint32 `json:"crc"`
	CompressSize   int64  `json:"compress_size"`
	FileSize       int64  `json:"file_size"`
	CreateSystem   int    `json:"create_system"`
	CreateVersion  int    `json:"create_version"`
	ExtractVersion int    `json:"extract_version"`
	ExternalAttr   uint32 `json:"external_attr"`
	InternalAttr   int    `json:"internal_attr"`
	Extra          string `json:"extra"`
	Comment        string `json:"comment"`
	Content        string `json:"content"`
}

type golden struct {
	Case     string        `json:"case"`
	URI      string        `json:"uri"`
	Entries  []goldenEntry `json:"entries"`
	RayOrder []string      `json:"ray_order"`
	Zip      []byte        `json:"zip"`
}

func readCases(t *testing.T) []goldenCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []goldenCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	return cs
}

// prepareDirs copies testdata/dirs to a temporary directory and applies
// testdata/setup.txt, as gen_golden.py's prepare does.
func prepareDirs(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "dirs")
	err := filepath.WalkDir(filepath.Join("testdata", "dirs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("testdata", "dirs"), p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Modes regardless of the umask: directories 0755, files 0644.
	filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	setup, err := os.ReadFile(filepath.Join("testdata", "setup.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var mtime int64 = -1
	for _, line := range strings.Split(string(setup), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		var err error
		switch {
		case f[0] == "mkdir" && len(f) == 2:
			err = os.Mkdir(filepath.Join(dst, f[1]), 0o755)
		case f[0] == "symlink" && len(f) == 3:
			err = os.Symlink(f[2], filepath.Join(dst, f[1]))
		case f[0] == "chmod" && len(f) == 3:
			var m uint64
			m, err = strconv.ParseUint(f[2], 8, 32)
			if err == nil {
				err = os.Chmod(filepath.Join(dst, f[1]), os.FileMode(m))
			}
		case f[0] == "mtime" && len(f) == 2:
			mtime, err = strconv.ParseInt(f[1], 10, 64)
		default:
			err = errors.New("unknown line")
		}
		if err != nil {
			t.Fatalf("testdata/setup.txt %q: %v", line, err)
		}
	}
	if mtime >= 0 {
		tm := time.Unix(mtime, 0)
		var paths []string
		filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		for _, p := range paths {
			if err := lutimes(p, tm); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

// TestPackageMatchesRay compares Package with what Ray's own packaging.py
// computed for the same directories (testdata/golden, written by
// testdata/gen-golden.sh; SOURCE.md names the Ray commit): the URI, and
// every zip entry's header fields and content. The entries are compared
// sorted by name: Ray writes them in the file system's directory order.
func TestPackageMatchesRay(t *testing.T) {
	dirs := prepareDirs(t)
	for _, c := range readCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "golden", c.Name+".json"))
			if err != nil {
				t.Fatalf("no golden for case %s (run testdata/gen-golden.sh): %v", c.Name, err)
			}
			var want golden
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			opts := []PackageOption{WithLocation(time.UTC), WithIgnoreGitignore(c.IgnoreGitignore)}
			if c.IncludeParentDir {
				opts = append(opts, WithParentDir())
			}
			pkg, err := Package(context.Background(), filepath.Join(dirs, c.Dir), c.Excludes, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if pkg.URI != want.URI {
				t.Errorf("URI %s, Ray's %s", pkg.URI, want.URI)
			}
			if diff := cmp.Diff(want.Entries, zipEntries(t, pkg.Zip)); diff != "" {
				t.Errorf("zip entries (-Ray +Package):\n%s", diff)
			}
			if len(pkg.Entries) != len(want.Entries) {
				t.Errorf("Package.Entries has %d entries, the zip %d", len(pkg.Entries), len(want.Entries))
			}

			// In the order Ray's os.scandir gave, the same bytes.
			root := filepath.Join(dirs, c.Dir)
			inOrder, err := Package(context.Background(), root, c.Excludes, append(opts, rayOrder(root, c.IncludeParentDir, want.RayOrder))...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(inOrder.Zip, want.Zip) {
				t.Errorf("in Ray's order %v the zip differs from Ray's:\n%s\nRay's:\n%s", want.RayOrder, hex.Dump(inOrder.Zip), hex.Dump(want.Zip))
			}
		})
	}
}

// rayOrder sorts each directory's names by where Ray's zip first lists
// something at or below them (names it never lists go last, by name).
func rayOrder(root string, parent bool, order []string) PackageOption {
	rank := map[string]int{}
	for i, name := range order {
		name = strings.TrimSuffix(name, "/")
		if parent {
			_, name, _ = strings.Cut(name, "/")
		}
		for p := name; p != "" && p != "."; p = path.Dir(p) {
			if _, ok := rank[p]; !ok {
				rank[p] = i
			}
		}
	}
	return func(o *packageOptions) {
		o.order = func(dir string, names []string) {
			rel, _ := filepath.Rel(root, dir)
			key := func(n string) int {
				if r, ok := rank[path.Join(filepath.ToSlash(rel), n)]; ok {
					return r
				}
				return len(order)
			}
			sort.SliceStable(names, func(i, j int) bool { return key(names[i]) < key(names[j]) })
		}
	}
}

// zipEntries reads z's central directory itself (archive/zip hides the
// internal attributes) and each entry's content, in goldenEntry's form,
// sorted by name.
func zipEntries(t *testing.T, z []byte) []goldenEntry {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("reading the zip: %v", err)
	}
	content := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		content[f.Name] = base64.StdEncoding.EncodeToString(b)
	}
	eocd := bytes.LastIndex(z, []byte("PK\x05\x06"))
	if eocd < 0 {
		t.Fatal("no end of central directory")
	}
	n := int(binary.LittleEndian.Uint16(z[eocd+10:]))
	off := int(binary.LittleEndian.Uint32(z[eocd+16:]))
	out := []goldenEntry{}
	for i := 0; i < n; i++ {
		h := z[off:]
		if string(h[:4]) != "PK\x01\x02" {
			t.Fatalf("central directory entry %d: bad signature", i)
		}
		u16 := func(o int) int { return int(binary.LittleEndian.Uint16(h[o:])) }
		u32 := func(o int) uint32 { return binary.LittleEndian.Uint32(h[o:]) }
		nameLen, extraLen, commentLen := u16(28), u16(30), u16(32)
		name := string(h[46 : 46+nameLen])
		dt, dd := u16(12), u16(14)
		out = append(out, goldenEntry{
			Name: name, FlagBits: u16(8), CompressType: u16(10),
			DateTime:      []int{dd>>9 + 1980, dd >> 5 & 0xf, dd & 0x1f, dt >> 11, dt >> 5 & 0x3f, dt & 0x1f * 2},
			CRC:           u32(16),
			CompressSize:  int64(u32(20)),
			FileSize:      int64(u32(24)),
			CreateSystem:  u16(4) >> 8,
			CreateVersion: u16(4) & 0xff, ExtractVersion: u16(6),
			InternalAttr: u16(36), ExternalAttr: u32(38),
			Extra:   hex.EncodeToString(h[46+nameLen : 46+nameLen+extraLen]),
			Comment: hex.EncodeToString(h[46+nameLen+extraLen : 46+nameLen+extraLen+commentLen]),
			Content: content[name],
		})
		off += 46 + nameLen + extraLen + commentLen
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TestGoldensAreRays reruns testdata/gen-golden.sh against Ray's source
// when RAY_SRC names one, and compares its output with the committed
// goldens: they must be what Ray's own code computes.
func TestGoldensAreRays(t *testing.T) {
	src := os.Getenv("RAY_SRC")
	if src == "" {
		t.Skip("RAY_SRC is not set: this test reruns testdata/gen-golden.sh against an extracted Ray source tree (testdata/SOURCE.md names the commit) and needs /usr/bin/python3 with python3-filelock")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("testdata", "gen-golden.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-golden.sh: %v\n%s", err, b)
	}
	for _, c := range readCases(t) {
		var got, want golden
		for _, x := range []struct {
			file string
			v    *golden
		}{{filepath.Join(out, c.Name+".json"), &got}, {filepath.Join("testdata", "golden", c.Name+".json"), &want}} {
			b, err := os.ReadFile(x.file)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, x.v); err != nil {
				t.Fatalf("%s: %v", x.file, err)
			}
		}
		// The file system's order, and so the zip's bytes, may differ.
		got.RayOrder, want.RayOrder, got.Zip, want.Zip = nil, nil, nil, nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: committed golden (-) and Ray's output from RAY_SRC=%s (+):\n%s", c.Name, src, diff)
		}
	}
}

func TestPackageRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("x"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := t.TempDir()
	if err := os.Symlink(".", filepath.Join(loop, "self")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "big.bin")
	for _, tc := range []struct {
		name, dir string
		opts      []PackageOption
		excludes  []string
		want      []string
	}{
		{"too large", dir, []PackageOption{WithMaxSize(1000)}, nil, []string{"directory " + dir, "smaller than 0.00MiB"}},
		{"not a directory", file, nil, nil, []string{"directory " + file + " must be an existing directory"}},
		{"missing", filepath.Join(dir, "nope"), nil, nil, []string{"must be an existing directory"}},
		{"symlink loop", loop, nil, nil, []string{"directory " + loop, "symbolic link loop"}},
		{"bad pattern", dir, nil, []string{"[a-"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Package(ctx, tc.dir, tc.excludes, tc.opts...)
			if tc.want == nil {
				// An unclosed bracket is literal in gitwildmatch: no error.
				if err != nil {
					t.Fatalf("Package: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestPackageHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Package(ctx, t.TempDir(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Package with a cancelled context: %v", err)
	}
}

func TestGitWildMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   map[string]bool
	}{
		{"*.log", map[string]bool{"a.log": true, "d/a.log": true, "a.log/x": true, "a.logx": false}},
		{"/top.txt", map[string]bool{"top.txt": true, "d/top.txt": false}},
		{"build/", map[string]bool{"build": false, "build/x": true, "d/build/x": true}},
		{"docs/**/*.md", map[string]bool{"docs/a.md": true, "docs/x/y/a.md": true, "d/docs/a.md": false}},
		{"[!a]?.txt", map[string]bool{"bc.txt": true, "ac.txt": false, "b.txt": false}},
		{"[]]x", map[string]bool{"]x": true, "ax": false}},
		{`\!bang`, map[string]bool{"!bang": true}},
		{"*", map[string]bool{".": true, "a": true}},
		{"# comment", map[string]bool{"# comment": false}},
	} {
		ps, err := compilePathSpec([]string{tc.pattern})
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		got := map[string]bool{}
		for p := range tc.match {
			got[p] = ps.match(p)
		}
		if diff := cmp.Diff(tc.match, got); diff != "" {
			t.Errorf("pattern %q (-want +got):\n%s", tc.pattern, diff)
		}
	}
}

func lutimes(p string, tm time.Time) error {
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return lutimesLink(p, tm)
	}
	return os.Chtimes(p, tm, tm)
}

func lutimesLink(p string, tm time.Time) error {
	tv := unix.NsecToTimeval(tm.UnixNano())
	return unix.Lutimes(p, []unix.Timeval{tv, tv})
}
