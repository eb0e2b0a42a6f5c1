package predict

import (
	"slices"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestClusterPatches: the EnvoyFilters whose cluster patches reach a proxy are named (R39), and
// no other: another namespace's, a selector that does not match, a gateway-only patch, a
// listener patch.
func TestClusterPatches(t *testing.T) {
	inv := mesh.New()
	err := inv.AddYAML("ef.yaml", []byte(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: add-cluster, namespace: foo}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches:
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND}
    patch: {operation: ADD, value: {name: extra, type: STRICT_DNS, connect_timeout: 1s}}
  - applyTo: CLUSTER
    match: {cluster: {service: a.foo.svc.cluster.local}}
    patch: {operation: REMOVE}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: mesh-wide, namespace: istio-system}
spec:
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: other-ns, namespace: bar}
spec:
  configPatches: [{applyTo: CLUSTER, patch: {operation: ADD, value: {name: x}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: other-app, namespace: foo}
spec:
  workloadSelector: {labels: {app: api}}
  configPatches: [{applyTo: CLUSTER, patch: {operation: ADD, value: {name: y}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: gateway-only, namespace: foo}
spec:
  configPatches: [{applyTo: CLUSTER, match: {context: GATEWAY}, patch: {operation: ADD, value: {name: z}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: listener, namespace: foo}
spec:
  configPatches: [{applyTo: LISTENER, patch: {operation: ADD, value: {name: l}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := p.ClusterPatches(Proxy{Namespace: "foo", Labels: map[string]string{"app": "web"}})
	want := []string{"foo/add-cluster (ADD, REMOVE)", "istio-system/mesh-wide (MERGE)"}
	if !slices.Equal(got, want) {
		t.Errorf("foo/web: %q, want %q", got, want)
	}
	if got := p.ClusterPatches(Proxy{Namespace: "baz", Labels: map[string]string{"app": "web"}}); !slices.Equal(got, []string{"istio-system/mesh-wide (MERGE)"}) {
		t.Errorf("baz/web: %q", got)
	}
}
