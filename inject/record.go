package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// RecordEnv names the environment variable of the sidecar that records, as
// JSON, everything inject added to the head pod: the sidecar itself, the
// Ray container's /tmp/ray mount, the /tmp/ray volume and the image pull
// secret, each with how it was added. Remove takes out exactly what the
// record lists and finds only in the head pod, so nothing else (the Ray
// container, worker groups, other documents) is ever taken out, whatever
// comments the input carries.
const RecordEnv = "IMAGECTL_INJECTED"

// Ways an item was added to a list.
const (
	addAppended = "appended" // after the items of an existing block list
	addCreated  = "created"  // the list's key did not exist
	addReplaced = "replaced" // the key's line ("key: []" or "key:") was rewritten
)

// record is what inject added to one head pod.
type record struct {
	Added []recordEntry `json:"added"`
}

// recordEntry is one item added to a list.
type recordEntry struct {
	List string `json:"list"` // the list's key: containers, sidecarContainers, volumeMounts, volumes, imagePullSecrets
	Name string `json:"name"` // the item's name
	How  string `json:"how"`  // addAppended, addCreated or addReplaced
	Line string `json:"line,omitempty"`
}

func (r record) encode() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func decodeRecord(s string) (record, error) {
	var r record
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, err
	}
	seen := map[[2]string]bool{}
	for _, e := range r.Added {
		if seen[[2]string{e.List, e.Name}] {
			return r, fmt.Errorf("%s %q is listed twice", e.List, e.Name)
		}
		seen[[2]string{e.List, e.Name}] = true
		switch {
		case e.Name == "":
			return r, fmt.Errorf("an entry of list %q has no name", e.List)
		case e.How != addAppended && e.How != addCreated && e.How != addReplaced:
			return r, fmt.Errorf("entry %s %q: how %q: expected %s, %s or %s", e.List, e.Name, e.How, addAppended, addCreated, addReplaced)
		case (e.How == addReplaced) != (e.Line != ""):
			return r, fmt.Errorf("entry %s %q: a replaced key needs its original line, and only a replaced one", e.List, e.Name)
		}
	}
	return r, nil
}

// addition is one item to add to the list under key of the mapping m
// (with more after it: the token volume beside the /tmp/ray volume).
type addition struct {
	m, k, v *yaml.Node
	key     string
	it      item
	more    []item
	entry   recordEntry
}

// planItem says how it (named name) is to be added to the block sequence
// under key of the mapping m: appended, with the key added when missing,
// or with an empty "key: []" (or "key:") line rewritten as a block
// sequence. It changes nothing yet.
func planItem(t *text, m *yaml.Node, key, name string, it item, where string) (*addition, error) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: expected a mapping to add %s to", where, key)
	}
	if m.Style&yaml.FlowStyle != 0 {
		return nil, atLine(m, "%s is a flow mapping ({...}); write it as a block mapping so %s can be added", where, key)
	}
	k, v := lookup(m, key)
	a := &addition{m: m, k: k, v: v, key: key, it: it, entry: recordEntry{List: key, Name: name}}
	switch {
	case v == nil:
		a.entry.How = addCreated
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0:
		a.entry.How = addAppended
	case (v.Kind == yaml.SequenceNode && len(v.Content) == 0) || (v.Kind == yaml.ScalarNode && v.Tag == "!!null"):
		l := k.Line - 1
		if v.Line != k.Line || strings.TrimSpace(t.lines[l][:k.Column-1]) != "" {
			return nil, atLine(k, "%s.%s: expected the empty list on a line of its own (%s: [])", where, key, key)
		}
		a.entry.How, a.entry.Line = addReplaced, t.lines[l]
	case v.Kind == yaml.SequenceNode:
		return nil, atLine(v, "%s.%s is a flow sequence ([...]); write it as a block sequence (one \"- \" item per line) so inject can add to it", where, key)
	default:
		return nil, atLine(v, "%s.%s: expected a list, found %s", where, key, kindName(v))
	}
	return a, nil
}

