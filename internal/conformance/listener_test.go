package conformance

import (
	"slices"
	"strings"
	"testing"

	"istio.io/istio/pilot/test/xds"

	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
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

// istioMatchAllTCPClusters lists, for the proxy's listeners on port, the clusters of the tcp_proxy
// filters of the filter chains that match every connection: where a TCP call on that listener
// goes whatever its destination.
func istioMatchAllTCPClusters(t *testing.T, inventoryYAML string, px Proxy, port string) []string {
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
	var out []string
	for _, l := range s.Listeners(setupProxy(s, pod)) {
		if !strings.HasSuffix(l.GetName(), "_"+port) {
			continue
		}
		for _, fc := range l.GetFilterChains() {
			if m := fc.GetFilterChainMatch(); m != nil && (len(m.GetApplicationProtocols()) > 0 || len(m.GetServerNames()) > 0 ||
				len(m.GetPrefixRanges()) > 0 || m.GetTransportProtocol() != "" || m.GetDestinationPort() != nil) {
				continue
			}
			for _, f := range fc.GetFilters() {
				if f.GetName() != "envoy.filters.network.tcp_proxy" {
					continue
				}
				var tp tcpproxy.TcpProxy
				if err := f.GetTypedConfig().UnmarshalTo(&tp); err != nil {
					t.Fatalf("tcp_proxy of %s: %v", l.GetName(), err)
				}
				out = append(out, l.GetName()+"\t"+tp.GetCluster())
			}
		}
	}
	return out
}

// TestIstioSharedTCPPort pins the Istio behaviour behind the trace's shared-port rule (R58,
// R62; predict TestTrace, the provider's "Declared Call Not Reached" warning): two
// ServiceEntries without addresses on one TCP port share 0.0.0.0_<port>, and the first one's
// filter chain, which matches every connection, is the only one: calls to the second reach the
// first.
func TestIstioSharedTCPPort(t *testing.T) {
	mesh := joinYAML(readFile(t, "testdata/seed/before.yaml"), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cache-a, namespace: foo, creationTimestamp: "2025-01-01T00:00:01Z"}
spec: {hosts: [cache-a.example.com], ports: [{number: 6379, name: tcp-redis, protocol: TCP}], resolution: DNS, location: MESH_EXTERNAL}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cache-b, namespace: foo, creationTimestamp: "2025-01-01T00:00:02Z"}
spec: {hosts: [cache-b.example.com], ports: [{number: 6379, name: tcp-redis, protocol: TCP}], resolution: DNS, location: MESH_EXTERNAL}
`)
	got := istioMatchAllTCPClusters(t, mesh, seedProxyFoo, "6379")
	want := []string{"0.0.0.0_6379\toutbound|6379||cache-a.example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("Istio's match-all TCP chains on port 6379: %q, want %q", got, want)
	}
}
