package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	networking "istio.io/api/networking/v1alpha3"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config/host"
	"istio.io/istio/pkg/kube/inject"
)

// unknownIP is where an application's DNS sends a host the mesh gives no address: no listener
// of a sidecar is bound to it.
const unknownIP = "198.51.100.7"

// traceCall is a call of `meshscope trace -o json`.
type traceCall struct {
	Host           string `json:"host"`
	Port           int    `json:"port"`
	Listener       string `json:"listener"`
	Route          string `json:"route"`
	VirtualHost    string `json:"virtual_host"`
	VirtualService string `json:"virtual_service"`
	Cluster        string `json:"cluster"`
	Reached        bool   `json:"reached"`
	Step           string `json:"step"`
	Name           string `json:"name"`
}

// Trace runs `meshscope trace ... --call HOST... -o json` and returns its calls.
func (c CLI) Trace(files []string, px Proxy, hosts []string) ([]traceCall, error) {
	cmd := []string{"trace"}
	for _, h := range hosts {
		cmd = append(cmd, "--call", h)
	}
	out, err := c.runExit(cmd, files, px, "json", 3)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Calls []traceCall `json:"calls"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("trace -o json: %v", err)
	}
	return doc.Calls, nil
}

// compareTrace follows every call meshscope traces from each proxy, to every port of every
// host of the mesh, through the listeners and routes Istio's generator builds for the proxy,
// as Envoy would (envoyConfig.follow), and reports where meshscope's listener, route, virtual
// host or cluster differ. The application dials the address istiod gives the host for the
// proxy (or another of its addresses, an endpoint of a headless Service, or an egress bind,
// where meshscope's listener says so), and an HTTP call sends the FQDN as its Host, or the
// shorter name meshscope says goes astray. A call to a service Istio's proxy does not see is
// not compared.
func compareTrace(t testing.TB, label, meshYAML string, proxies []Proxy) int {
	t.Helper()
	m := newStateUnderTest(t, label, meshYAML)
	hosts, vips, seAddrs := meshHosts(m.inv)
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{KubernetesObjects: m.inv.KubeObjects, Configs: m.inv.Configs, MeshConfig: m.inv.Mesh})
	bad := 0
	for _, px := range proxies {
		if inject.IgnoredNamespaces.Contains(px.Namespace) {
			continue
		}
		pod, err := m.inv.FindPod(px)
		if err != nil {
			t.Fatalf("%s: proxy %s: %v", label, px.Key(), err)
		}
		proxy := setupProxy(s, pod)
		envoy := newEnvoyConfig(s.Listeners(proxy), s.Routes(proxy))
		calls, err := m.cli.Trace(m.paths, px, hosts)
		if err != nil {
			t.Errorf("%s: proxy %s: CLI failed: %v", label, px.Key(), err)
			bad++
			continue
		}
		var got, want []string
		for _, c := range calls {
			if c.Port == 0 {
				continue
			}
			svc := s.PushContext().ServiceForHostname(proxy, host.Name(c.Host))
			if svc == nil {
				continue
			}
			sp, ok := svc.Ports.GetByPort(c.Port)
			if !ok {
				continue
			}
			// The address the proxy's istiod view gives the host: its VIP, a ServiceEntry's
			// (first) address or CIDR, 0.0.0.0 where it has none.
			addr := svc.GetAddressForProxy(proxy)
			if a, _, _ := strings.Cut(c.Listener, "_"); slices.Contains(svc.GetAllAddressesForProxy(proxy), a) || slices.Contains(seAddrs[c.Host], a) {
				addr = a // another of the service's addresses, which DNS may give the application
			}
			switch {
			case addr == "0.0.0.0" || addr == "":
				addr = unknownIP
			case strings.Contains(addr, "/"):
				addr = firstHost(addr)
			}
			// An HTTP call astray for a shorter name than the FQDN is followed by that name.
			name := c.Host
			if c.Name != "" {
				name = c.Name
			}
			conn := envoyConn{addr: addr, port: c.Port, host: name,
				http: sp.Protocol.IsHTTP() || sp.Protocol.IsUnsupported(), tls: sp.Protocol.IsTLS(), sni: c.Host}
			if a, _, ok := strings.Cut(c.Listener, "_"); ok && a != "0.0.0.0" && !strings.HasPrefix(a, "<") && !vips[a] {
				// Not a service's address: an endpoint of a headless Service, which the
				// application's DNS may give it, or an egress listener's bind, which it calls.
				conn.addr = a
			}
			p := envoy.follow(conn)
			if alts, port, ok := strings.Cut(strings.TrimPrefix(c.Listener, "<"), ">_"); ok && strings.HasPrefix(c.Listener, "<") &&
				slices.Contains(strings.Split(alts, "|"), strings.TrimSuffix(p.Listener, "_"+port)) {
				c.Listener = p.Listener // one of several addresses istiod picks between (R50)
			}
			if c.Cluster == "" {
				p.Cluster = "" // a VirtualService decides; the virtual host is compared
			}
			want = append(want, fmt.Sprintf("%s:%d\t%s\t%s\t%s\t%s\t%s", c.Host, c.Port, name, p.Listener, p.Route, p.VirtualHost, p.Cluster))
			got = append(got, fmt.Sprintf("%s:%d\t%s\t%s\t%s\t%s\t%s", c.Host, c.Port, name, c.Listener, c.Route, c.VirtualHost, c.Cluster))
		}
		sort.Strings(want)
		sort.Strings(got)
		if m.disagree(px, "trace", "json", want, got) {
			bad++
		}
	}
	return bad
}

// meshHosts are the exact hosts of the mesh's Services and ServiceEntries, sorted; the
// addresses of its Services and ServiceEntries (cluster IPs, ServiceEntry addresses); and each
// host's ServiceEntry addresses. ExternalName Services are left out: the call follows the host
// they name.
func meshHosts(inv *Inventory) (hosts []string, vips map[string]bool, seAddrs map[string][]string) {
	seen := map[string]bool{}
	vips, seAddrs = map[string]bool{}, map[string][]string{}
	for _, o := range inv.KubeObjects {
		svc, ok := o.(*corev1.Service)
		if !ok || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		seen[svc.Name+"."+svc.Namespace+".svc."+DomainSuffix] = true
		if ip := svc.Spec.ClusterIP; ip != "None" && ip != "" {
			vips[ip] = true
		}
	}
	for _, c := range inv.Configs {
		se, ok := c.Spec.(*networking.ServiceEntry)
		if !ok {
			continue
		}
		for _, a := range se.GetAddresses() {
			vips[a] = true
		}
		for _, h := range se.GetHosts() {
			if !strings.Contains(h, "*") {
				seen[h] = true
				seAddrs[h] = append(seAddrs[h], se.GetAddresses()...)
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), vips, seAddrs
}

// TestTraceSeed follows every call of the seed's proxies, without and with the compiled Sidecar,
// and pins the harness's own Envoy: bar's HTTP call to foo takes route 80 to foo's cluster, and
// under foo's Sidecar, which imports no bar, foo's call to bar falls to allow_any.
func TestTraceSeed(t *testing.T) {
	before := readFile(t, "testdata/seed/before.yaml")
	sidecar := readFile(t, "testdata/seed/sidecar.yaml")
	proxies := []Proxy{seedProxyFoo, seedProxyBar}
	inv, err := ParseInventory(joinYAML(before, sidecar))
	if err != nil {
		t.Fatal(err)
	}
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{KubernetesObjects: inv.KubeObjects, Configs: inv.Configs, MeshConfig: inv.Mesh})
	for _, c := range []struct {
		from Proxy
		host string
		want envoyPath
	}{
		{seedProxyBar, "foo.foo.svc.cluster.local", envoyPath{"0.0.0.0_80", "80", "foo.foo.svc.cluster.local:80", "outbound|80||foo.foo.svc.cluster.local"}},
		{seedProxyFoo, "bar.bar.svc.cluster.local", envoyPath{"0.0.0.0_80", "80", "allow_any", "PassthroughCluster"}},
	} {
		pod, err := inv.FindPod(c.from)
		if err != nil {
			t.Fatal(err)
		}
		px := setupProxy(s, pod)
		envoy := newEnvoyConfig(s.Listeners(px), s.Routes(px))
		if got := envoy.follow(envoyConn{addr: "10.96.0.200", port: 80, http: true, host: c.host}); got != c.want {
			t.Errorf("Envoy's path from %s to %s: %+v, want %+v", c.from.Key(), c.host, got, c.want)
		}
	}
	compareTrace(t, "seed/before", before, proxies)
	compareTrace(t, "seed/sidecar", joinYAML(before, sidecar), proxies)
}

// TestTraceHandWritten follows the calls on every hand-written case of the cluster suite.
func TestTraceHandWritten(t *testing.T) { eachHandWritten(t, compareTrace) }

// TestTraceCases follows the calls on the route and listener cases.
func TestTraceCases(t *testing.T) { eachRouteAndListenerCase(t, compareTrace) }

// TestTraceRandom follows the calls of every proxy of the random meshes.
func TestTraceRandom(t *testing.T) { eachRandomMesh(t, compareTrace) }
