package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"istio.io/istio/pkg/kube/inject"
)

// compareListeners runs Istio's LDS generator and endpoint builder, and `meshscope proxy-config
// listener` and `endpoint`, on the same mesh for every proxy and reports the differences; it returns the number of mismatching
// proxies. meshscope reads the mesh as the API server holds it (ClusterStateYAML), so that
// every address a listener is named by is known to both.
func compareListeners(t testing.TB, label, meshYAML string, proxies []Proxy) int {
	t.Helper()
	m := newStateUnderTest(t, label, meshYAML)
	c, inv, paths := m.cli, m.inv, m.paths
	istio := IstioListeners(t, inv, proxies)
	meshscopeEDS := IstioResult{}
	for _, px := range proxies {
		if inject.IgnoredNamespaces.Contains(px.Namespace) {
			continue
		}
		eps, err := c.Endpoints(paths, px)
		if err != nil {
			t.Fatalf("%s: proxy %s: CLI failed: %v", label, px.Key(), err)
		}
		meshscopeEDS[px.Key()] = eps
	}
	// Istio's endpoints converge once its informers have delivered every Pod: a bounded wait.
	istioEDS := IstioEndpoints(t, inv, proxies, meshscopeEDS, 5*time.Second)
	bad := 0
	for _, px := range proxies {
		if inject.IgnoredNamespaces.Contains(px.Namespace) {
			continue // the cluster suite checks that the CLI refuses these
		}
		got, err := c.Listeners(paths, px)
		if err != nil {
			t.Errorf("%s: proxy %s: CLI failed: %v", label, px.Key(), err)
			bad++
			continue
		}
		eps := meshscopeEDS[px.Key()]
		if m.disagree(px, "endpoint", "names", istioEDS[px.Key()], eps) {
			bad++
		}
		got = resolveAlternatives(t, label, px, got, istio[px.Key()])
		if m.disagree(px, "listener", "names", istio[px.Key()], got) {
			bad++
		}
	}
	return bad
}

// stateUnderTest is a mesh as the compare functions check it: the inventory Istio reads, and
// the cluster state, as the API server would hold it, written for the command line.
type stateUnderTest struct {
	t     testing.TB
	label string
	cli   CLI
	inv   *Inventory
	state string
	paths []string
}

func newStateUnderTest(t testing.TB, label, meshYAML string) *stateUnderTest {
	t.Helper()
	c := requireCLI(t)
	inv, err := ParseInventory(meshYAML)
	if err != nil {
		t.Fatalf("%s: inventory: %v", label, err)
	}
	state, err := inv.ClusterStateYAML()
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	return &stateUnderTest{t: t, label: label, cli: c, inv: inv, state: state, paths: writeFiles(t, t.TempDir(), []string{state})}
}

// disagree reports whether meshscope's lines for the proxy differ from Istio's, and when they
// do, fails the test with the difference, the saved cluster state and the command to rerun.
func (m *stateUnderTest) disagree(px Proxy, what, output string, istio, got []string) bool {
	m.t.Helper()
	d := FormatDiff(istio, got)
	if d == "" {
		return false
	}
	saved := saveFailingMesh(m.t, m.label+"-state", m.state)
	m.t.Errorf("%s: proxy %s: meshscope's %s disagree with Istio's\n%s  cluster state: %s\n  rerun: meshscope proxy-config %s -f %s --namespace %s --labels %s -o %s",
		m.label, px.Key(), what+"s", d, saved, what, saved, px.Namespace, LabelString(px.Labels), output)
	return true
}

// resolveAlternatives checks each listener meshscope names "<a|b>_P", bound to one of several
// addresses that istiod picks between arbitrarily, against Istio's list: Istio must have
// exactly one of them, which then stands in its place. Any other address in angle brackets is
// an error: the cluster state gives every address.
func resolveAlternatives(t testing.TB, label string, px Proxy, got, istio []string) []string {
	t.Helper()
	have := map[string]bool{}
	for _, n := range istio {
		have[n] = true
	}
	out := make([]string, 0, len(got))
	for _, n := range got {
		addr, port, _ := strings.Cut(strings.TrimPrefix(n, "<"), ">_")
		if !strings.HasPrefix(n, "<") || !strings.Contains(addr, "|") {
			if strings.Contains(n, "<") {
				t.Errorf("%s: proxy %s: listener %q has an unknown address, but the cluster state gives every address", label, px.Key(), n)
			}
			out = append(out, n)
			continue
		}
		var found []string
		for _, a := range strings.Split(addr, "|") {
			if have[a+"_"+port] {
				found = append(found, a+"_"+port)
			}
		}
		if len(found) != 1 {
			t.Errorf("%s: proxy %s: meshscope says istiod builds one of %q; Istio built %d of them", label, px.Key(), n, len(found))
			out = append(out, n)
			continue
		}
		out = append(out, found[0])
	}
	sort.Strings(out)
	return out
}

