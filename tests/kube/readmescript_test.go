package kube

import (
	"strings"
	"testing"
)

// TestReadmeScriptWithoutACluster builds, without a cluster, the script
// TestReadmeDebugFlow runs from docs/inject.md's manual steps: every step
// is recognised (readmeScript fails otherwise), every kubectl line names
// the namespace, and the lookups retry until they print a name.
func TestReadmeScriptWithoutACluster(t *testing.T) {
	script, rest := readmeScript(t, nil)
	t.Logf("script:\n%s\nrest:\n%s", strings.Join(script, "\n"), strings.Join(rest, "\n"))
	for _, l := range append(append([]string{}, script...), rest...) {
		if strings.Contains(l, "kubectl ") && !strings.Contains(l, ` -n "$NS" `) {
			t.Errorf("a kubectl line without -n \"$NS\": %s", l)
		}
	}
	for _, v := range []string{"CLUSTER", "HEAD"} {
		found := false
		for _, l := range script {
			if strings.HasPrefix(l, "for i in ") && strings.Contains(l, v+"=$(kubectl ") && strings.Contains(l, `test -n "$`+v+`"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no retried %s lookup in the script", v)
		}
	}
	if len(rest) == 0 || !strings.Contains(rest[0], "--for=condition=Ready") {
		t.Errorf("the script does not stop at the Ready wait: rest %q", rest)
	}
}
