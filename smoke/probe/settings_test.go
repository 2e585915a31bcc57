package probe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLocalRootFromSettings(t *testing.T) {
	const key = `"anyscalecompute.ray-distributed-debugger.clusterDashboards"`
	tests := []struct {
		name, settings, host, workspace string
		want                            string
		wantErr                         bool
	}{
		{name: "empty string kept", settings: `{` + key + `:[{"host":"127.0.0.1:8265","localRoot":""}]}`, host: "127.0.0.1:8265", want: ""},
		{name: "entry of the host", settings: `{` + key + `:[{"host":"a:1","localRoot":"/a"},{"host":"b:2","localRoot":"/b"}]}`, host: "b:2", want: "/b"},
		{name: "first entry for another host", settings: `{` + key + `:[{"host":"a:1","localRoot":"/a"}]}`, host: "c:3", want: "/a"},
		{name: "missing localRoot is the workspace folder", settings: `{` + key + `:[{"host":"a:1"}]}`, host: "a:1", workspace: "/w", want: "/w"},
		{name: "null localRoot is the workspace folder", settings: `{` + key + `:[{"host":"a:1","localRoot":null}]}`, host: "a:1", workspace: "/w", want: "/w"},
		{name: "missing localRoot without workspace", settings: `{` + key + `:[{"host":"a:1"}]}`, host: "a:1", wantErr: true},
		{name: "no dashboards", settings: `{}`, host: "a:1", wantErr: true},
		{name: "not JSON", settings: `{`, host: "a:1", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LocalRootFromSettings([]byte(tc.settings), tc.host, tc.workspace)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("localRoot (-want +got):\n%s", diff)
			}
		})
	}
}
