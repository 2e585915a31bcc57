package contract_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/contract"
	"github.com/imagectl/imagectl/extensions/vsix"
)

// The stand-in of 0.1.6 (testdata/shape-0.1.6/README.md): the image's
// assumptions in the minified shapes of 0.1.6's dist/extension.js, not its
// code.
const (
	shapeDir = "testdata/shape-0.1.6"
	mainFile = "extension/dist/extension.js"
)

func readShape(t testing.TB) (pj, js string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shapeDir, "extension", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := os.ReadFile(filepath.Join(shapeDir, mainFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), string(j)
}

// mkVSIX packs package.json and the main script as a VSIX of version.
func mkVSIX(t *testing.T, version, pj, js string) []byte {
	t.Helper()
	pj = strings.Replace(pj, `"version": "0.1.6"`, `"version": "`+version+`"`, 1)
	manifest := `<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata><Identity Language="en-US" Id="ray-distributed-debugger" Version="` + version + `" Publisher="anyscalecompute" /><Properties><Property Id="Microsoft.VisualStudio.Code.Engine" Value="^1.66.0" /></Properties></Metadata></PackageManifest>`
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{vsix.ManifestPath, manifest},
		{vsix.PackageJSONPath, pj},
		{mainFile, js},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestShapeOf016Holds: the contract, as the probe and the image's settings
// hold it now, is what 0.1.6's code does.
func TestShapeOf016Holds(t *testing.T) {
	pj, js := readShape(t)
	if ds := contract.Check([]byte(pj), mainFile, []byte(js)); len(ds) > 0 {
		for _, d := range ds {
			t.Errorf("difference in the shape of 0.1.6: %s", d)
		}
	}
	b := mkVSIX(t, "0.1.6", pj, js)
	if err := contract.CheckVSIX(context.Background(), bytes.NewReader(b), int64(len(b)), vsix.Limits{}); err != nil {
		t.Errorf("CheckVSIX: %v", err)
	}
}

// edit is one change to the stand-in: old (which must occur in the file)
// replaced by new, everywhere.
type edit struct {
	name     string
	inPJ     bool
	old, new string
	// want are the phrases the one difference must hold.
	want []string
}

var edits = []edit{
	{name: "key renamed in the code", old: `get("anyscalecompute.ray-distributed-debugger.clusterDashboards")`, new: `get("anyscalecompute.ray-distributed-debugger.clusters")`,
		want: []string{"setting", "never reads anyscalecompute.ray-distributed-debugger.clusterDashboards"}},
	{name: "key renamed in package.json", inPJ: true, old: `"anyscalecompute.ray-distributed-debugger.clusterDashboards"`, new: `"anyscalecompute.ray-distributed-debugger.clusters"`,
		want: []string{vsix.PackageJSONPath, "declares no anyscalecompute.ray-distributed-debugger.clusterDashboards", "anyscalecompute.ray-distributed-debugger.clusters"}},
	{name: "entries read without localRoot", old: `new c(e.host,e.localRoot)`, new: `new c(e.host,e.folder)`,
		want: []string{"not read as {host, localRoot}", "e.folder"}},
	{name: "?? to || before the attach", old: `r.localRoot??"${workspaceFolder}"`, new: `r.localRoot||"${workspaceFolder}"`,
		want: []string{"localRoot default", `r.localRoot||"${workspaceFolder}"`, "with ||, want ??"}},
	{name: "?? to || in the cluster's constructor", old: `this.localRoot=t??"${workspaceFolder}"`, new: `this.localRoot=t||"${workspaceFolder}"`,
		want: []string{"localRoot default", `this.localRoot=t||"${workspaceFolder}"`, "with ||, want ??"}},
	{name: "remoteRoot . changed", old: `remoteRoot:"."`, new: `remoteRoot:"./src"`,
		want: []string{"attach configuration", `pathMappings[0].remoteRoot is "./src", want "."`}},
	{name: "second remoteRoot a constant", old: `{localRoot:o,remoteRoot:o}`, new: `{localRoot:o,remoteRoot:"/tmp/ray"}`,
		want: []string{`pathMappings[1].remoteRoot is "/tmp/ray", want the cluster's localRoot`}},
	{name: "second remoteRoot another variable", old: `{localRoot:o,remoteRoot:o}`, new: `{localRoot:o,remoteRoot:u}`,
		want: []string{"pathMappings[1].remoteRoot is u, want o, the cluster's localRoot used elsewhere"}},
	{name: "one path mapping", old: `,{localRoot:o,remoteRoot:o}]`, new: `]`,
		want: []string{"pathMappings has 1 entries, want 2"}},
	{name: "localRoot not the setting's", old: `pathMappings:[{localRoot:o,remoteRoot:"."},{localRoot:o,remoteRoot:o}]`, new: `pathMappings:[{localRoot:s,remoteRoot:"."},{localRoot:s,remoteRoot:s}]`,
		want: []string{`localRoot s is not the cluster's localRoot`}},
	{name: "justMyCode on", old: `justMyCode:!1`, new: `justMyCode:!0`,
		want: []string{"justMyCode is true, want false"}},
	{name: "type debugpy", old: `type:"python"`, new: `type:"debugpy"`,
		want: []string{`type is "debugpy", want "python"`}},
	{name: "a new attach key", old: `justMyCode:!1,`, new: `justMyCode:!1,subProcess:!0,`,
		want: []string{"has subProcess: true, which the image does not expect"}},
	{name: "connect without port", old: `connect:{host:e.host,port:Number(e.port)}`, new: `connect:{host:e.host}`,
		want: []string{"connect has no port"}},
	{name: "paused query filters dead workers", old: `filter_values=0&filter_values=True`, new: `filter_values=0&filter_values=False`,
		want: []string{"paused-workers query", "debug/dashboard.PausedWorkersQuery", "filter_values is [0,False], want [0,True]"}},
	{name: "paused query lists drivers", old: `filter_values=True&exclude_driver=True`, new: `filter_values=True`,
		want: []string{"paused-workers query", "exclude_driver is missing, want True"}},
	{name: "worker query moved", old: `/api/v0/workers?timeout=30`, new: `/api/v1/workers?timeout=30`,
		want: []string{"worker query", "sends no GET /api/v0/workers?timeout=30&filter_keys=worker_id", "debug/dashboard.WorkerQuery"}},
	{name: "tasks query in detail", old: `detail=False&filter_keys=worker_id`, new: `detail=True&filter_keys=worker_id`,
		want: []string{"running-tasks query", "debug/dashboard.RunningTasksQuery", "detail is True, want False"}},
	{name: "tasks query filters on another key", old: `filter_keys=worker_id&filter_keys=state`, new: `filter_keys=node_id&filter_keys=state`,
		want: []string{"running-tasks query", "filter_keys is [node_id,state], want [worker_id,state]"}},
}

// TestEditsRefused: every edit of the stand-in that breaks what the image
// assumes is one difference, naming the change.
func TestEditsRefused(t *testing.T) {
	pj0, js0 := readShape(t)
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			pj, js := pj0, js0
			target := &js
			if e.inPJ {
				target = &pj
			}
			if !strings.Contains(*target, e.old) {
				t.Fatalf("the stand-in has no %q", e.old)
			}
			*target = strings.ReplaceAll(*target, e.old, e.new)
			ds := contract.Check([]byte(pj), mainFile, []byte(js))
			if len(ds) != 1 {
				t.Fatalf("%d differences, want 1: %q", len(ds), ds)
			}
			for _, w := range e.want {
				if !strings.Contains(ds[0].String(), w) {
					t.Errorf("difference %q does not say %q", ds[0], w)
				}
			}
		})
	}
}