// column is where the addition's lines start: the keys of the mapping it
// adds a key to, or the dashes of the list it appends to.
func (a *addition) column() int {
	if a.entry.How == addAppended {
		return a.v.Column
	}
	return a.m.Column
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// apply makes the addition in t.
func (a *addition) apply(t *text, st style) {
	items := append([]item{a.it}, a.more...)
	switch a.entry.How {
	case addCreated:
		// "key:" after the mapping's last line, at its keys' column.
		t.insertAfter(t.nodeEnd(a.m), st.emitPair(a.m.Column-1, kv{a.key, listOf(items...)}, "")...)
	case addAppended:
		ist := st
		if first := a.v.Content[0]; first.Kind == yaml.MappingNode && first.Column > a.v.Column+1 {
			ist.step = a.v.Content[0].Column - a.v.Column
		}
		var lines []string
		for _, it := range items {
			lines = append(lines, ist.emitItem(a.v.Column-1, it, "")...)
		}
		t.insertAfter(t.nodeEnd(a.v), lines...)
	case addReplaced:
		t.replaced[a.k.Line-1] = strings.Join(st.emitPair(a.k.Column-1, kv{a.key, listOf(items...)}, ""), t.eol)
	}
}

// recordedSite is where Remove looks in one document: the mappings that
// hold each list inject adds to.
type recordedSite struct {
	desc    string
	holders map[string]*yaml.Node // list key -> the mapping holding it
	list    *yaml.Node            // the container list the sidecar is in
	first   int                   // the first index of list that may be the sidecar
	// What may mount the pod's volumes: the container lists of pod, the
	// mapping holding the Ray container's volumeMounts when it is no
	// container of those lists (Helm values' head), the autoscaler's
	// options.
	pod            *yaml.Node
	containerLists []string
	rayMounts      *yaml.Node
	autoscaler     *yaml.Node
}

// findRecordedSite locates the head pod without judging it; nil when the
// document has none.
func findRecordedSite(root *yaml.Node, kind string, helm bool) *recordedSite {
	if helm {
		head := valueAt(root, "head")
		if head == nil || head.Kind != yaml.MappingNode {
			return nil
		}
		return &recordedSite{desc: "head", list: valueAt(head, "sidecarContainers"), holders: map[string]*yaml.Node{
			"sidecarContainers": head, "volumeMounts": head, "volumes": head, "imagePullSecrets": root, "initContainers": head},
			pod: head, containerLists: []string{"sidecarContainers", "initContainers"}, rayMounts: head,
			autoscaler: valueAt(root, "autoscalerOptions")}
	}
	path := append(headTemplatePath(kind), "spec")
	pod := valueAt(root, path...)
	if pod == nil || pod.Kind != yaml.MappingNode {
		return nil
	}
	list := valueAt(pod, "containers")
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil
	}
	ray := list.Content[0]
	return &recordedSite{desc: strings.Join(path, "."), list: list, first: 1, holders: map[string]*yaml.Node{
		"containers": pod, "volumeMounts": ray, "volumes": pod, "imagePullSecrets": pod, "initContainers": pod},
		pod: pod, containerLists: []string{"containers", "initContainers", "ephemeralContainers"},
		autoscaler: valueAt(clusterOf(root, kind), "autoscalerOptions")}
}

