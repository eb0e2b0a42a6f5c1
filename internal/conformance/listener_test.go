package conformance

import (
	"slices"
	"strings"
	"testing"

	"istio.io/istio/pilot/test/xds"
)

// istioOutboundFilters returns the network filters of every filter chain of the proxy's
// outbound listeners on port ("<address>_<port>"), as Istio's own listener generator
// builds them, or nil when the proxy has none.
func istioOutboundFilters(t *testing.T, inventoryYAML string, px Proxy, port string) []string {
	t.Helper()
	inv, err := ParseInventory(inventoryYAML)
	if err != nil {
		t.Fatalf("inventory: %v", err)
	}
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{KubernetesObjects: inv.KubeObjects, Configs: inv.Configs, MeshConfig: inv.Mesh})
	pod, err := inv.FindPod(px)
	if err != nil {
		t.Fatal(err)
	}
	p := setupProxy(s, pod)
	var out []string
	for _, l := range s.Listeners(p) {
		if !strings.HasSuffix(l.GetName(), "_"+port) {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				out = append(out, f.GetName())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestIstioPortListenerProtocol pins the Istio behaviour behind the compiler's port
// listeners (scope.portListenerProtocol, TestCompilePortListenerKeepsIstiosProtocol): a
// Sidecar port listener without a protocol, as meshscope writes one for a Service port
// whose name names no protocol ("web"), gives the calls on that port the HTTP connection
// manager istiod builds without a Sidecar (protocol detection), so VirtualService routes
// still apply; the same listener with protocol TCP would proxy them as TCP only.
func TestIstioPortListenerProtocol(t *testing.T) {
	const mesh = `apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Service
metadata: {name: s1, namespace: a}
spec:
  selector: {app: s1}
  ports:
  - {port: 81, name: web, targetPort: 8081}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: c, namespace: a}
spec:
  selector:
    matchLabels: {app: c}
  template:
    metadata:
      labels: {app: c}
    spec:
      containers:
      - {name: c, image: c}
`
	sidecar := func(port string) string {
		return `---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: c, namespace: a}
spec:
  workloadSelector: {labels: {app: c}}
  egress:
  - port: ` + port + `
    hosts: [a/s1.a.svc.cluster.local]
`
	}
	const hcm, tcp = "envoy.filters.network.http_connection_manager", "envoy.filters.network.tcp_proxy"
	px := Proxy{Namespace: "a", Labels: map[string]string{"app": "c"}}
	cases := []struct {
		name, yaml string
		http       bool
	}{
		{"no Sidecar", mesh, true},
		{"meshscope's port listener, no protocol", mesh + sidecar("{number: 81, name: port-81}"), true},
		{"a port listener with protocol TCP", mesh + sidecar("{number: 81, name: tcp-81, protocol: TCP}"), false},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			got := istioOutboundFilters(t, c.yaml, px, "81")
			if len(got) == 0 {
				t.Fatal("Istio built no outbound listener on port 81")
			}
			if slices.Contains(got, hcm) != c.http {
				t.Errorf("filters of the port 81 listeners: %v; want the HTTP connection manager: %v", got, c.http)
			}
			if !c.http && !slices.Contains(got, tcp) {
				t.Errorf("filters of the port 81 listeners: %v; want %s", got, tcp)
			}
		})
	}
}
