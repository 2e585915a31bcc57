package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Document is one object of a manifest, ready to apply.
type Document struct {
	Index  int // 1-based, in the stream
	Object *unstructured.Unstructured
}

func (d Document) String() string {
	return fmt.Sprintf("document %d (%s %s)", d.Index, d.Object.GetKind(), d.Object.GetName())
}

// ref is Kind/name, as kubectl prints an object.
func ref(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }

// ParseDocuments reads a YAML (or JSON) stream of Kubernetes objects, named
// file in errors. Empty documents are skipped; a List's items are taken
// one by one.
func ParseDocuments(file string, data []byte) ([]Document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []Document
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d (%s): %w", file, i, u.GetKind(), err)
			}
			for j := range l.Items {
				docs = append(docs, Document{Index: i, Object: &l.Items[j]})
			}
			continue
		}
		docs = append(docs, Document{Index: i, Object: u})
	}
	for _, d := range docs {
		if d.Object.GetAPIVersion() == "" || d.Object.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d: no apiVersion or kind: not a Kubernetes object", file, d.Index)
		}
		if d.Object.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d (%s): no metadata.name (debug applies documents by name; generateName is not supported)", file, d.Index, d.Object.GetKind())
		}
	}
	return docs, nil
}

// IsRayKind reports whether u is a RayJob, RayCluster or RayService.
func IsRayKind(u *unstructured.Unstructured) bool {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	if gv.Group != "ray.io" {
		return false
	}
	switch u.GetKind() {
	case "RayJob", "RayCluster", "RayService":
		return true
	}
	return false
}

// setNamespace puts every namespaced document in ns: a document naming
// another namespace is an error (one session, one namespace).
func setNamespace(ctx context.Context, file string, docs []Document, ns string, namespaced func(context.Context, *unstructured.Unstructured) (bool, error)) error {
	for _, d := range docs {
		ok, err := namespaced(ctx, d.Object)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, d, err)
		}
		if !ok {
			continue
		}
		switch got := d.Object.GetNamespace(); got {
		case "", ns:
			d.Object.SetNamespace(ns)
		default:
			return fmt.Errorf("%s: %s is in namespace %q, the session in %q: a session works in one namespace (pass -n %s, or remove metadata.namespace)", file, d, got, ns, got)
		}
	}
	return nil
}

// mapping finds the resource of u's kind on the server.
func (c *Cluster) mapping(ctx context.Context, u *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := u.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) && gvk.Group == "ray.io" {
			return nil, fmt.Errorf("the cluster at %s does not serve %s: is the KubeRay operator (its CRDs) installed? %w", c.Host, gvk, err)
		}
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	return m, nil
}

func (c *Cluster) namespaced(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	m, err := c.mapping(ctx, u)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resource is the dynamic client for u's kind in u's namespace.
func (c *Cluster) resource(ctx context.Context, u *unstructured.Unstructured) (resourceClient, error) {
	m, err := c.mapping(ctx, u)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// resourceClient is the part of dynamic.ResourceInterface a session uses.
type resourceClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error
}

// Get returns u's object as the server has it, or nil when there is none.
func (c *Cluster) Get(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ctx = withWarnedObject(ctx, ref(u))
	rc, err := c.resource(ctx, u)
	if err != nil {
		return nil, err
	}
	cur, err := rc.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		return cur, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, c.explain(err, "get", u)
}

// pollGone reads an object being deleted every 500 ms, through look, until
// it is gone (look finds none, or one of another UID than uid: created
// again since) or ctx ends. A look that fails is tried again. When no
// look saw the object in the last lookWindow (the looks failed), the error
// says so (a *LookError); a look the approaching deadline itself fails
// (client-go's rate limiter refuses a request it could not send in time)
// does not hide a recent sighting.
func pollGone(ctx context.Context, uid types.UID, look func(context.Context) (found bool, cur types.UID, err error)) error {
	var last error
	var seen time.Time
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		found, cur, err := look(ctx)
		switch {
		case err != nil:
			last = err
			return false, nil // the next poll asks again
		case !found:
			return true, nil
		}
		seen = time.Now()
		return uid != "" && cur != uid, nil
	})
	if err != nil && last != nil && time.Since(seen) > lookWindow {
		return &LookError{Err: err, Last: last}
	}
	return err
}

