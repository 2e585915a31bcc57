package imagespec

// Tag is one rendered tag of an image (one matrix.yaml tag template).
type Tag struct {
	Name string
	// Floating tags (ray2.46, latest) name a combination and move to each
	// newer verified build (imagectl release moves them). The others are
	// immutable: they carry the inputs digest and, once written, are never
	// moved to another image.
	Floating bool
}

// Tags are an image's rendered tags in matrix.yaml template order. Both
// build and release get them from resolve.RenderTags and split them with
// these methods, so they always agree on what is pushed:
//   - build --push writes every Immutable tag (never a floating one);
//   - release writes every Immutable tag, then moves the Floating ones;
//   - Versioned, the first immutable tag, is the one plan and build's
//     published check read back to decide whether the inputs are published.
type Tags []Tag

// Names are every tag, in template order (the value of Set.Tags).
func (ts Tags) Names() []string {
	return ts.names(func(Tag) bool { return true })
}

// Immutable are the immutable tags, in template order.
func (ts Tags) Immutable() []string {
	return ts.names(func(t Tag) bool { return !t.Floating })
}

// Floating are the floating tags, in template order.
func (ts Tags) Floating() []string {
	return ts.names(func(t Tag) bool { return t.Floating })
}

// Versioned is the first immutable tag, or "" when there is none.
func (ts Tags) Versioned() string {
	for _, t := range ts {
		if !t.Floating {
			return t.Name
		}
	}
	return ""
}

func (ts Tags) names(keep func(Tag) bool) []string {
	var out []string
	for _, t := range ts {
		if keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}
