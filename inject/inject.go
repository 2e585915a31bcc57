package inject

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/docsurl"
)

// Result is what Apply or Remove did.
type Result struct {
	Output  []byte   // the new stream
	Targets []Target // the Ray documents (or the values file) changed
	// Namespaces are the metadata.namespace values of the changed Ray
	// documents, each once, in order ("" when a document sets none).
	Namespaces []string
	Warnings   []string // things that will keep the debugger from working
	Notes      []string // what inject chose and why (the default image)
	// Unchecked are default images whose tag inject did not check the
	// registry for (no tag lister, or the tags could not be listed), with
	// why: the floating tag may name nothing. A warning, once per Ray
	// version.
	Unchecked []string
	Changed   bool // Output differs from the input
}

// Target is one document inject changed.
type Target struct {
	Document int `json:"document"` // 1-based index in the stream
	// Item is the 1-based index of the object in the document's List
	// items (kubectl get -o yaml of several objects); 0: the document.
	Item  int    `json:"item,omitempty"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Image string `json:"image,omitempty"`
}

func (t Target) String() string {
	doc := fmt.Sprintf("document %d", t.Document)
	if t.Item > 0 {
		doc += fmt.Sprintf(", List item %d", t.Item)
	}
	if t.Name == "" {
		return fmt.Sprintf("%s (%s)", doc, t.Kind)
	}
	return fmt.Sprintf("%s (%s %s)", doc, t.Kind, t.Name)
}

// Error is a problem with one document of the input.
type Error struct {
	File     string
	Line     int // 1-based line of the input the problem is on; 0: none
	Document int // 1-based; 0: the stream as a whole
	Item     int // 1-based index in the document's List items; 0: none
	Kind     string
	Name     string
	Err      error
}

func (e *Error) Error() string {
	where := e.File
	if where == "" {
		where = "-"
	}
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Document > 0 {
		where += fmt.Sprintf(": document %d", e.Document)
		if e.Item > 0 {
			where += fmt.Sprintf(", List item %d", e.Item)
		}
		if e.Kind != "" {
			where += " (" + strings.TrimSpace(e.Kind+" "+e.Name) + ")"
		}
	}
	return where + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// lineError is a problem on a line of one document (1-based, counted in
// the document); Apply and Remove turn it into an Error with the line of
// the input.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

func atLine(n *yaml.Node, format string, a ...any) error {
	return &lineError{line: n.Line, err: fmt.Errorf(format, a...)}
}

// docError makes err, about document index (1-based) whose first line is
// line offset+1 of the input, an Error naming the file and the line.
func docError(file string, index, offset int, kind, name string, err error) error {
	e := &Error{File: file, Document: index, Kind: kind, Name: name, Err: err}
	var le *lineError
	if errors.As(err, &le) && le.line > 0 {
		e.Line = offset + le.line
	}
	return e
}

// ErrNoRayKind is returned (wrapped) when the input holds no ray.io/v1
// RayJob, RayCluster or RayService.
var ErrNoRayKind = errors.New("no ray.io/v1 RayJob, RayCluster or RayService")

var rayKinds = map[string]bool{"RayJob": true, "RayCluster": true, "RayService": true}

// lineOffsets is, for each chunk, the number of lines of data before it.
func lineOffsets(chunks [][]byte) []int {
	offs := make([]int, len(chunks))
	n := 0
	for i, c := range chunks {
		offs[i] = n
		n += strings.Count(string(c), "\n")
	}
	return offs
}

// rayDoc reports whether root is a Ray kind inject edits, and its kind.
func rayDoc(root *yaml.Node) (kind string, ok bool) {
	apiVersion, kind := scalarAt(root, "apiVersion"), scalarAt(root, "kind")
	return kind, rayKinds[kind] && strings.HasPrefix(apiVersion, "ray.io/")
}

// Apply adds the sidecar to the head group of every Ray document of data
// (named file in errors), or to a ray-cluster Helm values file with
// WithHelmValues. Documents that already carry it get the same additions
// again, so applying twice changes nothing.
func Apply(ctx context.Context, file string, data []byte, opts ...Option) (*Result, error) {
	c := newConfig(opts)
	if err := c.validate(); err != nil {
		return nil, err
	}
	res := &Result{}
	chunks := splitDocuments(data)
	offsets := lineOffsets(chunks)
	out := make([][]byte, len(chunks))
	seenNS := map[string]bool{}
	resolved := map[string]string{}
	c.enforce = podSecurityLevels(chunks)
	c.firstDoc, c.firstDocDesc = firstDocument(chunks)
	c.tags = map[string]tagList{}
	found := false
	docs, helmLike := 0, 0 // documents that are not empty; the first that looks like Helm values
	for i, chunk := range chunks {
		docErr := func(kind, name string, err error) error {
			return docError(file, i+1, offsets[i], kind, name, err)
		}
		root, err := parseDoc(chunk)
		if err != nil {
			return nil, docErr("", "", err)
		}
		out[i] = chunk
		if root == nil {
			continue
		}
		docs++
		kind, apiVersion := scalarAt(root, "kind"), scalarAt(root, "apiVersion")
		if c.helmValues {
			if kind != "" && apiVersion != "" {
				return nil, docErr("", "", fmt.Errorf("document %d is a %s %s (kind and apiVersion), not a values file of KubeRay's ray-cluster Helm chart: drop --helm-values", i+1, apiVersion, kind))
			}
			if found {
				return nil, docErr("", "", errors.New("a Helm values file is one YAML document"))
			}
			found = true
			o, tgt, err := c.applyDoc(ctx, chunk, i+1, unit{}, resolved, res)
			if err != nil {
				return nil, docErr("Helm values", "", err)
			}
			out[i] = o
			res.Targets = append(res.Targets, tgt)
			res.Namespaces = []string{""}
			continue
		}
		// The Ray objects: the document, or the Ray items of a List.
		units := rayUnits(root)
		if len(units) == 0 {
			if h := valueAt(root, "head"); helmLike == 0 && kind == "" && h != nil && h.Kind == yaml.MappingNode {
				helmLike = i + 1
			}
			continue
		}
		unitErr := func(u unit, err error) error {
			e := docErr(u.kind, u.name, err)
			if de, ok := e.(*Error); ok {
				de.Item = u.item
			}
			return e
		}
		for _, u := range units {
			if apiVersion := scalarAt(pickUnit(root, u.item), "apiVersion"); apiVersion != "ray.io/v1" {
				return nil, unitErr(u, fmt.Errorf("apiVersion %s: expected ray.io/v1 (KubeRay >= 1.0)", apiVersion))
			}
		}
		if len(units) > 1 || units[0].item > 0 {
			if err := checkListAnchors(root); err != nil {
				return nil, docErr("List", "", err)
			}
		}
		// What the API server fills in is taken out after the sidecar
		// is added (the lines of errors are the input's); a field that
		// cannot be taken out is an error before anything is done.
		for _, u := range units {
			if _, _, err := stripDocument(chunk, []unit{u}); err != nil {
				return nil, unitErr(u, err)
			}
		}
		found = true
		// Last item first: an edit moves no line of the items before it,
		// so the lines errors name stay the input's.
		cur := chunk
		tgts := make([]Target, len(units))
		for j := len(units) - 1; j >= 0; j-- {
			u := units[j]
			o, tgt, err := c.applyDoc(ctx, cur, i+1, u, resolved, res)
			if err != nil {
				return nil, unitErr(u, err)
			}
			cur, tgts[j] = o, tgt
		}
		stripped, paths, err := stripDocument(cur, units)
		if err != nil {
			return nil, docErr("", "", err)
		}
		out[i] = stripped
		for j, u := range units {
			res.Targets = append(res.Targets, tgts[j])
			if len(paths[j]) > 0 {
				res.Notes = append(res.Notes, serverNote(tgts[j], paths[j]))
			}
			if !seenNS[u.ns] {
				seenNS[u.ns] = true
				res.Namespaces = append(res.Namespaces, u.ns)
			}
		}
	}
	if !found {
		if c.helmValues {
			return nil, &Error{File: file, Err: errors.New("empty Helm values file")}
		}
		switch {
		case docs == 0:
			return nil, &Error{File: file, Err: fmt.Errorf("%w: the input is empty (no YAML document, only blank lines or comments)", ErrNoRayKind)}
		case helmLike > 0:
			return nil, &Error{File: file, Err: fmt.Errorf("%w in %d document(s): document %d looks like a values file of KubeRay's ray-cluster Helm chart (a head: mapping, no kind): pass --helm-values", ErrNoRayKind, docs, helmLike)}
		}
		return nil, &Error{File: file, Err: fmt.Errorf("%w in %d document(s)", ErrNoRayKind, docs)}
	}
	res.Notes = append(c.notes, res.Notes...)
	res.Unchecked = c.unchecked
	res.Output = joinOutput(out)
	res.Changed = string(res.Output) != string(data)
	return res, nil
}

// joinOutput concatenates the documents.
func joinOutput(out [][]byte) []byte {
	var b strings.Builder
	for _, o := range out {
		b.Write(o)
	}
	return []byte(b.String())
}

// Remove takes out everything inject added to the head pod of every Ray
// document (or of a Helm values file, a document with head: and no kind):
// what the sidecar's record (RecordEnv) lists, nothing else. What is left
// is the input as it was before Apply.
func Remove(file string, data []byte) (*Result, error) {
	res := &Result{}
	chunks := splitDocuments(data)
	offsets := lineOffsets(chunks)
	var b strings.Builder
	for i, chunk := range chunks {
		s := string(chunk)
		root, err := parseDoc(chunk)
		if err != nil {
			return nil, docError(file, i+1, offsets[i], "", "", err)
		}
		if root != nil {
			// The Ray objects (the document, or the Ray items of a
			// List), or a Helm values file.
			units := rayUnits(root)
			helm := len(units) == 0 && scalarAt(root, "kind") == "" && valueAt(root, "head") != nil
			if helm {
				units = []unit{{kind: "Helm values"}}
			}
			t := newText(chunk)
			removedAny := false
			for _, u := range units {
				removed, err := removeRecorded(t, pickUnit(root, u.item), u.kind, helm)
				if err == nil && removed {
					err = checkLineBreaks(chunk)
				}
				if err != nil {
					e := docError(file, i+1, offsets[i], u.kind, u.name, err)
					e.(*Error).Item = u.item
					return nil, e
				}
				if removed {
					removedAny = true
					res.Targets = append(res.Targets, Target{Document: i + 1, Item: u.item, Kind: u.kind, Name: u.name})
				}
			}
			if removedAny {
				s = string(t.render())
				if _, err := parseDoc([]byte(s)); err != nil {
					return nil, docError(file, i+1, offsets[i], "", "", fmt.Errorf("after taking out what the %s record lists, the document does not parse (was it edited by hand?): %w", RecordEnv, err))
				}
			}
		}
		b.WriteString(s)
	}
	res.Output = []byte(b.String())
	res.Changed = string(res.Output) != string(data)
	return res, nil
}

// parseDoc parses one document; nil when it holds no node (only comments).
func parseDoc(chunk []byte) (*yaml.Node, error) {
	chunk, err := maskDirectives(chunk)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(chunk, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("expected a mapping at the top, found %s", kindName(root))
	}
	return root, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}

// lookup returns the key and value nodes of key in the mapping m.
func lookup(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func valueAt(m *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		_, m = lookup(m, k)
	}
	return m
}

func scalarAt(m *yaml.Node, path ...string) string {
	v := valueAt(m, path...)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// site is where the additions go in one document.
type site struct {
	desc          string     // where, for messages: spec.rayClusterSpec.headGroupSpec.template.spec
	top           *yaml.Node // the head pod template (Helm values: head), nothing above it is edited
	pod           *yaml.Node // mapping holding volumes (head, for Helm values)
	containerList *yaml.Node // mapping holding the list the sidecar is added to
	containerKey  string     // containers, or sidecarContainers
	mountsOf      *yaml.Node // mapping holding the Ray container's volumeMounts
	pullSecretsOf *yaml.Node // mapping holding imagePullSecrets
	rayEnv        *yaml.Node // the Ray container's env list
	ports         []*yaml.Node
	containers    []*yaml.Node // every container mapping of the pod, the Ray container first
	rayImage      string
	rayTag        string // the Ray image's tag when given apart (Helm values' image.tag)
	rayVersion    string
	versionPath   string // where rayVersion is, for messages: spec.rayClusterSpec.rayVersion
	startParams   *yaml.Node
	securityCtx   []*yaml.Node // the Ray container's then the pod's securityContext
}

// applyDoc injects into one document: it removes earlier additions, then
// adds them anew.
//
// u names the object: the document, or an item of its List.
func (c *config) applyDoc(ctx context.Context, chunk []byte, index int, u unit, resolved map[string]string, res *Result) ([]byte, Target, error) {
	kind := u.kind
	t := newText(chunk)
	doc, _ := parseDoc(chunk)
	root := pickUnit(doc, u.item)
	tgt := Target{Document: index, Item: u.item, Kind: kind, Name: scalarAt(root, "metadata", "name")}
	if kind == "" {
		tgt.Kind = "Helm values"
	}
	if err := checkLineBreaks(chunk); err != nil {
		return nil, tgt, err
	}
	if err := checkDuplicateKeys(root); err != nil {
		return nil, tgt, err
	}
	removed, err := removeRecorded(t, root, kind, c.helmValues)
	if err != nil {
		return nil, tgt, err
	}
	if removed {
		chunk = t.render()
		if doc, err = parseDoc(chunk); err != nil {
			return nil, tgt, fmt.Errorf("after taking out the earlier sidecar: %w", err)
		}
		root = pickUnit(doc, u.item)
		t = newText(chunk)
	}
	var s *site
	if c.helmValues {
		s, err = helmSite(root)
	} else {
		s, err = raySite(root, kind)
	}
	if err != nil {
		return nil, tgt, err
	}
	if err := checkNoAnchors(root, s, c.pullSecret != ""); err != nil {
		return nil, tgt, err
	}
	if !c.helmValues {
		if err := checkRayContainer(s); err != nil {
			return nil, tgt, err
		}
	}
	warn := func(format string, a ...any) {
		res.Warnings = append(res.Warnings, tgt.String()+": "+fmt.Sprintf(format, a...))
	}
	if c.dashboard == "" {
		if err := checkDashboardPort(s); err != nil {
			return nil, tgt, err
		}
	}
	auth := c.checkDebugger(root, kind, s, warn)
	c.checkSubmission(root, kind, index, warn)
	c.checkHardened(scalarAt(root, "metadata", "namespace"), s, warn)
	c.checkAutoscalerVolume(root, kind, s, warn)

	image, err := c.sidecarImage(ctx, s, resolved, warn)
	if err != nil {
		return nil, tgt, err
	}
	tgt.Image = image
	if err := c.checkConflicts(s); err != nil {
		return nil, tgt, err
	}
	if err := c.addSidecar(t, detectStyle(root), s, image, auth, warn); err != nil {
		return nil, tgt, err
	}
	out := t.render()
	// What inject writes is always valid YAML: a value that would not
	// survive the trip is a bug here, never a broken manifest.
	if _, err := parseDoc(out); err != nil {
		return nil, tgt, fmt.Errorf("the injected document does not parse (a bug in imagectl inject): %w", err)
	}
	return out, tgt, nil
}

// sidecarImage is the sidecar's image: --image, else the published image
// for the Ray version of the site, pinned by the resolver when there is one
// (resolved remembers each lookup across documents).
func (c *config) sidecarImage(ctx context.Context, s *site, resolved map[string]string, warn func(string, ...any)) (string, error) {
	image := c.image
	ray := RayVersionOf(s.rayTag)
	if s.rayTag == "" {
		ray = rayVersionOfImage(s.rayImage)
	}
	if ray == "" {
		ray = RayVersionOf(s.rayVersion)
	} else if v := RayVersionOf(s.rayVersion); v != "" && v != ray && image == "" {
		warn("rayVersion %s differs from the Ray image %s; the sidecar follows the image", s.rayVersion, s.rayImage)
	}
	switch {
	case image != "":
		if ray != "" && olderThan(ray, MinRay) {
			warn("Ray %s has no debugpy-based debugger (Ray >= %s): breakpoint() will not show in the Ray Distributed Debugger", ray, MinRay)
		}
	case ray == "":
		return "", fmt.Errorf("no Ray version: %s is not set and the Ray image %q of %s has no X.Y.Z tag; pass the sidecar image (--image)", s.versionPath, s.rayImage, s.desc)
	case olderThan(ray, MinRay):
		// The images are built for Ray >= MinRay only (matrix.yaml's
		// components.ray.constraint): the tag would name nothing.
		return "", fmt.Errorf("%s: Ray %s has no debugpy-based debugger: the oldest Ray with the Ray Distributed Debugger is %s, and no sidecar image is published for older ones; upgrade Ray to %s or newer, or pass a sidecar image (--image)", s.desc, ray, MinRay, MinRay)
	default:
		var err error
		if image, err = c.defaultImage(ctx, ray, resolved); err != nil {
			return "", err
		}
	}
	if c.resolver != nil {
		if r, ok := resolved[image]; ok {
			image = r
		} else if r, err := c.resolver.Resolve(ctx, image); err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("resolving %s to a digest: %w", image, ctx.Err())
			}
			if errors.Is(err, ErrImageNotFound) && !c.keepUnresolved {
				return "", fmt.Errorf("the sidecar image %s: %w; pass another image (--image), or keep the tag anyway (--keep-unresolved)", image, err)
			}
			warn("keeping %s by tag: %v", image, err)
			resolved[image] = image
		} else {
			resolved[image] = r
			image = r
		}
	}
	return image, nil
}

// defaultImage is the published image for Ray version ray: with a tag
// lister, the build for that patch or else the newest build for its minor;
// without one, or when the tags cannot be listed, the floating minor tag.
// The choice and its reason go to Notes, once per Ray version (resolved
// remembers it under "ray "+ray); a floating tag the registry was not asked
// about goes to Unchecked instead: it may name nothing.
func (c *config) defaultImage(ctx context.Context, ray string, resolved map[string]string) (string, error) {
	key := "ray " + ray
	if image, ok := resolved[key]; ok {
		return image, nil
	}
	floating, err := MinorImage(c.repository, ray)
	if err != nil {
		return "", err
	}
	image, why, checked := floating, "", true
	unchecked := fmt.Sprintf("%s is the floating tag of the newest build for Ray %s, which may not exist: check it, or pass --image", floating[strings.LastIndex(floating, ":")+1:], rayMinor(ray))
	if c.lister == nil {
		why, checked = "the tags were not looked up; "+unchecked, false
	} else {
		if _, ok := c.tags[c.repository]; !ok {
			tags, err := c.lister.ListTags(ctx, c.repository)
			if ctx.Err() != nil {
				// Interrupted, not offline: nothing is chosen or written.
				return "", fmt.Errorf("listing the tags of %s: %w", c.repository, ctx.Err())
			}
			c.tags[c.repository] = tagList{tags, err}
		}
		if tl := c.tags[c.repository]; errors.Is(tl.err, ErrImageNotFound) {
			// The registry answered that the repository does not exist:
			// its floating tag does not either.
			return "", fmt.Errorf("the sidecar image repository %s: %w; name the repository the images are published to (--repository), an image (--image), or take the floating tag unchecked (--no-resolve)", c.repository, tl.err)
		} else if tl.err != nil {
			why, checked = fmt.Sprintf("%v; %s", tl.err, unchecked), false
		} else if image, why, err = chooseImage(c.repository, ray, tl.tags); err != nil {
			return "", err
		}
	}
	resolved[key] = image
	if !checked {
		c.unchecked = append(c.unchecked, fmt.Sprintf("sidecar image %s not checked: %s", image, why))
	} else {
		c.notes = append(c.notes, fmt.Sprintf("sidecar image %s: %s", image, why))
	}
	return image, nil
}

// tagList is the answer of a TagLister.
type tagList struct {
	tags []string
	err  error
}

// checkConflicts refuses a site whose containers already use the sidecar's
// name or port.
func (c *config) checkConflicts(s *site) error {
	for _, ct := range s.containers {
		if scalarAt(ct, "name") == c.name {
			return fmt.Errorf("%s already has a container named %q that imagectl inject did not add (it has no %s record): rename it, or pick another name for the sidecar (--name)", s.desc, c.name, RecordEnv)
		}
	}
	for _, p := range s.ports {
		if scalarAt(p, "containerPort") == strconv.Itoa(c.port) {
			return fmt.Errorf("%s: port %d is already used by another container: pick another port (--port)", s.desc, c.port)
		}
		if scalarAt(p, "name") == PortName {
			return fmt.Errorf("%s: a port is already named %q", s.desc, PortName)
		}
	}
	return nil
}

// addSidecar appends, in t, the Ray container's /tmp/ray mount (unless it
// has one), the sidecar, the /tmp/ray volume (with that mount, unless the
// pod has it; a mount of the Ray container's own naming a volume the pod
// lacks is a warning) and the image pull secret (unless listed). With Ray's
// token authentication (auth not nil) it adds the Secret volume of the
// token too, which the sidecar mounts for its proxy. The sidecar carries
// the record of all of them (RecordEnv), which is what Remove takes out.
func (c *config) addSidecar(t *text, st style, s *site, image string, auth *tokenSource, warn func(string, ...any)) error {
	// The /tmp/ray volume: reuse the Ray container's mount, or add one.
	volume, subPath := rayTmpMount(s)
	volumes := valueAt(s.pod, "volumes")
	findVolume := func(name string) *yaml.Node {
		if volumes == nil || volumes.Kind != yaml.SequenceNode {
			return nil
		}
		for _, v := range volumes.Content {
			if scalarAt(v, "name") == name {
				return v
			}
		}
		return nil
	}
	var adds []*addition
	var rec record
	plan := func(m *yaml.Node, key, name string, it item, where string) error {
		for _, a := range adds {
			if a.m == m && a.key == key {
				// A second item for the same list goes with the first.
				a.more = append(a.more, it)
				e := a.entry
				e.Name = name
				rec.Added = append(rec.Added, e)
				return nil
			}
		}
		a, err := planItem(t, m, key, name, it, where)
		if err != nil {
			return err
		}
		adds = append(adds, a)
		rec.Added = append(rec.Added, a.entry)
		return nil
	}
	addedMount := volume == ""
	if volume == "" {
		volume = DefaultVolume
		if v := findVolume(volume); v != nil {
			if _, ed := lookup(v, "emptyDir"); ed == nil {
				volume = "imagectl-ray-tmp"
			}
		}
		if err := plan(s.mountsOf, "volumeMounts", volume, mapOf(pair("name", volume), pair("mountPath", RayTmp)), s.desc+" (Ray container)"); err != nil {
			return err
		}
	} else if v := findVolume(volume); v != nil {
		if _, hp := lookup(v, "hostPath"); hp != nil && !c.allowHostPath {
			return atLine(v, "%s.volumes: the Ray container mounts /tmp/ray from the hostPath volume %q (path %q): the web IDE would open the node's own files in a browser editor; mount an emptyDir at /tmp/ray, or pass --allow-hostpath to share that node directory with the sidecar",
				s.desc, volume, scalarAt(v, "hostPath", "path"))
		}
	}
	sidecarAt := len(adds)
	if err := plan(s.containerList, s.containerKey, c.name, item{}, s.desc); err != nil {
		return err
	}
	switch {
	case findVolume(volume) != nil:
	case addedMount:
		if err := plan(s.pod, "volumes", volume, mapOf(pair("name", volume), pair("emptyDir", emptyMap())), s.desc); err != nil {
			return err
		}
	default:
		// The Ray container's own mount names a volume the pod lacks:
		// inject adds a volume only with the mount it adds, so --remove
		// can tell its volume from one a record edited by hand names.
		warn("the Ray container mounts /tmp/ray from the volume %q, which %s does not define: Kubernetes refuses the head pod unless something adds it (KubeRay adds %q when enableInTreeAutoscaling is true); define it (an emptyDir)", volume, s.desc, DefaultVolume)
	}
	proxyPort := 0
	if auth != nil {
		if v := findVolume(TokenVolume); v != nil {
			return atLine(v, "%s.volumes already has a volume named %q that imagectl inject did not add: rename it; inject mounts the Ray token's Secret under that name", s.desc, TokenVolume)
		}
		if err := plan(s.pod, "volumes", TokenVolume, tokenVolume(auth), s.desc); err != nil {
			return err
		}
		proxyPort = c.proxyPort(s)
		readers := "mode 0400: the proxy, run as root, reads it, code-server's user does not"
		if fsGroup := scalarAt(s.securityCtx[1], "fsGroup"); fsGroup != "" {
			if _, gid := codeServerIDs(s); gid == fsGroup {
				readers = "mode 0400, but the kubelet gives the file group read for the pod's fsGroup " + fsGroup + ", code-server's own group (PGID): code-server's user, and its terminal, can read it"
			} else {
				readers = "mode 0400, and group read for the pod's fsGroup " + fsGroup + ", which the kubelet adds: the proxy, run as root, reads it, code-server's user (group " + gid + ") does not"
			}
		}
		warn("%s: inject mounts the token from Secret %q, key %q (%s; %s), into the sidecar at %s (%s), and the sidecar runs a loopback proxy on 127.0.0.1:%d that adds it to the Ray Distributed Debugger extension's requests to the dashboard at %s (GET and HEAD only; other methods get 405); the extension's settings name the proxy. No setting, environment variable or log of code-server holds the token, but whoever logs in to code-server reads the dashboard through the proxy (see %s)",
			auth.mode, auth.secret, auth.key, auth.cause, auth.exists, TokenFile, readers, proxyPort, c.dashboardFor(s), docsurl.InjectTokenAuth)
	}
	sc := sidecarSecurityContext()
	if c.restricted {
		if auth != nil {
			return fmt.Errorf("%s: Ray's token authentication with a restricted sidecar is not supported: the sidecar's proxy, which runs as the sidecar's non-root user, could not read the token file (mode 0400, root's); use a namespace at PodSecurity \"baseline\" without --restricted (see %s)", s.desc, docsurl.InjectTokenAuth)
		}
		var err error
		if sc, err = c.restrictedSecurityContext(s); err != nil {
			return err
		}
		for _, m := range restrictedMounts {
			name := c.restrictedVolumeName(m.suffix)
			if v := findVolume(name); v != nil {
				return atLine(v, "%s.volumes already has a volume named %q that imagectl inject did not add: rename it, or pick another name for the sidecar (--name); a restricted sidecar mounts its emptyDir for %s under that name", s.desc, name, m.path)
			}
			if err := plan(s.pod, "volumes", name, mapOf(pair("name", name), pair("emptyDir", emptyMap())), s.desc); err != nil {
				return err
			}
		}
		if inits := valueAt(s.pod, "initContainers"); inits != nil && inits.Kind == yaml.SequenceNode {
			for _, ic := range inits.Content {
				if scalarAt(ic, "name") == c.configInitName() {
					return atLine(ic, "%s.initContainers already has a container named %q that imagectl inject did not add: rename it, or pick another name for the sidecar (--name)", s.desc, c.configInitName())
				}
			}
		}
		if err := plan(s.pod, "initContainers", c.configInitName(), c.configInit(image, sc, c.resources()), s.desc); err != nil {
			return err
		}
	}
	if c.pullSecret != "" {
		listed := false
		if ps := valueAt(s.pullSecretsOf, "imagePullSecrets"); ps != nil {
			for _, p := range ps.Content {
				listed = listed || scalarAt(p, "name") == c.pullSecret
			}
		}
		if !listed {
			if err := plan(s.pullSecretsOf, "imagePullSecrets", c.pullSecret, mapOf(pair("name", c.pullSecret)), s.desc); err != nil {
				return err
			}
		}
	}
	recJSON, err := rec.encode()
	if err != nil {
		return err
	}
	adds[sidecarAt].it = c.sidecar(image, volume, subPath, s, recJSON, proxyPort, sc)
	// Additions after the same line go innermost first: the block that
	// closes last in the text is the outermost.
	slices.SortStableFunc(adds, func(a, b *addition) int {
		if c := b.column() - a.column(); c != 0 {
			return c
		}
		return boolOrder(a.entry.How != addAppended) - boolOrder(b.entry.How != addAppended)
	})
	for _, a := range adds {
		a.apply(t, st)
	}
	return nil
}

// rayTmpMount is the volume (and subPath) the Ray container mounts at
// /tmp/ray; "" when it mounts none there.
func rayTmpMount(s *site) (volume, subPath string) {
	if mounts := valueAt(s.mountsOf, "volumeMounts"); mounts != nil && mounts.Kind == yaml.SequenceNode {
		for _, m := range mounts.Content {
			if strings.TrimRight(scalarAt(m, "mountPath"), "/") == RayTmp {
				return scalarAt(m, "name"), scalarAt(m, "subPath")
			}
		}
	}
	return "", ""
}

// checkAutoscalerVolume warns when KubeRay's autoscaler will get a /tmp/ray
// of its own: with enableInTreeAutoscaling, KubeRay mounts the volume
// named ray-logs at /tmp/ray in its autoscaler container (adding an
// emptyDir of that name when the pod has none), so a /tmp/ray volume of
// another name splits /tmp/ray in two.
func (c *config) checkAutoscalerVolume(root *yaml.Node, kind string, s *site, warn func(string, ...any)) {
	autoscaling := scalarAt(clusterOf(root, kind), "enableInTreeAutoscaling")
	where := clusterPath(kind) + ".enableInTreeAutoscaling"
	if c.helmValues {
		autoscaling, where = scalarAt(root, "head", "enableInTreeAutoscaling"), "head.enableInTreeAutoscaling"
	}
	if autoscaling != "true" {
		return
	}
	if v, _ := rayTmpMount(s); v != "" && v != DefaultVolume {
		warn("%s is true and the Ray container mounts /tmp/ray from the volume %q: KubeRay mounts the volume named %q at /tmp/ray in its autoscaler container (an emptyDir of its own unless the pod has a volume of that name), so the autoscaler's event logs do not reach the head; name the /tmp/ray volume %q",
			where, v, DefaultVolume, DefaultVolume)
	}
}

// headTemplatePath is the path of the head pod template of a Ray kind.
func headTemplatePath(kind string) []string {
	path := []string{"spec"}
	switch kind {
	case "RayJob":
		path = append(path, "rayClusterSpec")
	case "RayService":
		path = append(path, "rayClusterConfig")
	}
	return append(path, "headGroupSpec", "template")
}

// raySite finds the head pod template of a RayJob, RayCluster or RayService.
func raySite(root *yaml.Node, kind string) (*site, error) {
	if kind == "RayJob" && valueAt(root, "spec", "rayClusterSpec") == nil && valueAt(root, "spec", "clusterSelector") != nil {
		return nil, errors.New("no head group: the RayJob runs on an existing cluster (spec.clusterSelector); inject into that RayCluster instead")
	}
	tpl := headTemplatePath(kind)
	cluster := valueAt(root, tpl[:len(tpl)-2]...)
	head := append(append([]string{}, tpl...), "spec")
	for i := range head {
		v := valueAt(root, head[:i+1]...)
		if v != nil && v.Kind == yaml.AliasNode {
			return nil, atLine(v, "%s is an alias (*%s): inject edits only the head pod template and does not follow aliases; write it out", strings.Join(head[:i+1], "."), v.Value)
		}
		if v == nil || v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("no head group: %s is missing or not a mapping", strings.Join(head[:i+1], "."))
		}
	}
	pod := valueAt(root, head...)
	desc := strings.Join(head, ".")
	containers := valueAt(pod, "containers")
	if containers == nil || containers.Kind != yaml.SequenceNode || len(containers.Content) == 0 {
		return nil, fmt.Errorf("no containers: %s.containers is missing or empty (the Ray container must be containers[0])", desc)
	}
	if containers.Style&yaml.FlowStyle != 0 {
		return nil, atLine(containers, "%s.containers is a flow sequence ([...]); write it as a block sequence (one \"- \" item per line) so inject can add to it", desc)
	}
	s := &site{desc: desc, top: valueAt(root, tpl...), pod: pod, containerList: pod, containerKey: "containers", pullSecretsOf: pod,
		rayVersion: scalarAt(cluster, "rayVersion"), versionPath: strings.Join(append(tpl[:len(tpl)-2:len(tpl)-2], "rayVersion"), "."),
		startParams: valueAt(cluster, "headGroupSpec", "rayStartParams")}
	for i, ct := range containers.Content {
		if ct.Kind != yaml.MappingNode {
			return nil, atLine(ct, "%s.containers[%d] is not a mapping", desc, i)
		}
		s.containers = append(s.containers, ct)
		if ports := valueAt(ct, "ports"); ports != nil {
			s.ports = append(s.ports, ports.Content...)
		}
	}
	ray := containers.Content[0]
	s.mountsOf, s.rayEnv, s.rayImage = ray, valueAt(ray, "env"), scalarAt(ray, "image")
	s.securityCtx = []*yaml.Node{valueAt(ray, "securityContext"), valueAt(pod, "securityContext")}
	return s, nil
}

// checkRayContainer refuses a head pod whose containers[0], the container
// KubeRay runs Ray in, is no Ray image: no "ray" in its image's repository
// path and no "ray start" in its command or args.
func checkRayContainer(s *site) error {
	ct := s.containers[0]
	image := scalarAt(ct, "image")
	if ref, err := name.ParseReference(image); err == nil && strings.Contains(strings.ToLower(ref.Context().RepositoryStr()), "ray") {
		return nil
	}
	var words []string
	for _, key := range []string{"command", "args"} {
		if l := valueAt(ct, key); l != nil {
			for _, w := range l.Content {
				if w.Kind == yaml.ScalarNode {
					words = append(words, w.Value)
				}
			}
		}
	}
	if strings.Contains(strings.Join(strings.Fields(strings.Join(words, " ")), " "), "ray start") {
		return nil
	}
	return atLine(ct, "%s.containers[0] (name %q, image %q) is not a Ray container: no \"ray\" in its image's repository path and no \"ray start\" in its command or args; KubeRay runs Ray in containers[0], so the Ray container must come first",
		s.desc, scalarAt(ct, "name"), image)
}

// helmSite finds head: in a values file of the ray-cluster chart; the chart
// renders head.volumeMounts on the Ray container and head.sidecarContainers
// after it.
func helmSite(root *yaml.Node) (*site, error) {
	head := valueAt(root, "head")
	if head != nil && head.Kind == yaml.AliasNode {
		return nil, atLine(head, "head is an alias (*%s): inject edits only head and does not follow aliases; write it out", head.Value)
	}
	if head == nil || head.Kind != yaml.MappingNode || head.Style&yaml.FlowStyle != 0 || len(head.Content) == 0 {
		return nil, errors.New("no head group: the values file has no block mapping head: (add at least head: {rayStartParams: {}} written as a block)")
	}
	s := &site{desc: "head", top: head, pod: head, containerList: head, containerKey: "sidecarContainers", mountsOf: head, pullSecretsOf: root,
		rayEnv: valueAt(head, "containerEnv"), rayVersion: scalarAt(head, "rayVersion"), versionPath: "head.rayVersion", startParams: valueAt(head, "rayStartParams")}
	// The chart renders head.image.repository:head.image.tag when head.image
	// is set, else image.repository:image.tag.
	if img := valueAt(head, "image"); img != nil && img.Kind == yaml.MappingNode && len(img.Content) > 0 {
		repo, tag := scalarAt(img, "repository"), scalarAt(img, "tag")
		s.rayImage, s.rayTag = repo+":"+tag, tag
	} else if repo, tag := scalarAt(root, "image", "repository"), scalarAt(root, "image", "tag"); tag != "" {
		s.rayImage, s.rayTag = repo+":"+tag, tag
	}
	if sc := valueAt(head, "sidecarContainers"); sc != nil {
		for _, ct := range sc.Content {
			s.containers = append(s.containers, ct)
			if ports := valueAt(ct, "ports"); ports != nil {
				s.ports = append(s.ports, ports.Content...)
			}
		}
	}
	if ports := valueAt(head, "ports"); ports != nil {
		s.ports = append(s.ports, ports.Content...)
	}
	s.securityCtx = []*yaml.Node{valueAt(head, "securityContext"), valueAt(head, "podSecurityContext")}
	return s, nil
}

// sidecar is the container inject adds. With a proxyPort (Ray's token
// authentication) its command is the token proxy (tokenproxy.go), it
// mounts the token volume, and the extension's settings name the proxy.
func (c *config) sidecar(image, volume, subPath string, s *site, record string, proxyPort int, sc item) item {
	uid, gid := codeServerIDs(s)
	mount := mapOf(pair("name", volume), pair("mountPath", RayTmp))
	if subPath != "" {
		mount.kv = append(mount.kv, pair("subPath", subPath))
	}
	ct := mapOf(
		pair("name", c.name),
		pair("image", image),
	)
	dashboard := c.dashboardFor(s)
	mounts := listOf(mount)
	if proxyPort != 0 {
		// linuxserver's entrypoint (s6-overlay's /init) starts its
		// services, code-server among them, then runs the container's
		// arguments as root: the proxy, with the image's own Python.
		ct.kv = append(ct.kv, pair("args", listOf(scalar(imagespec.InterpreterPath), scalar("-c"), scalar(TokenProxyScript),
			scalar("127.0.0.1:"+strconv.Itoa(proxyPort)), scalar(dashboard), scalar(TokenFile))))
		mounts.list = append(mounts.list, mapOf(pair("name", TokenVolume), pair("mountPath", TokenMountPath), pair("readOnly", true)))
		dashboard = "127.0.0.1:" + strconv.Itoa(proxyPort)
	}
	// linuxserver/code-server runs code-server as PUID:PGID; the Ray
	// container's user can then share /tmp/ray with it. A restricted
	// sidecar runs as that user itself, in linuxserver's non-root mode.
	ids := listOf(mapOf(pair("name", "PUID"), pair("value", uid)), mapOf(pair("name", "PGID"), pair("value", gid)))
	if c.restricted {
		ids = listOf(mapOf(pair("name", imagespec.NonRootEnv), pair("value", "1")))
		for _, m := range restrictedMounts {
			mt := mapOf(pair("name", c.restrictedVolumeName(m.suffix)), pair("mountPath", m.path))
			if m.subPath != "" {
				mt.kv = append(mt.kv, pair("subPath", m.subPath))
			}
			mounts.list = append(mounts.list, mt)
		}
	}
	ct.kv = append(ct.kv,
		pair("ports", listOf(mapOf(pair("name", PortName), pair("containerPort", c.port)))),
		pair("env", listOf(append(ids.list,
			mapOf(pair("name", "DEFAULT_WORKSPACE"), pair("value", Workspace)),
			mapOf(pair("name", "PASSWORD"), pair("valueFrom", mapOf(pair("secretKeyRef",
				mapOf(pair("name", c.secretName), pair("key", c.secretKey)))))),
			// What inject added to this pod, for Remove.
			mapOf(pair("name", RecordEnv), pair("value", record)),
		)...)),
	)
	if resources := c.resources(); len(resources.kv) > 0 {
		ct.kv = append(ct.kv, pair("resources", resources))
	}
	ct.kv = append(ct.kv, pair("volumeMounts", mounts))
	ct.kv = append(ct.kv, pair("securityContext", sc))
	if d := dashboard; d != ImageDashboard {
		// The image's settings name 127.0.0.1:8265; another dashboard
		// address is written into them when the container starts.
		command := listOf(scalar("python3"), scalar("-c"), scalar(settingsScript), scalar(d))
		exec := mapOf(pair("exec", mapOf(pair("command", command))))
		ct.kv = append(ct.kv, pair("lifecycle", mapOf(pair("postStart", exec))))
	}
	return ct
}

// resources are the sidecar's requests and limits (none: an empty map).
func (c *config) resources() item {
	res := func(m map[string]string) item {
		r := mapOf()
		for _, k := range slices.Sorted(maps.Keys(m)) {
			r.kv = append(r.kv, pair(k, m[k]))
		}
		return r
	}
	resources := mapOf()
	if len(c.requests) > 0 {
		resources.kv = append(resources.kv, pair("requests", res(c.requests)))
	}
	if len(c.limits) > 0 {
		resources.kv = append(resources.kv, pair("limits", res(c.limits)))
	}
	return resources
}

// sidecarSecurityContext is the sidecar's own securityContext: it starts
// as root whatever the pod's securityContext says (a pod-level runAsUser
// would switch linuxserver's init into its non-root mode, a pod-level
// runAsNonRoot would make the kubelet refuse it), with only the
// capabilities that init uses (imagespec.StartupCapabilities: every other
// one of the runtime's default set, NET_RAW and MKNOD among them, is
// dropped), the runtime's default seccomp profile, and can never gain more
// (no setuid; inject sets no sudo password).
func sidecarSecurityContext() item {
	caps := listOf()
	for _, c := range imagespec.StartupCapabilities {
		caps.list = append(caps.list, scalar(c))
	}
	return mapOf(
		pair("runAsUser", 0),
		pair("runAsGroup", 0),
		pair("runAsNonRoot", false),
		pair("allowPrivilegeEscalation", false),
		pair("capabilities", mapOf(pair("drop", listOf(scalar("ALL"))), pair("add", caps))),
		pair("seccompProfile", mapOf(pair("type", "RuntimeDefault"))),
	)
}

// SettingsPath is the image's code-server user settings.
const SettingsPath = imagespec.SettingsPath

// DashboardsSetting is the debugger extension's list of clusters.
const DashboardsSetting = imagespec.SettingClusterDashboards

// settingsScript rewrites the dashboard in the image's settings (python3 is
// the image's own, on PATH).
const settingsScript = `import json, sys; p = "` + SettingsPath + `"; s = json.load(open(p)); ` +
	`s["` + DashboardsSetting + `"] = [{"host": sys.argv[1], "localRoot": "` + imagespec.DebuggerLocalRoot + `"}]; ` +
	`json.dump(s, open(p, "w"), indent=2)`

func (c *config) dashboardFor(s *site) string {
	if c.dashboard != "" {
		return c.dashboard
	}
	port := strconv.Itoa(DefaultRayDashboardPort)
	if p := scalarAt(s.startParams, "dashboard-port"); p != "" {
		port = p
	}
	return "127.0.0.1:" + port
}

// codeServerIDs are the PUID and PGID code-server runs as: the Ray
// container's runAsUser and runAsGroup, else the pod's, else 1000.
func codeServerIDs(s *site) (uid, gid string) {
	uid, gid = "1000", "1000"
	for i := len(s.securityCtx) - 1; i >= 0; i-- {
		if v := scalarAt(s.securityCtx[i], "runAsUser"); v != "" {
			uid = v
		}
		if v := scalarAt(s.securityCtx[i], "runAsGroup"); v != "" {
			gid = v
		}
	}
	return uid, gid
}

// tokenVolume is the Secret volume of Ray's token: the one key projected
// to the file "token", readable by its owner (root) only.
func tokenVolume(auth *tokenSource) item {
	return mapOf(pair("name", TokenVolume), pair("secret", mapOf(
		pair("secretName", auth.secret),
		pair("items", listOf(mapOf(pair("key", auth.key), pair("path", "token")))),
		pair("defaultMode", TokenFileMode),
	)))
}

// proxyPort is TokenProxyPort, or the next port no container of the pod
// declares and that is neither the dashboard's nor the sidecar's.
func (c *config) proxyPort(s *site) int {
	taken := map[string]bool{strconv.Itoa(c.port): true}
	if _, p, err := net.SplitHostPort(c.dashboardFor(s)); err == nil {
		taken[p] = true
	}
	for _, p := range s.ports {
		taken[scalarAt(p, "containerPort")] = true
	}
	port := TokenProxyPort
	for taken[strconv.Itoa(port)] {
		port++
	}
	return port
}

// checkDashboardPort refuses a rayStartParams dashboard-port that is no
// port: it would go into the sidecar's postStart command.
func checkDashboardPort(s *site) error {
	_, v := lookup(s.startParams, "dashboard-port")
	if v == nil {
		return nil
	}
	if p, err := strconv.Atoi(v.Value); v.Kind != yaml.ScalarNode || err != nil || p < 1 || p > 65535 {
		return atLine(v, "%s.rayStartParams.dashboard-port %q: expected a port number (1-65535)", strings.TrimSuffix(strings.TrimSuffix(s.desc, ".template.spec"), ".headGroupSpec")+".headGroupSpec", v.Value)
	}
	return nil
}