// lookWindow is how recent a look that saw the object must be for a wait
// that timed out to say the object is still there.
const lookWindow = 3 * time.Second

// LookError is a wait that ended while its last look at the object had
// failed, so whether the object was still there is not known.
type LookError struct {
	Err  error // why the wait ended (ctx's error)
	Last error // the last look's
}

func (e *LookError) Error() string {
	return fmt.Sprintf("%v (the last look at it failed: %v)", e.Err, e.Last)
}

func (e *LookError) Unwrap() []error { return []error{e.Err, e.Last} }

// Apply applies u server-side with FieldManager and strict field
// validation, without forcing conflicts.
func (c *Cluster) Apply(ctx context.Context, u *unstructured.Unstructured) error {
	return c.apply(ctx, u, false)
}

// DryRunApply is Apply as a server-side dry run: the API server
// authorizes it (patch, and create when u does not exist yet), admits and
// validates it as it would the apply, and stores nothing.
func (c *Cluster) DryRunApply(ctx context.Context, u *unstructured.Unstructured) error {
	return c.apply(ctx, u, true)
}

func (c *Cluster) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	rc, err := c.resource(ctx, u)
	if err != nil {
		return err
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("%s: %w", ref(u), err)
	}
	ctx = withWarnedObject(ctx, ref(u))
	opts := metav1.PatchOptions{FieldManager: FieldManager, FieldValidation: "Strict"}
	verb := "apply"
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		verb = "apply (server-side dry run)"
	}
	if _, err = rc.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return c.explain(err, verb, u)
	}
	return nil
}

// Delete deletes u's object. A Ray object is deleted in the foreground,
// so that a RayJob's cluster goes with it (and the object stays, with a
// deletionTimestamp, until it has); any other in the background, so that
// it goes at once. A missing object is not an error.
func (c *Cluster) Delete(ctx context.Context, u *unstructured.Unstructured) error {
	ctx = withWarnedObject(ctx, ref(u))
	rc, err := c.resource(ctx, u)
	if err != nil {
		return err
	}
	policy := metav1.DeletePropagationBackground
	if u.GroupVersionKind().Group == RayJobs.Group {
		policy = metav1.DeletePropagationForeground
	}
	if err := rc.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return c.explain(err, "delete", u)
	}
	return nil
}

// explain makes an API error say what was refused: the verb, the object,
// the namespace and, for RBAC, who asked.
func (c *Cluster) explain(err error, verb string, u *unstructured.Unstructured) error {
	where := ref(u)
	if ns := u.GetNamespace(); ns != "" {
		where += " in namespace " + ns
	}
	apply := strings.HasPrefix(verb, "apply")
	switch {
	case apierrors.IsForbidden(err):
		scope := fmt.Sprintf("in namespace %q", u.GetNamespace())
		if u.GetNamespace() == "" {
			scope = "cluster-wide"
		}
		return fmt.Errorf("%s %s: forbidden by the cluster's RBAC or admission (ask for %s on %s %s): %w",
			verb, where, verbsFor(verb), resourceName(u), scope, err)
	case apierrors.IsConflict(err) && apply:
		return fmt.Errorf("%s %s: fields are owned by another manager (kubectl, the operator); debug does not force them: %w", verb, where, err)
	case apierrors.IsNotFound(err) && apply && u.GetNamespace() != "":
		return fmt.Errorf("%s %s: %w (does namespace %q exist?)", verb, where, err, u.GetNamespace())
	}
	return fmt.Errorf("%s %s: %w", verb, where, err)
}

// verbsFor are the RBAC verbs a request of verb needs: a server-side apply
// is a patch, and creates the object (the API server then authorizes
// create as well).
func verbsFor(verb string) string {
	if strings.HasPrefix(verb, "apply") {
		return `"create" and "patch"`
	}
	return fmt.Sprintf("%q", verb)
}

func resourceName(u *unstructured.Unstructured) string {
	r := strings.ToLower(u.GetKind()) + "s"
	if g := u.GroupVersionKind().Group; g != "" {
		r += "." + g
	}
	return r
}
