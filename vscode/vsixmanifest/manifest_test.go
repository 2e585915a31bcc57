package vsixmanifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
)

func TestParse(t *testing.T) {
	const head = `<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata>`
	tests := []struct {
		name    string
		xml     string
		want    Info
		wantErr string
	}{{
		name: "platform build with properties",
		xml: head + `<Identity Language="en-US" Id="debugpy" Version="2025.10.0" Publisher="ms-python" TargetPlatform="linux-arm64"/>` +
			`<Properties><Property Id="Microsoft.VisualStudio.Code.Engine" Value="^1.92.0"/>` +
			`<Property Id="Microsoft.VisualStudio.Code.ExtensionDependencies" Value="ms-python.python, ,"/>` +
			`<Property Id="Microsoft.VisualStudio.Code.ExtensionPack" Value=""/>` +
			`<Property Id="Microsoft.VisualStudio.Code.PreRelease" Value="true"/></Properties></Metadata></PackageManifest>`,
		want: Info{Publisher: "ms-python", Name: "debugpy", Version: "2025.10.0", TargetPlatform: "linux-arm64",
			Engine: "^1.92.0", PreRelease: true, Dependencies: []string{"ms-python.python"}},
	}, {
		name: "no TargetPlatform is universal",
		xml:  head + `<Identity Id="ray-distributed-debugger" Version="0.1.4" Publisher="anyscalecompute"/></Metadata></PackageManifest>`,
		want: Info{Publisher: "anyscalecompute", Name: "ray-distributed-debugger", Version: "0.1.4", TargetPlatform: imagespec.VSCodeUniversal},
	}, {
		name:    "identity without version",
		xml:     head + `<Identity Id="x" Publisher="p"/></Metadata></PackageManifest>`,
		wantErr: "needs Publisher, Id and Version",
	}, {
		name:    "not XML",
		xml:     `{"name":"x"}`,
		wantErr: "not a VSIX manifest",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.xml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}
