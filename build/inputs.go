package build

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/imagectl/imagectl/resolve"
)

// inputsVersion versions the encoding hashed by InputsDigest. Bump it when
// the encoding changes so old and new digests never collide by accident.
const inputsVersion = "imagectl-inputs/v2"

// InputsDigest is the sha256 ("sha256:<hex>") over everything that decides
// what an image contains: the resolved set (with every extension file's
// digest, the base digest per platform and the tools image reference, pinned
// by digest once matrix refresh recorded it), the image definition bytes and
// the imagectl version. set.Tags are not inputs (they are rendered from this
// digest) and are left out, so adding a tag template rebuilds nothing. Two builds with the same InputsDigest are expected to
// give the same image; plan compares it with the LabelInputs of a published
// image to decide what needs rebuilding.
//
// The encoding is canonical: map keys sorted, platforms sorted, every field
// length-prefixed, so no two different inputs hash alike by concatenation.
func InputsDigest(set resolve.Set, definition []byte, version string) string {
	h := sha256.New()
	field := func(name, value string) {
		fmt.Fprintf(h, "%s %d:%s\n", name, len(value), value)
	}
	field("encoding", inputsVersion)
	field("imagectl", version)
	field("definition", string(definition))
	// The lock is the canonical JSON of the set (encoding/json sorts map
	// keys); it includes the file digests and base digests.
	lock := set
	lock.Tags = nil
	field("lock", string(Lock(lock)))
	// Also list the pinned digests explicitly, sorted, so a reader of this
	// function sees what must move the digest.
	field("tools", set.ToolsImage)
	plats := sortedKeys(set.CodeServer.Platforms)
	for _, p := range plats {
		field("base "+p, set.CodeServer.Platforms[p])
	}
	for _, e := range set.Extensions {
		for _, p := range sortedKeys(e.Files) {
			field("extension "+e.ID+"@"+e.Version+" "+p, e.Files[p].SHA256)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Lock is the set as compact JSON, the value of LabelLock.
func Lock(set resolve.Set) []byte {
	b, err := json.Marshal(set)
	if err != nil {
		// resolve.Set holds only strings, slices and maps of strings.
		panic(fmt.Sprintf("build: encoding resolve.Set: %v", err))
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// LabelSource names the image's source for org.opencontainers.image.source.
type LabelSource struct {
	// Source is the URL of the project that builds the image.
	Source string
	// Revision is the source revision (git commit) of the definition.
	Revision string
}

// Labels returns the image labels for one platform of set: the OCI
// annotations-as-labels and imagectl's own (contract.go).
func Labels(set resolve.Set, platform, inputsDigest string, created time.Time, src LabelSource) map[string]string {
	ext := make([]string, 0, len(set.Extensions))
	for _, e := range set.Extensions {
		ext = append(ext, e.ID+"@"+e.Version)
	}
	l := map[string]string{
		"org.opencontainers.image.version":     imageVersion(set),
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.base.name":   set.CodeServer.Base,
		"org.opencontainers.image.base.digest": set.CodeServer.Platforms[platform],
		LabelInputs:                            inputsDigest,
		LabelLock:                              string(Lock(set)),
		LabelCodeServer:                        set.CodeServer.Version,
		LabelVSCode:                            set.CodeServer.VSCode,
		LabelRay:                               set.Ray,
		LabelPython:                            set.Python,
		LabelDebugpy:                           set.Debugpy,
		LabelExtensions:                        strings.Join(ext, ","),
	}
	if src.Source != "" {
		l["org.opencontainers.image.source"] = src.Source
	}
	if src.Revision != "" {
		l["org.opencontainers.image.revision"] = src.Revision
	}
	return l
}

// imageVersion is the first (immutable) tag of the set, or a version built
// from its components when the set has no tags.
func imageVersion(set resolve.Set) string {
	if len(set.Tags) > 0 {
		return set.Tags[0]
	}
	return set.CodeServer.Version + "-ray" + set.Ray + "-py" + set.Python
}

// Requirements is the pip requirements file for one platform of set. With
// the set's locked closure for the platform (resolve.Set.PythonLocks) it is
// every distribution as name==version --hash=sha256:<sum>, sorted by
// normalized name: the build installs it with --no-deps --require-hashes, so
// exactly those wheels. Without one it is the top-level pins (ray with its
// extras, debugpy) and pip resolves the rest at build time (Locked false).
func Requirements(set resolve.Set, platform string) (req []byte, locked bool) {
	var b strings.Builder
	if ds, ok := set.PythonLocks[platform]; ok && len(ds) > 0 {
		fmt.Fprintf(&b, "# Generated by imagectl: the locked closure for CPython %s on %s (catalog.json\n", set.Python, platform)
		b.WriteString("# pythonLocks, imagectl matrix refresh); installed with --no-deps --require-hashes.\n")
		sorted := append([]resolve.PythonDist(nil), ds...)
		sort.SliceStable(sorted, func(i, j int) bool { return normalizeName(sorted[i].Name) < normalizeName(sorted[j].Name) })
		for _, d := range sorted {
			fmt.Fprintf(&b, "%s==%s --hash=sha256:%s\n", d.Name, d.Version, d.SHA256)
		}
		return []byte(b.String()), true
	}
	extras := append([]string(nil), set.RayExtras...)
	sort.Strings(extras)
	ray := "ray"
	if len(extras) > 0 {
		ray += "[" + strings.Join(extras, ",") + "]"
	}
	b.WriteString("# Generated by imagectl from the resolved set; top-level pins only.\n")
	b.WriteString("debugpy==" + set.Debugpy + "\n")
	b.WriteString(ray + "==" + set.Ray + "\n")
	return []byte(b.String()), false
}

// normalizeName is the PEP 503 normalized form of a distribution name.
func normalizeName(n string) string {
	return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(n))
}

// epochString formats a SOURCE_DATE_EPOCH value.
func epochString(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// PythonSitePackages is where the Python packages of a set with CPython
// version (X.Y) live in the image.
func PythonSitePackages(version string) string {
	return PythonDir + "/lib/python" + version + "/site-packages"
}
