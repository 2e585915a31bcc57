package sbom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"

	"github.com/anchore/syft/syft/file"
	"github.com/anchore/syft/syft/pkg"
	"github.com/anchore/syft/syft/pkg/cataloger/binary"
)

// The binary classifiers Scan runs are syft's defaults with one evidence
// matcher made faster and no different in what it finds.
//
// syft's nodejs-binary classifier (syft/pkg/cataloger/binary/classifiers.go
// at nodeClassifierSyftVersion) matches any file named node with
//
//	binutils.MatchAny(
//		m.FileContentsVersionMatcher(nodeOldPattern),
//		m.FileContentsVersionMatcher(nodeNewPattern),
//	)
//
// The first pattern (Node.js 0.x and 4–6) begins with a NUL byte, its only
// literal, so Go's regexp tries a match at every NUL of the file: about
// 1.8 s of CPU for code-server's ~100 MB node, where it never matches a
// current Node.js. Every match of nodeOldPattern contains one of
// nodeOldLiterals, so a file without any of them cannot match it: for such
// a file the first matcher is skipped, which is what it would have
// returned (no packages, no error). A file with one of them runs both
// matchers as syft does, so the packages found are syft's. (That holds
// for file contents that fill each read, as stereoscope's do: sections of
// the layer files. syft's chunked matching, processReaderInChunks in its
// internal/regex_helpers.go, joins a short read to bytes left over from
// an earlier one, so on a reader that returns short reads it can match
// bytes that are not adjacent in the file; containsAny does not.)
const (
	nodeClassifierSyftVersion = "v1.52.0"
	nodeClass                 = "nodejs-binary"
	nodeOldPattern            = `(?m)\x00(node )?v(?P<version>(0|4|5|6)\.[0-9]+\.[0-9]+)\x00`
	nodeNewPattern            = `(?m)node\.js\/v(?P<version>[0-9]+\.[0-9]+\.[0-9]+)`
)

// nodeOldLiterals are the strings one of which every match of
// nodeOldPattern contains: NUL, optionally "node ", "v", a major version
// of 0, 4, 5 or 6 and a dot.
var nodeOldLiterals = func() [][]byte {
	var l [][]byte
	for _, prefix := range []string{"\x00v", "\x00node v"} {
		for _, major := range "0456" {
			l = append(l, []byte(prefix+string(major)+"."))
		}
	}
	return l
}()

// classifierConfig is syft's default binary classifier configuration,
// with the nodejs-binary classifier's evidence matcher replaced by
// fastNodeMatcher when the syft in go.mod is the version whose classifier
// that copies; with another version, syft's defaults unchanged.
func classifierConfig() binary.ClassifierCatalogerConfig {
	cfg := binary.DefaultClassifierCatalogerConfig()
	if syftModuleVersion != nodeClassifierSyftVersion {
		return cfg
	}
	for i := range cfg.Classifiers {
		if cfg.Classifiers[i].Class == nodeClass {
			//lint:ignore SA1019 syft's own classifiers are made with this matcher (from its internal binutils package)
			old, current := binary.FileContentsVersionMatcher(nodeOldPattern), binary.FileContentsVersionMatcher(nodeNewPattern)
			cfg.Classifiers[i].EvidenceMatcher = fastNodeMatcher(old, current)
		}
	}
	return cfg
}

// nodeOldSkipped counts the files fastNodeMatcher did not match against
// nodeOldPattern (a test checks that Scan uses it).
var nodeOldSkipped atomic.Int64

// fastNodeMatcher is syft's binutils.MatchAny(old, current) that skips old
// for a file without any of nodeOldLiterals. When the file cannot be read
// here, old runs as in MatchAny. K and C are syft's binutils.Classifier
// and binutils.MatcherContext, from a package internal to syft: inferred,
// never named.
func fastNodeMatcher[K, C any, M ~func(K, C) ([]pkg.Package, error)](old, current M) M {
	return func(cls K, c C) ([]pkg.Package, error) {
		if absent, err := lacksAll(c, nodeOldLiterals); err == nil && absent {
			nodeOldSkipped.Add(1)
		} else {
			match, err := old(cls, c)
			if err != nil {
				return nil, err
			}
			if match != nil {
				return match, nil
			}
		}
		match, err := current(cls, c)
		if err != nil {
			return nil, err
		}
		return match, nil
	}
}

// lacksAll reports whether the file a syft binutils.MatcherContext names
// (its Resolver's contents at its Location, read through reflection)
// contains none of literals. A context with a GetReader (a reader shared
// with the matchers that run after) is not read: an error.
func lacksAll(c any, literals [][]byte) (bool, error) {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Struct {
		return false, fmt.Errorf("matcher context is a %s, not a struct", v.Kind())
	}
	if get := v.FieldByName("GetReader"); !get.IsValid() || get.Kind() != reflect.Func || !get.IsNil() {
		return false, errors.New("matcher context has a GetReader or none of its shape")
	}
	res, ok := fieldOf[file.Resolver](v, "Resolver")
	if !ok || res == nil {
		return false, errors.New("matcher context has no file.Resolver")
	}
	loc, ok := fieldOf[file.Location](v, "Location")
	if !ok {
		return false, errors.New("matcher context has no file.Location")
	}
	rc, err := res.FileContentsByLocation(loc)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	found, err := containsAny(rc, literals)
	if err != nil {
		return false, err
	}
	return !found, nil
}

func fieldOf[T any](v reflect.Value, name string) (T, bool) {
	var zero T
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanInterface() {
		return zero, false
	}
	t, ok := f.Interface().(T)
	return t, ok
}

// containsAny reports whether r's content contains any of literals,
// reading it in chunks that overlap by the longest literal less one byte,
// so that a literal across two chunks is found.
func containsAny(r io.Reader, literals [][]byte) (bool, error) {
	longest := 0
	for _, l := range literals {
		longest = max(longest, len(l))
	}
	if longest == 0 {
		return false, nil
	}
	const chunk = 1 << 20
	buf := make([]byte, chunk+longest-1)
	kept := 0
	for {
		n, err := io.ReadFull(r, buf[kept:])
		data := buf[:kept+n]
		for _, l := range literals {
			if bytes.Contains(data, l) {
				return true, nil
			}
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return false, nil
		case err != nil:
			return false, err
		}
		kept = min(longest-1, len(data))
		copy(buf, data[len(data)-kept:])
	}
}