// TestListenersSeed compares the listeners of the seed's proxies, without and with the
// compiled Sidecar, and pins Istio's own list for foo's test-app.
func TestListenersSeed(t *testing.T) {
	before := readFile(t, "testdata/seed/before.yaml")
	sidecar := readFile(t, "testdata/seed/sidecar.yaml")
	proxies := []Proxy{seedProxyFoo, seedProxyBar}
	inv, err := ParseInventory(joinYAML(before, sidecar))
	if err != nil {
		t.Fatal(err)
	}
	got := IstioListeners(t, inv, proxies)[seedProxyFoo.Key()]
	// The provider's data source test pins these counts: 11 under the Sidecar, 14 without.
	if len(got) != 11 {
		t.Errorf("Istio gave foo's test-app %d listeners under the seed Sidecar, want 11: %v", len(got), got)
	}
	if n := len(IstioListeners(t, inv, []Proxy{seedProxyBar})[seedProxyBar.Key()]); n != 14 {
		t.Errorf("Istio gave bar's test-app (no Sidecar) %d listeners, want 14", n)
	}
	// The Sidecar imports foo and istio-system: the HTTP ports share 0.0.0.0_<port>; the TCP
	// and detected ports of the two istio-system Services listen on their VIPs.
	if !strings.Contains(strings.Join(got, " "), "0.0.0.0_80") || !strings.Contains(strings.Join(got, " "), "virtualOutbound") {
		t.Errorf("Istio's listeners for foo's test-app under the seed Sidecar lack 0.0.0.0_80 or virtualOutbound: %v", got)
	}
	compareListeners(t, "seed/before", before, proxies)
	compareListeners(t, "seed/sidecar", joinYAML(before, sidecar), proxies)
}

// TestListenersHandWritten compares the listeners on every hand-written case of the cluster
// suite.
func TestListenersHandWritten(t *testing.T) { eachHandWritten(t, compareListeners) }

// compareFunc checks one of meshscope's predictions against Istio on a mesh's proxies and
// returns how many disagree.
type compareFunc func(t testing.TB, label, meshYAML string, proxies []Proxy) int

// eachHandWritten runs compare on every hand-written case of the cluster suite.
func eachHandWritten(t *testing.T, compare compareFunc) {
	requireCLI(t)
	for _, c := range handWrittenCases() {
		t.Run(c.name, func(t *testing.T) {
			compare(t, c.name+" ["+c.rules+"]", joinYAML(c.files(t)...), c.proxies)
		})
	}
}

// eachRouteAndListenerCase runs compare on the route cases and the listener cases.
func eachRouteAndListenerCase(t *testing.T, compare compareFunc) {
	requireCLI(t)
	for _, c := range rdsCases() {
		t.Run(c.name, func(t *testing.T) {
			compare(t, c.name+" ["+c.rules+"]", c.mesh(t), c.proxies)
		})
	}
	for _, c := range ldsCases() {
		t.Run(c.name, func(t *testing.T) {
			compare(t, c.name+" ["+c.rules+"]", c.mesh(t), c.proxies)
		})
	}
}

// TestListenersRandom compares the listeners of every proxy of the random meshes.
func TestListenersRandom(t *testing.T) { eachRandomMesh(t, compareListeners) }

// eachRandomMesh runs compare on every random mesh of the flags and names the seeds on which
// some proxy disagreed.
func eachRandomMesh(t *testing.T, compare compareFunc) {
	requireCLI(t)
	var failed []string
	for i := 0; i < *flagMeshes; i++ {
		seed := *flagSeed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			m := GenerateMesh(seed)
			if bad := compare(t, fmt.Sprintf("seed=%d", seed), m.YAML, m.Proxies); bad > 0 {
				failed = append(failed, fmt.Sprintf("%d(%d/%d)", seed, bad, len(m.Proxies)))
			}
		})
	}
	if len(failed) > 0 {
		t.Errorf("mismatching seeds: %s", strings.Join(failed, " "))
	}
}

