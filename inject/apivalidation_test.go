package inject

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/imagectl/imagectl/internal/testutil/kubetest"
)

// TestOptionsRefusedAsTheAPIServerWould: what the API server would refuse
// in the sidecar is an error before anything is written (issue 35 item 6):
// a Secret key k8s.io/apimachinery's IsConfigMapKey refuses, negative
// quantities, resource names no container may have, fractional extended
// resources, requests above limits.
func TestOptionsRefusedAsTheAPIServerWould(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
		want []string
	}{
		{"secret key ..", WithPasswordSecret("pw", ".."), []string{`password secret key ".."`, "Secret key"}},
		{"secret key .", WithPasswordSecret("pw", "."), []string{`password secret key "."`}},
		{"secret key ..x", WithPasswordSecret("pw", "..x"), []string{`password secret key "..x"`}},
		{"secret key too long", WithPasswordSecret("pw", strings.Repeat("k", 254)), []string{"password secret key", "253"}},
		{"negative limit", WithResources(nil, map[string]string{"memory": "-1Gi"}), []string{`limits memory="-1Gi"`, "greater than or equal to 0"}},
		{"negative request", WithResources(map[string]string{"cpu": "-1"}, nil), []string{`requests cpu="-1"`, "greater than or equal to 0"}},
		{"unknown resource", WithResources(nil, map[string]string{"foo": "1"}), []string{`limits foo="1"`, "cpu, memory, ephemeral-storage"}},
		{"bad extended name", WithResources(nil, map[string]string{"example.com/Bad Name": "1"}), []string{`limits example.com/Bad Name="1"`}},
		{"fractional extended", WithResources(nil, map[string]string{"example.com/gpu": "1.5"}), []string{`limits example.com/gpu="1.5"`, "whole number"}},
		{"extended request without a limit", WithResources(map[string]string{"example.com/gpu": "1"}, nil), []string{`requests example.com/gpu="1"`, "limit"}},
		{"extended request below its limit", WithResources(map[string]string{"example.com/gpu": "1"}, map[string]string{"example.com/gpu": "2"}), []string{`requests example.com/gpu="1"`, "equal"}},
		{"request above the default limit", WithResources(map[string]string{"cpu": "3"}, nil), []string{`requests cpu="3"`, `limits cpu="2"`}},
		{"request above its limit", WithResources(map[string]string{"memory": "8Gi"}, map[string]string{"memory": "4Gi"}), []string{`requests memory="8Gi"`, `limits memory="4Gi"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithImage("example.com/cs:1"), tc.opt)
			if err == nil {
				t.Fatalf("Apply wrote what the API server refuses:\n%s", res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestResourcesReplaceOneDefaultEach: a resource given replaces that
// default only (a limit on foo.com/gpu keeps the cpu and memory limits),
// and an empty value drops a default.
func TestResourcesReplaceOneDefaultEach(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name               string
		requests, limits   map[string]string
		wantReqs, wantLims map[string]resource.Quantity
	}{
		{"defaults", nil, nil,
			map[string]resource.Quantity{"cpu": q("500m"), "memory": q("1Gi")},
			map[string]resource.Quantity{"cpu": q("2"), "memory": q("4Gi")}},
		{"an extended resource", map[string]string{"example.com/gpu": "1"}, map[string]string{"example.com/gpu": "1"},
			map[string]resource.Quantity{"cpu": q("500m"), "memory": q("1Gi"), "example.com/gpu": q("1")},
			map[string]resource.Quantity{"cpu": q("2"), "memory": q("4Gi"), "example.com/gpu": q("1")}},
		{"one default replaced", nil, map[string]string{"memory": "8Gi"},
			map[string]resource.Quantity{"cpu": q("500m"), "memory": q("1Gi")},
			map[string]resource.Quantity{"cpu": q("2"), "memory": q("8Gi")}},
		{"the cpu limit dropped", nil, map[string]string{"cpu": ""},
			map[string]resource.Quantity{"cpu": q("500m"), "memory": q("1Gi")},
			map[string]resource.Quantity{"memory": q("4Gi")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithImage("example.com/cs:1"), WithResources(tc.requests, tc.limits))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := kubetest.DecodeStrict(res.Output)
			if err != nil {
				t.Fatal(err)
			}
			r := clusterSpec(obj).HeadGroupSpec.Template.Spec.Containers[1].Resources
			got := [2]map[string]string{{}, {}}
			want := [2]map[string]string{{}, {}}
			for k, v := range r.Requests {
				got[0][string(k)] = v.String()
			}
			for k, v := range r.Limits {
				got[1][string(k)] = v.String()
			}
			for k, v := range tc.wantReqs {
				want[0][k] = v.String()
			}
			for k, v := range tc.wantLims {
				want[1][k] = v.String()
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("sidecar [requests, limits] (-want +got):\n%s", d)
			}
		})
	}
}
