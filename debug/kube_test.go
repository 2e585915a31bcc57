package debug

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAPIWarnings: a Warning header of the API server reaches the function
// OnWarning set, through the clients Connect makes, naming the object a
// request was for, once per object and text; other codes, and warnings
// before OnWarning, are dropped.
func TestAPIWarnings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Warning", `299 - "v1 Pods are deprecated here"`)
		w.Header().Add("Warning", `199 - "miscellaneous"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"}}`)
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: ns}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n", srv.URL)
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(KubeFlags{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(ctx context.Context) {
		t.Helper()
		if _, err := c.Core.GetPod(ctx, "ns", "p"); err != nil {
			t.Fatal(err)
		}
	}
	get(ctx) // before OnWarning: dropped
	var got []string
	c.OnWarning(func(object, text string) { got = append(got, object+"|"+text) })
	get(ctx)
	get(ctx)
	get(withWarnedObject(ctx, "RayJob/j"))
	get(withWarnedObject(ctx, "RayJob/j"))
	want := []string{"|v1 Pods are deprecated here", "RayJob/j|v1 Pods are deprecated here"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
