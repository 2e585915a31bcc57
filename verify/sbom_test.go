package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/sbom/document"
)

func TestCheckSBOMContents(t *testing.T) {
	lockedSet := func() imagespec.Set {
		set := imagetest.Default().Lock()
		for i := range set.Extensions {
			for p, f := range set.Extensions[i].Files {
				f.SHA256 = strings.Repeat("e", 64)
				set.Extensions[i].Files[p] = f
			}
		}
		set.PythonLocks = map[string][]imagespec.PythonDist{}
		for _, p := range set.Platforms {
			for _, d := range [][2]string{{"ray", set.Ray}, {"debugpy", set.Debugpy}, {"AioSignal", "1.3.1"}} {
				f := d[0] + "-" + d[1] + "-py3-none-any.whl"
				set.PythonLocks[p] = append(set.PythonLocks[p], imagespec.PythonDist{Name: d[0], Version: d[1], Filename: f, URL: "https://x/" + f, SHA256: strings.Repeat("a", 64)})
			}
		}
		return set
	}
	doc := func(t *testing.T, s imagespec.Set) []byte {
		t.Helper()
		b, err := document.SPDX(document.SBOMInputFromLock(s, "r.example/x", time.Unix(0, 0)), "linux/arm64")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		// sbom is the set the SBOM is written from; lock the image's lock.
		sbom, lock func() imagespec.Set
		want       []string
	}{
		{name: "every locked package listed", sbom: lockedSet, lock: lockedSet},
		{name: "a transitive distribution missing", sbom: func() imagespec.Set {
			s := lockedSet()
			s.PythonLocks["linux/arm64"] = s.PythonLocks["linux/arm64"][:2]
			return s
		}, lock: lockedSet, want: []string{"Python distribution AioSignal 1.3.1 of the lock is not in the SBOM"}},
		{name: "another version", sbom: func() imagespec.Set {
			s := lockedSet()
			s.PythonLocks["linux/arm64"][2].Version = "1.3.2"
			return s
		}, lock: lockedSet, want: []string{"Python distribution AioSignal: the SBOM lists 1.3.2, the lock says 1.3.1"}},
		{name: "an extension with another VSIX", sbom: func() imagespec.Set {
			s := lockedSet()
			s.Extensions[0].Files["linux/arm64"] = imagespec.File{TargetPlatform: "linux-arm64", SHA256: strings.Repeat("f", 64)}
			return s
		}, lock: lockedSet, want: []string{"the lock's VSIX is " + strings.Repeat("e", 64)}},
		{name: "an extension missing", sbom: func() imagespec.Set {
			s := lockedSet()
			s.Extensions = s.Extensions[1:]
			return s
		}, lock: lockedSet, want: []string{"of the lock is not in the SBOM"}},
		{name: "unlocked image: ray and debugpy", sbom: func() imagespec.Set {
			s := imagetest.Default().Lock()
			s.Debugpy = "1.8.0"
			return s
		}, lock: func() imagespec.Set { return imagetest.Default().Lock() }, want: []string{"Python distribution debugpy: the SBOM lists 1.8.0, the lock says"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &verifier{rep: &Report{}}
			lock := tc.lock()
			d, err := name.NewDigest("r.example/x@sha256:" + strings.Repeat("1", 64))
			if err != nil {
				t.Fatal(err)
			}
			mi := manifestInfo{ref: d, platform: "linux/arm64"}
			m := &Manifest{SBOM: "cosign attestation https://spdx.dev/Document"}
			m.SBOMLocked = v.checkSBOMContents(mi, m, &lock, m.SBOM, doc(t, tc.sbom()))
			var got []string
			for _, f := range v.rep.Failures {
				if f.Check != CheckSBOM || f.Platform != "linux/arm64" {
					t.Errorf("failure %+v: want check sbom on linux/arm64", f)
				}
				got = append(got, f.Message)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("failures %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("failure %q lacks %q", got[i], w)
				}
			}
			if len(tc.want) == 0 && m.SBOMLocked != len(lock.PythonLocks["linux/arm64"])+len(lock.Extensions) {
				t.Errorf("SBOMLocked = %d", m.SBOMLocked)
			}
		})
	}
}