// removeRecorded takes out, in t, what the record of the head pod's
// sidecar lists; it reports whether there was a record.
func removeRecorded(t *text, root *yaml.Node, kind string, helm bool) (bool, error) {
	rs := findRecordedSite(root, kind, helm)
	if rs == nil || rs.list == nil || rs.list.Kind != yaml.SequenceNode {
		return false, nil
	}
	var sidecar, recNode *yaml.Node
	for i, ct := range rs.list.Content {
		if i < rs.first {
			continue
		}
		env := valueAt(ct, "env")
		if env == nil || env.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range env.Content {
			if scalarAt(e, "name") != RecordEnv {
				continue
			}
			if sidecar != nil {
				return false, atLine(ct, "%s: two containers carry the %s record (lines %d and %d): take one out by hand", rs.desc, RecordEnv, sidecar.Line, ct.Line)
			}
			sidecar, recNode = ct, valueAt(e, "value")
		}
	}
	if sidecar == nil {
		return false, nil
	}
	if recNode == nil || recNode.Kind != yaml.ScalarNode {
		return false, atLine(sidecar, "%s: the %s record of container %q has no value", rs.desc, RecordEnv, scalarAt(sidecar, "name"))
	}
	rec, err := decodeRecord(recNode.Value)
	if err != nil {
		return false, atLine(recNode, "%s: the %s record of container %q: %w", rs.desc, RecordEnv, scalarAt(sidecar, "name"), err)
	}
	// First judge every item the record lists; take nothing out unless
	// all of them may go.
	type removal struct {
		e        recordEntry
		k, v, it *yaml.Node
	}
	var plan []removal
	ownList := 0
	inList := map[string]string{}
	for _, e := range rec.Added {
		m, ok := rs.holders[e.List]
		if !ok {
			return false, atLine(recNode, "%s: the %s record lists %s %q: inject adds nothing there", rs.desc, RecordEnv, e.List, e.Name)
		}
		k, v := lookup(m, e.List)
		if v == nil || v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 {
			return false, atLine(recNode, "%s: the %s record lists %s %q, and there is no block list %s", rs.desc, RecordEnv, e.List, e.Name, e.List)
		}
		var it *yaml.Node
		if v == rs.list {
			ownList++
			if scalarAt(sidecar, "name") != e.Name {
				return false, atLine(recNode, "%s: the %s record of container %q names the sidecar %q", rs.desc, RecordEnv, scalarAt(sidecar, "name"), e.Name)
			}
			it = sidecar
		} else {
			for _, c := range v.Content {
				if scalarAt(c, "name") == e.Name && (isOwnItem(e.List, c) || e.List == "initContainers" && isConfigInit(c, e.Name)) {
					it = c
				}
			}
		}
		if it == nil {
			return false, atLine(recNode, "%s: the %s record lists %s %q as added by inject, and %s has no such item as inject writes it: put it back, or take the sidecar out by hand", rs.desc, RecordEnv, e.List, e.Name, e.List)
		}
		if e.How == addReplaced {
			want := strings.Repeat(" ", k.Column-1) + e.List + ":"
			if !strings.HasPrefix(e.Line, want) || strings.ContainsAny(e.Line, "\r\n") {
				return false, atLine(recNode, "%s: the %s record's line for %s is %q, not the key %q on a line of its own", rs.desc, RecordEnv, e.List, e.Line, want)
			}
		}
		if e.How == addAppended && len(v.Content) == 1 {
			// Appended after the items there were: one must be left.
			return false, atLine(recNode, "%s: the %s record lists %s %q as appended to %s, and it is the list's only item: taking it out would leave an empty %s: key, so inject did not add it; take the sidecar out by hand", rs.desc, RecordEnv, e.List, e.Name, e.List, e.List)
		}
		// One item per list, but for the token volume (TokenVolume) and a
		// restricted sidecar's emptyDirs (one per mount path) beside the
		// /tmp/ray volume.
		key := e.List
		if e.List == "volumes" && e.Name == TokenVolume {
			key = "token volume"
		}
		if e.List == "volumes" {
			if p, ok := restrictedMountOf(sidecar, e.Name); ok {
				key = "volume for " + p
			}
		}
		if other, ok := inList[key]; ok {
			return false, atLine(recNode, "%s: the %s record lists %s %q as well as %q: inject adds one item to each list (and the token volume %s, or a restricted sidecar's emptyDirs, to volumes); take the sidecar out by hand", rs.desc, RecordEnv, e.List, e.Name, other, TokenVolume)
		}
		inList[key] = e.Name
		plan = append(plan, removal{e: e, k: k, v: v, it: it})
	}
	// Two items appended to one list (the /tmp/ray and token volumes)
	// leave one behind too.
	appended := map[*yaml.Node]int{}
	for _, r := range plan {
		if r.e.How == addAppended {
			if appended[r.v]++; appended[r.v] == len(r.v.Content) {
				return false, atLine(recNode, "%s: the %s record lists every item of %s as appended to it: taking them out would leave an empty %s: key, so inject did not add them all; take the sidecar out by hand", rs.desc, RecordEnv, r.e.List, r.e.List)
			}
		}
	}
	if ownList != 1 {
		return false, atLine(recNode, "%s: the %s record of container %q does not list it once", rs.desc, RecordEnv, scalarAt(sidecar, "name"))
	}
	// The mount and the volumes inject adds are those the sidecar uses:
	// its /tmp/ray volume and its token volume.
	sidecarVolume, tokenVolume := "", ""
	if mounts := valueAt(sidecar, "volumeMounts"); mounts != nil {
		for _, mt := range mounts.Content {
			switch strings.TrimRight(scalarAt(mt, "mountPath"), "/") {
			case RayTmp:
				sidecarVolume = scalarAt(mt, "name")
			case TokenMountPath:
				tokenVolume = scalarAt(mt, "name")
			}
		}
	}
	removing := map[*yaml.Node]bool{}
	for _, r := range plan {
		removing[r.it] = true
	}
	for _, r := range plan {
		if r.e.List != "volumeMounts" && r.e.List != "volumes" {
			continue
		}
		if _, ok := restrictedMountOf(sidecar, r.e.Name); ok && r.e.List == "volumes" && !isTokenVolume(r.it) {
			// A restricted sidecar's emptyDir: the sidecar mounts it, and
			// isOwnItem found it an emptyDir.
			if err := checkNotMounted(rs, recNode, r.e, sidecar, removing); err != nil {
				return false, err
			}
			continue
		}
		token := r.e.List == "volumes" && r.e.Name == TokenVolume
		if token && (r.e.Name != tokenVolume || !isTokenVolume(r.it)) {
			return false, atLine(recNode, "%s: the %s record lists %s %q, but the sidecar %q does not mount it at %s, or it is not the Secret volume inject writes: take the sidecar out by hand", rs.desc, RecordEnv, r.e.List, r.e.Name, scalarAt(sidecar, "name"), TokenMountPath)
		}
		if !token && r.e.Name != sidecarVolume {
			return false, atLine(recNode, "%s: the %s record lists %s %q, but the sidecar %q mounts /tmp/ray from %q: inject adds only the mount and the volume the sidecar uses; take the sidecar out by hand", rs.desc, RecordEnv, r.e.List, r.e.Name, scalarAt(sidecar, "name"), sidecarVolume)
		}
		if !token && r.e.List == "volumes" && isTokenVolume(r.it) {
			return false, atLine(recNode, "%s: the %s record lists the volume %q, a Secret volume, as the /tmp/ray volume: take the sidecar out by hand", rs.desc, RecordEnv, r.e.Name)
		}
		if r.e.List != "volumes" {
			continue
		}
		if err := checkNotMounted(rs, recNode, r.e, sidecar, removing); err != nil {
			return false, err
		}
	}
	// A list inject created (or whose empty line it replaced) goes whole
	// when every item left in it is one inject added.
	removed := map[*yaml.Node]int{}
	for _, r := range plan {
		removed[r.v]++
	}
	whole := map[*yaml.Node]bool{}
	for _, r := range plan {
		if r.e.How != addAppended && removed[r.v] == len(r.v.Content) {
			if whole[r.v] {
				continue
			}
			whole[r.v] = true
			from, to := t.pairRange(r.k, r.v)
			t.deleteLines(from, to)
			if r.e.How == addReplaced {
				delete(t.deleted, from)
				t.replaced[from] = r.e.Line
			}
			continue
		}
		from, to := t.itemRange(r.v, r.it)
		t.deleteLines(from, to)
	}
	return true, nil
}