// ldsCase is a mesh for the listener rules (R48-R55) that the cluster suite's cases do not
// reach: binds, capture modes, ServiceEntry addresses, endpoints, reserved ports. want are
// names Istio's own generator must build for a proxy (a check of the harness), gone names it
// must not.
type ldsCase struct {
	name, rules string
	extra       []string
	seed        func(string) string
	proxies     []Proxy
	want, gone  map[*Proxy][]string
	// oneOf are names of which Istio builds exactly one.
	oneOf map[*Proxy][]string
}

const ldsServiceEntries = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: addr, namespace: foo}
spec:
  hosts: [addr.ext]
  addresses: [240.0.0.1, 240.0.0.2]
  ports: [{number: 7000, name: tcp, protocol: TCP}]
  resolution: STATIC
  endpoints: [{address: 10.40.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cidr, namespace: foo}
spec:
  hosts: [cidr.ext]
  addresses: [10.10.0.0/16]
  ports: [{number: 7600, name: tcp, protocol: TCP}]
  resolution: NONE
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: host32, namespace: foo}
spec:
  hosts: [host32.ext]
  addresses: [10.20.0.1/32]
  ports: [{number: 7601, name: tcp, protocol: TCP}]
  resolution: NONE
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: none-plain, namespace: foo}
spec:
  hosts: [plain.ext]
  ports: [{number: 5002, name: tcp, protocol: TCP}]
  resolution: NONE
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: none-selector, namespace: bar}
spec:
  hosts: [selected.ext]
  ports: [{number: 5004, name: tcp, protocol: TCP}]
  resolution: NONE
  workloadSelector: {labels: {app: test-app}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web-addr, namespace: foo}
spec:
  hosts: [web.ext]
  addresses: [240.0.1.1]
  ports: [{number: 8081, name: http, protocol: HTTP}, {number: 8443, name: tls, protocol: TLS}, {number: 5005, name: sniffed}]
  resolution: STATIC
  endpoints: [{address: 10.40.0.2}]
`

// ldsSelectorless: Services without selector whose EndpointSlices are written by hand (R57),
// one with a VIP and one headless (R51): conditions, two slices, a port of another name, an FQDN
// slice istiod skips, an endpoint naming a Pod that does not exist, persistent sessions.
const ldsSelectorless = `apiVersion: v1
kind: Service
metadata: {name: ext-db, namespace: bar}
spec:
  ports:
  - {name: tcp-db, port: 5432}
  - {name: http-api, port: 8080, targetPort: 9080}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-db-1, namespace: bar, labels: {kubernetes.io/service-name: ext-db}}
addressType: IPv4
ports: [{name: tcp-db, port: 15432}, {name: http-api, port: 9080}]
endpoints:
- addresses: [10.50.0.1]
- addresses: [10.50.0.2]
  conditions: {ready: false}
- addresses: [10.50.0.3]
  conditions: {ready: false, serving: true, terminating: true}
- addresses: [10.50.0.4]
  targetRef: {kind: Pod, name: gone, namespace: bar}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-db-2, namespace: bar, labels: {kubernetes.io/service-name: ext-db}}
addressType: IPv4
ports: [{name: tcp-db, port: 25432}, {name: other, port: 1}]
endpoints:
- addresses: [10.50.0.5, 10.50.0.6]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-db-fqdn, namespace: bar, labels: {kubernetes.io/service-name: ext-db}}
addressType: FQDN
ports: [{name: tcp-db, port: 5432}]
endpoints:
- addresses: [db.example.com]
---
apiVersion: v1
kind: Service
metadata: {name: ext-sticky, namespace: bar, labels: {istio.io/persistent-session: sticky}}
spec:
  ports: [{name: http, port: 8081}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-sticky-1, namespace: bar, labels: {kubernetes.io/service-name: ext-sticky}}
addressType: IPv4
ports: [{name: http, port: 8081}]
endpoints:
- addresses: [10.50.2.1]
  conditions: {ready: false, serving: true, terminating: true}
- addresses: [10.50.2.2]
  conditions: {ready: false, serving: false, terminating: true}
- addresses: [10.50.2.3]
  conditions: {ready: false, terminating: false}