// TestEquivalentReadsHold: reading the key through a variable, or through
// its section, is the same read.
func TestEquivalentReadsHold(t *testing.T) {
	pj, js0 := readShape(t)
	const read = `n.workspace.getConfiguration().get("anyscalecompute.ray-distributed-debugger.clusterDashboards")`
	for name, repl := range map[string]string{
		"through a variable": `n.workspace.getConfiguration().get(K)`,
		"through a section":  `n.workspace.getConfiguration("anyscalecompute.ray-distributed-debugger").get("clusterDashboards")`,
	} {
		js := strings.Replace(js0, read, repl, 1)
		if js == js0 {
			t.Fatalf("the stand-in has no %s", read)
		}
		if name == "through a variable" {
			js = strings.Replace(js, "let l=[];", `let l=[];const K="anyscalecompute.ray-distributed-debugger.clusterDashboards";`, 1)
		}
		if ds := contract.Check([]byte(pj), mainFile, []byte(js)); len(ds) > 0 {
			t.Errorf("%s: differences %q, want none", name, ds)
		}
	}
}

// TestCheckVSIXRefuses: a VSIX whose code differs is an *Error naming the
// version, the file and the change.
func TestCheckVSIXRefuses(t *testing.T) {
	pj, js := readShape(t)
	js = strings.ReplaceAll(js, `r.localRoot??"${workspaceFolder}"`, `r.localRoot||"${workspaceFolder}"`)
	b := mkVSIX(t, "0.1.7", pj, js)
	err := contract.CheckVSIX(context.Background(), bytes.NewReader(b), int64(len(b)), vsix.Limits{})
	var ce *contract.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *contract.Error", err)
	}
	if ce.ID != contract.ExtensionID || ce.Version != "0.1.7" || len(ce.Differences) != 1 {
		t.Errorf("Error = %+v, want %s@0.1.7 with one difference", ce, contract.ExtensionID)
	}
	for _, w := range []string{"extension anyscalecompute.ray-distributed-debugger@0.1.7 does not behave as the image assumes", "contract read from anyscalecompute.ray-distributed-debugger 0.1.6", mainFile + ": localRoot default", "with ||, want ??"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// TestCheckVSIXUnreadable: a VSIX without the main script its package.json
// names is an error naming both, not a contract difference.
func TestCheckVSIXUnreadable(t *testing.T) {
	pj, js := readShape(t)
	pj = strings.Replace(pj, `"main": "./dist/extension.js"`, `"main": "./out/main"`, 1)
	b := mkVSIX(t, "0.1.6", pj, js)
	err := contract.CheckVSIX(context.Background(), bytes.NewReader(b), int64(len(b)), vsix.Limits{})
	var ce *contract.Error
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "main names extension/out/main.js, which the VSIX does not hold") {
		t.Errorf("err = %v, want one saying main names extension/out/main.js, which the VSIX does not hold", err)
	}
}