// checkNotMounted refuses to take out the volume of e while something
// that stays (neither the sidecar nor an item being removed) mounts it.
func checkNotMounted(rs *recordedSite, recNode *yaml.Node, e recordEntry, sidecar *yaml.Node, removing map[*yaml.Node]bool) error {
	for _, ref := range rs.volumeUsers() {
		if ref.container == sidecar || removing[ref.container] {
			continue
		}
		for _, mt := range ref.mounts {
			if !removing[mt] && scalarAt(mt, "name") == e.Name {
				return atLine(recNode, "%s: the %s record lists %s %q as added by inject, but %s still mounts it (line %d): taking it out would leave that mount dangling; take the sidecar out by hand", rs.desc, RecordEnv, e.List, e.Name, ref.desc, mt.Line)
			}
		}
	}
	return nil
}

// restrictedMountOf reports whether the sidecar mounts the volume name at
// one of a restricted sidecar's emptyDir paths, and which.
func restrictedMountOf(sidecar *yaml.Node, name string) (string, bool) {
	mounts := valueAt(sidecar, "volumeMounts")
	if mounts == nil || mounts.Kind != yaml.SequenceNode {
		return "", false
	}
	for _, mt := range mounts.Content {
		if scalarAt(mt, "name") != name {
			continue
		}
		p := strings.TrimRight(scalarAt(mt, "mountPath"), "/")
		for _, m := range restrictedMounts {
			if p == m.path {
				return p, true
			}
		}
	}
	return "", false
}