---
apiVersion: v1
kind: Service
metadata: {name: ext-hl, namespace: bar}
spec:
  clusterIP: None
  ports: [{name: tcp, port: 7432}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-hl-1, namespace: bar, labels: {kubernetes.io/service-name: ext-hl}}
addressType: IPv4
ports: [{name: tcp, port: 7432}]
endpoints:
- addresses: [10.50.1.1]
- addresses: [10.50.1.2]
  conditions: {ready: false, terminating: true}
`

const ldsHeadless = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: bar}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: db
        ports: [{containerPort: 5432, name: pg}, {containerPort: 9000, name: admin}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: bar}
spec:
  clusterIP: None
  selector: {app: db}
  ports:
  - {name: tcp-pg, port: 5432, targetPort: pg}
  - {name: admin, port: 9000}
  - {name: http-api, port: 8080}
  - {name: tcp-missing, port: 6000, targetPort: nosuch}
---
apiVersion: v1
kind: Service
metadata: {name: empty-hl, namespace: bar}
spec:
  clusterIP: None
  selector: {app: nobody}
  ports: [{name: tcp, port: 5433}]
---
apiVersion: v1
kind: Service
metadata: {name: reserved, namespace: bar}
spec:
  selector: {app: nobody}
  ports:
  - {name: http-status, port: 15021}
  - {name: http-prom, port: 15090}
  - {name: tcp-inbound, port: 15006}
  - {name: http-outbound, port: 15001}
  - {name: dns, port: 53, protocol: UDP}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: bar}
spec:
  type: ExternalName
  externalName: example.com
  ports: [{name: tcp, port: 5434}]
`

func ldsSidecar(ns, spec string) string {
	return "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: " + ns + "}\nspec:\n" + spec
}

var (
	ldsFoo = Proxy{Namespace: "foo", Labels: map[string]string{"app": "test-app"}}
	ldsBar = Proxy{Namespace: "bar", Labels: map[string]string{"app": "test-app"}}
	ldsDB  = Proxy{Namespace: "bar", Labels: map[string]string{"app": "db"}}
)

func ldsCases() []ldsCase {
	return []ldsCase{
		{
			name: "lds-eds-selectorless-slices", rules: "R51 R57",
			extra:   []string{ldsSelectorless},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"10.50.1.1_7432", "10.50.1.2_7432"}},
		},
		{
			name: "lds-service-entry-addresses", rules: "R50 R51",
			extra:   []string{ldsServiceEntries},
			proxies: []Proxy{ldsFoo, ldsBar},
			want: map[*Proxy][]string{&ldsFoo: {"240.0.0.1_7000", "240.0.0.2_7000", "0.0.0.0_7600", "10.20.0.1_7601",
				"0.0.0.0_5002", "0.0.0.0_8081", "240.0.1.1_8443", "240.0.1.1_5005"}},
			gone: map[*Proxy][]string{&ldsFoo: {"0.0.0.0_5004"}},
		},
		{
			name: "lds-exact-hosts-one-address", rules: "R50",
			extra:   []string{ldsServiceEntries, ldsSidecar("bar", "  egress:\n  - hosts: [foo/addr.ext, foo/web.ext]\n")},
			proxies: []Proxy{ldsBar},
			want:    map[*Proxy][]string{&ldsBar: {"0.0.0.0_8081", "virtualOutbound"}},
			oneOf:   map[*Proxy][]string{&ldsBar: {"240.0.0.1_7000", "240.0.0.2_7000"}},
		},
		{
			name: "lds-headless-reserved-alias-udp", rules: "R49 R51 R52",
			extra:   []string{ldsHeadless},
			proxies: []Proxy{ldsFoo, ldsDB},
			want:    map[*Proxy][]string{&ldsFoo: {"0.0.0.0_8080"}},
			gone:    map[*Proxy][]string{&ldsFoo: {"0.0.0.0_15021", "0.0.0.0_15090", "0.0.0.0_15001", "0.0.0.0_5434"}},
		},
		{
			name: "lds-egress-port-and-bind", rules: "R53 R54",
			extra: []string{ldsHeadless, ldsSidecar("foo", `  egress:
  - port: {number: 80, protocol: HTTP, name: http}
    bind: 127.0.0.2
    hosts: ["./*", "bar/*"]
  - port: {number: 9000, name: auto}
    hosts: ["bar/*"]
  - port: {number: 5432, protocol: TCP, name: tcp}
    hosts: ["bar/*"]
  - hosts: ["istio-system/*", "bar/*"]
`)},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"127.0.0.2_80", "0.0.0.0_9000", "0.0.0.0_5432"}},
		},
		{
			name: "lds-egress-capture-none", rules: "R53",
			extra:   []string{ldsHeadless, ldsSidecar("foo", "  egress:\n  - captureMode: NONE\n    hosts: [\"./*\", \"bar/*\", \"istio-system/*\"]\n")},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"127.0.0.1_80", "127.0.0.1_5432", "virtualOutbound"}},
		},
		{
			name: "lds-egress-catch-all-bind", rules: "R53 R54",
			extra:   []string{ldsSidecar("foo", "  egress:\n  - bind: 127.0.0.3\n    hosts: [\"*/*\"]\n")},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"127.0.0.3_80", "127.0.0.3_15012"}},
		},
		{
			name: "lds-ingress-bound", rules: "R55",
			extra: []string{ldsSidecar("foo", `  ingress:
  - port: {number: 9081, protocol: HTTP, name: http}
    captureMode: NONE
    defaultEndpoint: 127.0.0.1:8080
  - port: {number: 9082, protocol: HTTP, name: http2}
    captureMode: NONE
    bind: 0.0.0.0
    defaultEndpoint: 127.0.0.1:8081
  - port: {number: 9083, protocol: TCP, name: tcp}
    defaultEndpoint: 127.0.0.1:8082
  egress:
  - hosts: ["./*"]
`)},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"0.0.0.0_9082", "virtualInbound"}},
			gone:    map[*Proxy][]string{&ldsFoo: {"0.0.0.0_9083"}},
		},
		{
			name: "lds-interception-none", rules: "R48 R55",
			seed: func(s string) string {
				return mustReplace(s, "  namespace: foo\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: test-app\n  template:\n    metadata:\n",
					"  namespace: foo\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: test-app\n  template:\n    metadata:\n      annotations: {sidecar.istio.io/interceptionMode: NONE}\n")
			},
			extra: []string{ldsSidecar("foo", `  ingress:
  - port: {number: 9081, protocol: HTTP, name: http}
    defaultEndpoint: 127.0.0.1:8080
  egress:
  - hosts: ["./*", "istio-system/*"]
`)},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"127.0.0.1_80", "127.0.0.1_15012"}},
			gone:    map[*Proxy][]string{&ldsFoo: {"virtualOutbound", "virtualInbound"}},
		},
	}
}

