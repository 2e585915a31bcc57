package inject

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// unit is one Ray object of a document that inject edits: the document
// itself, or an item of a List (what kubectl get -o yaml prints for
// several objects).
type unit struct {
	item       int // 1-based index in the List's items; 0: the document
	kind, name string
	ns         string
}

// listItemsOf returns the items of a List document (kind List, as kubectl
// prints several objects, or <Kind>List, as the API returns them); nil for
// any other document.
func listItemsOf(root *yaml.Node) *yaml.Node {
	if root == nil || !strings.HasSuffix(scalarAt(root, "kind"), "List") {
		return nil
	}
	items := valueAt(root, "items")
	if items == nil || items.Kind != yaml.SequenceNode {
		return nil
	}
	return items
}

// pickUnit is the object of unit item in the document root.
func pickUnit(root *yaml.Node, item int) *yaml.Node {
	if item == 0 {
		return root
	}
	items := listItemsOf(root)
	if items == nil || item > len(items.Content) {
		return nil
	}
	return items.Content[item-1]
}

// rayUnits lists the Ray objects of a document: the document when it is
// one, else the Ray items of a List.
func rayUnits(root *yaml.Node) []unit {
	mk := func(obj *yaml.Node, item int) (unit, bool) {
		kind, ok := rayDoc(obj)
		meta := valueAt(obj, "metadata")
		return unit{item: item, kind: kind, name: scalarAt(meta, "name"), ns: scalarAt(meta, "namespace")}, ok
	}
	if u, ok := mk(root, 0); ok {
		return []unit{u}
	}
	items := listItemsOf(root)
	if items == nil {
		return nil
	}
	var out []unit
	for i, it := range items.Content {
		if it.Kind != yaml.MappingNode {
			continue
		}
		if u, ok := mk(it, i+1); ok {
			out = append(out, u)
		}
	}
	return out
}

// checkListAnchors refuses an anchor on a List or its items sequence: an
// alias of it elsewhere would carry the sidecar along.
func checkListAnchors(root *yaml.Node) error {
	items := listItemsOf(root)
	for _, n := range []*yaml.Node{root, items} {
		if n != nil && n.Anchor != "" {
			return atLine(n, "the List carries the anchor &%s around its items: an alias of it elsewhere would get the sidecar too; write the List out in full (no &anchor)", n.Anchor)
		}
	}
	return nil
}

// Server fields: what the API server fills in on an object it returns,
// which a manifest to apply does not carry (server-side apply refuses
// managedFields; a stale resourceVersion makes an update conflict; status
// is the controller's). The kubectl.kubernetes.io/last-applied-configuration
// annotation is kubectl apply's copy of the manifest last applied, without
// the sidecar: kubectl apply writes it anew, and kept it would only carry
// the old spec along.
var serverMetadataFields = []string{"creationTimestamp", "generation", "managedFields", "resourceVersion", "selfLink", "uid"}

// LastAppliedAnnotation is kubectl apply's record of the manifest it last
// applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// stripServer marks, in t, the server fields of obj for deletion and
// returns their paths. A field that does not sit on a line of its own in
// a block mapping is an error naming it.
func stripServer(t *text, obj *yaml.Node) ([]string, error) {
	var paths []string
	del := func(parent *yaml.Node, key, path string) error {
		k, v := lookup(parent, key)
		if k == nil {
			return nil
		}
		if parent.Style&yaml.FlowStyle != 0 || strings.TrimSpace(t.lines[k.Line-1][:k.Column-1]) != "" {
			return atLine(k, "%s is a field the API server fills in, and inject takes it out only from a block mapping where it starts its own line: take it out by hand", path)
		}
		from, to := t.pairRange(k, v)
		t.deleteLines(from, to)
		paths = append(paths, path)
		return nil
	}
	if meta := valueAt(obj, "metadata"); meta != nil && meta.Kind == yaml.MappingNode {
		for _, f := range serverMetadataFields {
			if err := del(meta, f, "metadata."+f); err != nil {
				return nil, err
			}
		}
		if _, ann := lookup(meta, "annotations"); ann != nil && ann.Kind == yaml.MappingNode {
			if k, _ := lookup(ann, LastAppliedAnnotation); k != nil {
				var err error
				if len(ann.Content) == 2 {
					// The only annotation: no empty annotations: is left.
					err = del(meta, "annotations", "metadata.annotations."+LastAppliedAnnotation)
				} else {
					err = del(ann, LastAppliedAnnotation, "metadata.annotations."+LastAppliedAnnotation)
				}
				if err != nil {
					return nil, err
				}
			}
		}
	}
	if err := del(obj, "status", "status"); err != nil {
		return nil, err
	}
	return paths, nil
}

