package predict

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestClusterPatches: EnvoyFilter CLUSTER ADD and REMOVE patches that reach a proxy are applied
// (R39), those meshscope cannot apply exactly are named, and no other EnvoyFilter counts:
// another namespace's, a selector that does not match, a gateway-only patch, a listener patch,
// targetRefs, a proxyVersion of another release.
func TestClusterPatches(t *testing.T) {
	inv := mesh.New()
	err := inv.AddYAML("ef.yaml", []byte(`apiVersion: v1
kind: Service
metadata: {name: a, namespace: foo}
spec: {selector: {app: a}, ports: [{name: http, port: 80}, {name: grpc, port: 9090}]}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: add-cluster, namespace: foo}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches:
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND}
    patch: {operation: ADD, value: {name: extra, type: STRICT_DNS, connect_timeout: 1s}}
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND, cluster: {service: a.foo.svc.cluster.local, portNumber: 9090}}
    patch: {operation: REMOVE}
  - applyTo: CLUSTER
    match: {cluster: {name: BlackHoleCluster}}
    patch: {operation: REMOVE}
  - applyTo: CLUSTER
    match: {context: SIDECAR_INBOUND, proxy: {proxyVersion: '^1\.31.*'}}
    patch: {operation: ADD, value: {name: inbound-extra}}
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
  configPatches: [{applyTo: CLUSTER, patch: {operation: ADD, value: {name: api-extra}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: gateway-only, namespace: foo}
spec:
  configPatches: [{applyTo: CLUSTER, match: {context: GATEWAY}, patch: {operation: ADD, value: {name: z}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: old-proxies, namespace: foo}
spec:
  configPatches: [{applyTo: CLUSTER, match: {proxy: {proxyVersion: '^1\.2[0-9]\..*'}}, patch: {operation: ADD, value: {name: old}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: listener, namespace: foo}
spec:
  configPatches: [{applyTo: LISTENER, patch: {operation: ADD, value: {name: l}}}]
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: targeted, namespace: foo}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: gw}]
  configPatches: [{applyTo: CLUSTER, patch: {operation: ADD, value: {name: t}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	web := Proxy{Namespace: "foo", Labels: map[string]string{"app": "web"}}
	names := p.Predict(web).Names()
	for _, n := range []string{"extra", "inbound-extra", "outbound|80||a.foo.svc.cluster.local", "PassthroughCluster"} {
		if !slices.Contains(names, n) {
			t.Errorf("foo/web lacks %s: %v", n, names)
		}
	}
	for _, n := range []string{"outbound|9090||a.foo.svc.cluster.local", "BlackHoleCluster", "x", "api-extra", "z", "old", "t"} {
		if slices.Contains(names, n) {
			t.Errorf("foo/web has %s: %v", n, names)
		}
	}
	if got := p.ClusterPatches(web); len(got) != 1 || !strings.HasPrefix(got[0], "istio-system/mesh-wide (MERGE:") {
		t.Errorf("foo/web: named %q, want only the MERGE", got)
	}
	// Another proxy of the namespace gets none of web's patches and keeps its shared list.
	api := Proxy{Namespace: "foo", Labels: map[string]string{"app": "api"}}
	if names := p.Predict(api).Names(); !slices.Contains(names, "api-extra") || slices.Contains(names, "extra") || !slices.Contains(names, "BlackHoleCluster") {
		t.Errorf("foo/api: %v", names)
	}
	// A metadata match is not decided: named, not applied.
	inv2 := inv.Clone()
	if err := inv2.AddYAML("md.yaml", []byte(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: by-metadata, namespace: foo}
spec:
  configPatches: [{applyTo: CLUSTER, match: {proxy: {metadata: {ROLE: edge}}}, patch: {operation: REMOVE}}]
`)); err != nil {
		t.Fatal(err)
	}
	p2, _ := New(inv2, Options{})
	if got := p2.ClusterPatches(api); len(got) != 2 || !strings.Contains(strings.Join(got, " "), "foo/by-metadata (REMOVE: a proxy metadata match") {
		t.Errorf("named %q", got)
	}
	if n := len(p2.Predict(api).Clusters); n != len(p.Predict(api).Clusters) {
		t.Errorf("an undecided REMOVE was applied: %d clusters, want %d", n, len(p.Predict(api).Clusters))
	}
}

// TestListenerPatches: the EnvoyFilter LISTENER patches that can add, remove or rename a
// sidecar's listeners are named (R56), and no other: a filter chain patch, a MERGE without a
// name, a gateway-only patch, another workload's, a proxyVersion of another release.
func TestListenerPatches(t *testing.T) {
	inv := mesh.New()
	if err := inv.AddYAML("ef.yaml", []byte(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: extra-listener, namespace: foo}
spec:
  workloadSelector: {labels: {app: web}}
  configPatches:
  - applyTo: LISTENER
    match: {context: SIDECAR_OUTBOUND}
    patch: {operation: ADD, value: {name: extra_8443, address: {socket_address: {address: 0.0.0.0, port_value: 8443}}}}
  - applyTo: LISTENER
    match: {listener: {portNumber: 9000}}
    patch: {operation: REMOVE}
  - applyTo: LISTENER
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}
  - applyTo: FILTER_CHAIN
    patch: {operation: REMOVE}
  - applyTo: LISTENER
    match: {context: GATEWAY}
    patch: {operation: ADD, value: {name: gw}}
  - applyTo: LISTENER
    match: {proxy: {proxyVersion: '^1\.20.*'}}
    patch: {operation: REMOVE}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: rename, namespace: istio-system}
spec:
  configPatches:
  - applyTo: LISTENER
    patch: {operation: MERGE, value: {name: renamed}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: api-only, namespace: foo}
spec:
  workloadSelector: {labels: {app: api}}
  configPatches: [{applyTo: LISTENER, patch: {operation: REMOVE}}]
`)); err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := p.ListenerPatches(Proxy{Namespace: "foo", Labels: map[string]string{"app": "web"}})
	want := []string{"istio-system/rename (MERGE)", "foo/extra-listener (ADD)", "foo/extra-listener (REMOVE)"}
	if !slices.Equal(got, want) {
		t.Errorf("ListenerPatches = %q, want %q", got, want)
	}
	if got := p.ListenerPatches(Proxy{Namespace: "bar", Labels: map[string]string{"app": "web"}}); !slices.Equal(got, []string{"istio-system/rename (MERGE)"}) {
		t.Errorf("bar: %q", got)
	}
}
