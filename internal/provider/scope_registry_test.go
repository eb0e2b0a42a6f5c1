package provider

import (
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

func TestScopeRegistry(t *testing.T) {
	inv := mesh.New()
	if err := inv.AddYAML("test", []byte(`apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, version: v1}
`)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		first     plannedScope
		second    plannedScope
		clash     bool
		sameName  bool
		workloads string
	}{
		{"same scope planned again", plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "a"},
			plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "a"}, false, false, ""},
		{"same name, other declaration", plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "a"},
			plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "b"}, true, true, ""},
		{"both select a pod", plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "a"},
			plannedScope{Name: "web-v1", Selector: map[string]string{"version": "v1"}, Fingerprint: "b"}, true, false, "Pod web-1"},
		{"subset without a pod", plannedScope{Name: "api", Selector: map[string]string{"app": "api"}, Fingerprint: "a"},
			plannedScope{Name: "api-v2", Selector: map[string]string{"app": "api", "version": "v2"}, Fingerprint: "b"}, true, false, ""},
		{"disjoint", plannedScope{Name: "api", Selector: map[string]string{"app": "api"}, Fingerprint: "a"},
			plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "b"}, false, false, ""},
		{"contradicting", plannedScope{Name: "web-v1", Selector: map[string]string{"app": "web", "version": "v1"}, Fingerprint: "a"},
			plannedScope{Name: "web-v2", Selector: map[string]string{"app": "web", "version": "v2"}, Fingerprint: "b"}, false, false, ""},
		{"two namespace defaults", plannedScope{Name: "default", Fingerprint: "a"},
			plannedScope{Name: "other", Fingerprint: "b"}, true, false, ""},
		{"namespace default and a selector", plannedScope{Name: "default", Fingerprint: "a"},
			plannedScope{Name: "web", Selector: map[string]string{"app": "web"}, Fingerprint: "b"}, false, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newScopeRegistry()
			if got := r.claim(inv, "shop", tc.first); len(got) != 0 {
				t.Fatalf("first claim: %v", got)
			}
			if got := r.claim(inv, "other", tc.second); len(got) != 0 {
				t.Fatalf("other namespace: %v", got)
			}
			got := r.claim(inv, "shop", tc.second)
			if (len(got) > 0) != tc.clash {
				t.Fatalf("clashes = %v, want clash %v", got, tc.clash)
			}
			if tc.clash && (got[0].SameName != tc.sameName || got[0].Workload != tc.workloads || got[0].Other.Name != tc.first.Name) {
				t.Errorf("clash = %+v", got[0])
			}
		})
	}
}