func (c ldsCase) mesh(t *testing.T) string {
	seed := readFile(t, "testdata/seed/before.yaml")
	if c.seed != nil {
		seed = c.seed(seed)
	}
	return joinYAML(append([]string{seed}, c.extra...)...)
}

// TestListenerCasesIstio checks Istio's own listeners on the listener cases against what the
// rules say it builds (a check of the harness and of the catalogue; no CLI).
func TestListenerCasesIstio(t *testing.T) {
	for _, c := range ldsCases() {
		t.Run(c.name, func(t *testing.T) {
			inv, err := ParseInventory(c.mesh(t))
			if err != nil {
				t.Fatal(err)
			}
			got := IstioListeners(t, inv, c.proxies)
			for px, want := range c.want {
				have := map[string]bool{}
				for _, n := range got[px.Key()] {
					have[n] = true
				}
				for _, w := range want {
					if !have[w] {
						t.Errorf("%s [%s] %s: Istio built no listener %s: %v", c.name, c.rules, px.Key(), w, got[px.Key()])
					}
				}
				if one := c.oneOf[px]; len(one) > 0 {
					n := 0
					for _, o := range one {
						if have[o] {
							n++
						}
					}
					if n != 1 {
						t.Errorf("%s [%s] %s: Istio built %d of %v, the rules say exactly one", c.name, c.rules, px.Key(), n, one)
					}
				}
				for _, g := range c.gone[px] {
					if have[g] {
						t.Errorf("%s [%s] %s: Istio built listener %s, which the rules say it does not", c.name, c.rules, px.Key(), g)
					}
				}
			}
		})
	}
}

// TestListenerCases compares meshscope's listeners with Istio's on the listener cases.
func TestListenerCases(t *testing.T) {
	requireCLI(t)
	for _, c := range ldsCases() {
		t.Run(c.name, func(t *testing.T) {
			compareListeners(t, c.name+" ["+c.rules+"]", c.mesh(t), c.proxies)
		})
	}
}