// stripDocument takes the server fields out of the objects units name in
// chunk; it returns the new chunk and, per unit, the paths taken out.
func stripDocument(chunk []byte, units []unit) ([]byte, [][]string, error) {
	root, err := parseDoc(chunk)
	if err != nil || root == nil {
		return chunk, make([][]string, len(units)), err
	}
	if err := checkLineBreaks(chunk); err != nil {
		return nil, nil, err
	}
	t := newText(chunk)
	all := make([][]string, len(units))
	strippedAny := false
	for i, u := range units {
		obj := pickUnit(root, u.item)
		if err := checkDuplicateKeys(obj); err != nil {
			return nil, nil, err
		}
		paths, err := stripServer(t, obj)
		if err != nil {
			return nil, nil, err
		}
		all[i], strippedAny = paths, strippedAny || len(paths) > 0
	}
	if !strippedAny {
		return chunk, all, nil
	}
	out := t.render()
	if _, err := parseDoc(out); err != nil {
		return nil, nil, fmt.Errorf("after taking out the fields the API server fills in, the document does not parse (a bug in imagectl inject): %w", err)
	}
	return out, all, nil
}

// serverNote is the note for an object whose server fields were taken out:
// it was read from a cluster, where its head Pod may be running.
func serverNote(tgt Target, paths []string) string {
	return fmt.Sprintf("%s: took out what the API server fills in (%s): the output is a manifest to apply, not the object as it was read. The object exists in a cluster: applying the output changes its head pod template, but a head Pod that is already running keeps its containers; the sidecar appears when the head Pod is recreated",
		tgt, strings.Join(paths, ", "))
}

// StripServerFields takes out of every Ray object of data (a document, or
// an item of a List) what the API server fills in: status,
// metadata.resourceVersion, uid, creationTimestamp, generation,
// managedFields, selfLink and the LastAppliedAnnotation annotation. It is
// what Apply does to such an object besides adding the sidecar; every
// other byte is kept.
func StripServerFields(file string, data []byte) (*Result, error) {
	res := &Result{}
	chunks := splitDocuments(data)
	offsets := lineOffsets(chunks)
	var b strings.Builder
	for i, chunk := range chunks {
		root, err := parseDoc(chunk)
		if err != nil {
			return nil, docError(file, i+1, offsets[i], "", "", err)
		}
		units := rayUnits(root)
		for _, u := range units {
			if _, _, err := stripDocument(chunk, []unit{u}); err != nil {
				e := docError(file, i+1, offsets[i], u.kind, u.name, err)
				e.(*Error).Item = u.item
				return nil, e
			}
		}
		out, paths, err := stripDocument(chunk, units)
		if err != nil {
			return nil, docError(file, i+1, offsets[i], "", "", err)
		}
		for j, u := range units {
			if len(paths[j]) > 0 {
				tgt := Target{Document: i + 1, Item: u.item, Kind: u.kind, Name: u.name}
				res.Targets = append(res.Targets, tgt)
				res.Notes = append(res.Notes, serverNote(tgt, paths[j]))
			}
		}
		b.Write(out)
	}
	res.Output = []byte(b.String())
	res.Changed = string(res.Output) != string(data)
	return res, nil
}