// volumeUser is a container (or the autoscaler's options) that mounts
// volumes of the head pod.
type volumeUser struct {
	desc      string
	container *yaml.Node   // the container mapping; nil for autoscalerOptions
	mounts    []*yaml.Node // its volumeMounts and volumeDevices items
}

// volumeUsers lists everything in the document that mounts the head pod's
// volumes: every container, init container and ephemeral container of the
// pod (for Helm values: head.volumeMounts, head.sidecarContainers,
// head.initContainers), and the autoscaler's volumeMounts.
func (rs *recordedSite) volumeUsers() []volumeUser {
	var out []volumeUser
	add := func(desc string, ct *yaml.Node) {
		u := volumeUser{desc: desc, container: ct}
		for _, key := range []string{"volumeMounts", "volumeDevices"} {
			if l := valueAt(ct, key); l != nil && l.Kind == yaml.SequenceNode {
				u.mounts = append(u.mounts, l.Content...)
			}
		}
		out = append(out, u)
	}
	for _, key := range rs.containerLists {
		l := valueAt(rs.pod, key)
		if l == nil || l.Kind != yaml.SequenceNode {
			continue
		}
		for i, ct := range l.Content {
			add(fmt.Sprintf("%s[%d] %q", key, i, scalarAt(ct, "name")), ct)
		}
	}
	if rs.rayMounts != nil {
		add("the Ray container (head.volumeMounts)", rs.rayMounts)
	}
	if rs.autoscaler != nil {
		add("autoscalerOptions", rs.autoscaler)
	}
	return out
}

// isOwnItem reports whether an item of list is one inject writes: the
// /tmp/ray mount, an emptyDir volume, an image pull secret.
func isOwnItem(list string, n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys[n.Content[i].Value] = n.Content[i+1]
	}
	switch list {
	case "volumeMounts":
		return len(keys) == 2 && scalarAt(n, "mountPath") == RayTmp
	case "volumes":
		ed := keys["emptyDir"]
		return len(keys) == 2 && (ed != nil && ed.Kind == yaml.MappingNode && len(ed.Content) == 0 || isTokenVolume(n))
	case "imagePullSecrets":
		return len(keys) == 1
	}
	return false
}

// isTokenVolume reports whether n is a volume as inject writes the token
// volume: a name and a secret with secretName, one item projected to the
// file "token", and defaultMode TokenFileMode.
func isTokenVolume(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.MappingNode || len(n.Content) != 4 {
		return false
	}
	sec := valueAt(n, "secret")
	items := valueAt(sec, "items")
	if sec == nil || sec.Kind != yaml.MappingNode || len(sec.Content) != 6 || scalarAt(sec, "secretName") == "" ||
		scalarAt(sec, "defaultMode") != strconv.Itoa(TokenFileMode) || items == nil || items.Kind != yaml.SequenceNode || len(items.Content) != 1 {
		return false
	}
	it := items.Content[0]
	return it.Kind == yaml.MappingNode && len(it.Content) == 4 && scalarAt(it, "key") != "" && scalarAt(it, "path") == "token"
}

// checkDuplicateKeys refuses a mapping that has a key twice: Kubernetes
// (and Helm) keep the last, inject would edit the first.
func checkDuplicateKeys(n *yaml.Node) error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if first, dup := seen[k.Value]; dup {
				return atLine(k, "key %q given twice in one mapping (first at line %d of the document): Kubernetes keeps the last one; keep one of them", k.Value, first.Line)
			}
			seen[k.Value] = k
		}
	}
	for _, c := range n.Content {
		if err := checkDuplicateKeys(c); err != nil {
			return err
		}
	}
	return nil
}

// checkNoAnchors refuses anchors, aliases and merge keys where inject
// edits: an anchor on the head pod template (or anything in it, or above
// it) may be reused elsewhere (template: *shared in a worker group, Helm's
// worker: {<<: *h}), and inject would then add the sidecar there too; an
// alias or a merge key in it hides what inject edits. Lines are counted in
// the document.
func checkNoAnchors(root *yaml.Node, s *site, pullSecret bool) error {
	const fix = "inject edits the head pod only, so write the head's part out in full (no &anchor, *alias or <<: merge)"
	// Above the head: an anchor there covers the head too.
	var walkUp func(n *yaml.Node, path []string) error
	walkUp = func(n *yaml.Node, path []string) error {
		if n == nil || n == s.top {
			return nil
		}
		if n.Anchor != "" {
			return atLine(n, "%s carries the anchor &%s, and the head pod template is inside it: an alias of it elsewhere would get the sidecar too; %s", strings.Join(path, "."), n.Anchor, fix)
		}
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if contains(n.Content[i+1], s.top) {
				return walkUp(n.Content[i+1], append(path, n.Content[i].Value))
			}
		}
		return nil
	}
	if root.Anchor != "" {
		return atLine(root, "the document carries the anchor &%s; %s", root.Anchor, fix)
	}
	if err := walkUp(root, nil); err != nil {
		return err
	}
	var walk func(n *yaml.Node, where string) error
	walk = func(n *yaml.Node, where string) error {
		switch {
		case n.Anchor != "":
			return atLine(n, "the anchor &%s in %s: another place may reuse it (*%s, <<: *%s) and would get the sidecar too; %s", n.Anchor, where, n.Anchor, n.Anchor, fix)
		case n.Kind == yaml.AliasNode:
			return atLine(n, "the alias *%s in %s; %s", n.Value, where, fix)
		case n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
					return atLine(k, "the merge key <<: in %s; %s", where, fix)
				}
			}
		}
		for _, c := range n.Content {
			if err := walk(c, where); err != nil {
				return err
			}
		}
		return nil
	}
	where := "the head pod template"
	if s.top != nil && s.top == s.pod {
		where = "head"
	}
	if s.top != nil {
		if err := walk(s.top, where); err != nil {
			return err
		}
	}
	if ps := valueAt(s.pullSecretsOf, "imagePullSecrets"); pullSecret && ps != nil && s.pullSecretsOf != s.pod {
		if err := walk(ps, "imagePullSecrets"); err != nil {
			return err
		}
	}
	return nil
}

// contains reports whether n is or holds target.
func contains(n, target *yaml.Node) bool {
	if n == target {
		return true
	}
	for _, c := range n.Content {
		if contains(c, target) {
			return true
		}
	}
	return false
}

// checkLineBreaks refuses a document with a line break other than "\n"
// and "\r\n" (a lone "\r", NEL, U+2028, U+2029): YAML counts lines at
// them, inject's line edits would not.
func checkLineBreaks(chunk []byte) error {
	line := 1
	for i, r := range string(chunk) {
		switch {
		case r == '\n':
			line++
		case r == '\r' && (i+1 == len(chunk) || chunk[i+1] != '\n'), r == 0x85, r == 0x2028, r == 0x2029:
			return &lineError{line: line, err: fmt.Errorf("a line break %U that is not \\n or \\r\\n: inject edits lines ending in \\n or \\r\\n; write it as an escape in a double-quoted string (\"\\r\", \"\\u2028\")", r)}
		}
	}
	return nil
}
