package conformance

import (
	"slices"
	"strings"
	"testing"

	"istio.io/istio/pkg/kube/inject"
)

// compareRoutes checks meshscope's route configurations (names, virtual hosts and their domains,
// in istiod's order) against Istio's RDS generator for every proxy, given the inventory as the
// cluster holds it. It returns the number of proxies that disagree.
func compareRoutes(t testing.TB, label, meshYAML string, proxies []Proxy) int {
	t.Helper()
	m := newStateUnderTest(t, label, meshYAML)
	c, paths := m.cli, m.paths
	istio := IstioRoutes(t, m.inv, proxies)
	bad := 0
	for _, px := range proxies {
		if inject.IgnoredNamespaces.Contains(px.Namespace) {
			continue
		}
		got, err := c.Routes(paths, px)
		if err != nil {
			t.Errorf("%s: proxy %s: CLI failed: %v", label, px.Key(), err)
			bad++
			continue
		}
		got = resolveDomainAlternatives(got, istio[px.Key()])
		if m.disagree(px, "route", "json", istio[px.Key()], got) {
			bad++
		}
	}
	return bad
}

// resolveDomainAlternatives replaces, in a route line whose domains name "<a|b>" (a ServiceEntry
// address istiod picks arbitrarily; "none" when it may give it to another virtual host), the
// placeholder by the one alternative that makes the line one of Istio's. A line no alternative fits stays as it is, and fails the comparison.
func resolveDomainAlternatives(got, istio []string) []string {
	out := make([]string, 0, len(got))
	for _, line := range got {
		i, j := strings.Index(line, "<"), strings.Index(line, ">")
		if i < 0 || j < i || !strings.Contains(line[i:j], "|") {
			out = append(out, line)
			continue
		}
		picked := line
		for _, a := range strings.Split(line[i+1:j], "|") {
			cand := line[:i] + a + line[j+1:]
			if a == "none" { // istiod may give the address to another virtual host
				cand = strings.TrimSuffix(line[:i], ",") + line[j+1:]
			}
			if slices.Contains(istio, cand) {
				picked = cand
				break
			}
		}
		out = append(out, picked)
	}
	slices.Sort(out)
	return out
}

// TestRoutesSeed compares the routes of the seed's proxies, without and with the compiled
// Sidecar, and pins a virtual host of Istio's own answer for foo's test-app.
func TestRoutesSeed(t *testing.T) {
	before := readFile(t, "testdata/seed/before.yaml")
	sidecar := readFile(t, "testdata/seed/sidecar.yaml")
	proxies := []Proxy{seedProxyFoo, seedProxyBar}
	inv, err := ParseInventory(joinYAML(before, sidecar))
	if err != nil {
		t.Fatal(err)
	}
	got := IstioRoutes(t, inv, proxies)[seedProxyFoo.Key()]
	if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "80\tallow_any\t*") }) {
		t.Errorf("Istio's route 80 for foo's test-app has no allow_any catch-all: %v", got)
	}
	compareRoutes(t, "seed/before", before, proxies)
	compareRoutes(t, "seed/sidecar", joinYAML(before, sidecar), proxies)
}

// TestRoutesHandWritten compares the routes on every hand-written case of the cluster suite.
func TestRoutesHandWritten(t *testing.T) { eachHandWritten(t, compareRoutes) }

// TestRouteCases compares the routes on the route cases and on the listener cases (binds,
// capture modes, ServiceEntry addresses).
func TestRouteCases(t *testing.T) { eachRouteAndListenerCase(t, compareRoutes) }

// TestRoutesRandom compares the routes of every proxy of the random meshes.
func TestRoutesRandom(t *testing.T) { eachRandomMesh(t, compareRoutes) }

// rdsCase is a mesh for the route rules (R58-R61) that the other suites reach rarely: the
// conflicts on a bound port that drop or replace a route, a VirtualService host that names no
// service, the catch-all of REGISTRY_ONLY, alias and headless domains. want are substrings
// that some line of Istio's routes for a proxy must hold (a check of the harness), gone
// substrings no line may hold; "\n" marks the start of a line.
type rdsCase struct {
	name, rules string
	extra       []string
	proxies     []Proxy
	want, gone  map[*Proxy][]string
}

const rdsServices = `apiVersion: v1
kind: Service
metadata: {name: a-tcp, namespace: bar, creationTimestamp: "2025-01-01T00:00:01Z"}
spec: {clusterIP: 10.96.1.1, selector: {app: db}, ports: [{name: tcp, port: 7080}]}
---
apiVersion: v1
kind: Service
metadata: {name: b-http, namespace: bar, creationTimestamp: "2025-01-01T00:00:02Z"}
spec: {clusterIP: 10.96.1.2, selector: {app: db}, ports: [{name: http, port: 7080}, {name: http-c, port: 7090}]}
---
apiVersion: v1
kind: Service
metadata: {name: d-auto, namespace: bar, creationTimestamp: "2025-01-01T00:00:03Z"}
spec: {clusterIP: 10.96.1.4, selector: {app: db}, ports: [{name: plain, port: 7090}]}
---
apiVersion: v1
kind: Service
metadata: {name: e-alias, namespace: bar, creationTimestamp: "2025-01-01T00:00:04Z"}
spec: {type: ExternalName, externalName: b-http.bar.svc.cluster.local, ports: [{name: http, port: 7080}]}
`

func (c rdsCase) mesh(t *testing.T) string {
	return joinYAML(append([]string{readFile(t, "testdata/seed/before.yaml")}, c.extra...)...)
}

func rdsCases() []rdsCase {
	return []rdsCase{
		{
			name: "rds-http-over-tcp-on-bind", rules: "R58",
			extra:   []string{ldsHeadless, rdsServices, ldsSidecar("foo", "  egress:\n  - bind: 127.0.0.5\n    hosts: [\"bar/*\"]\n")},
			proxies: []Proxy{ldsFoo},
			// a-tcp's match-all chain on 127.0.0.5_7080 leaves no room for b-http's HTTP chain;
			// on 127.0.0.5_7090, d-auto replaces b-http's HTTP listener with its own route.
			want: map[*Proxy][]string{&ldsFoo: {"80\tbar.bar.svc.cluster.local:80\t", "d-auto.bar.svc.cluster.local:7090\t"}},
			gone: map[*Proxy][]string{&ldsFoo: {"\n7080\t", "\n7090\t"}},
		},
		{
			name: "rds-auto-over-http-on-bind", rules: "R58 R61",
			extra:   []string{ldsHeadless, rdsServices, ldsSidecar("foo", "  egress:\n  - bind: 127.0.0.6\n    hosts: [\"bar/b-http.bar.svc.cluster.local\", \"bar/d-auto.bar.svc.cluster.local\"]\n")},
			proxies: []Proxy{ldsFoo},
			// d-auto replaces b-http's listener on 127.0.0.6_7090: its own route, domains "*".
			want: map[*Proxy][]string{&ldsFoo: {"d-auto.bar.svc.cluster.local:7090\td-auto.bar.svc.cluster.local:7090\t*"}},
			gone: map[*Proxy][]string{&ldsFoo: {"\n7090\t"}},
		},
		{
			name: "rds-default-sniffed-and-aliases", rules: "R59 R60 R61",
			extra:   []string{ldsHeadless, rdsServices},
			proxies: []Proxy{ldsFoo, ldsDB},
			want: map[*Proxy][]string{
				&ldsFoo: {"7080\tb-http.bar.svc.cluster.local:7080\tb-http.bar.svc.cluster.local,b-http.bar.svc.cluster.local.,b-http.bar,b-http.bar.svc,e-alias.bar.svc.cluster.local,",
					"d-auto.bar.svc.cluster.local:7090\td-auto.bar.svc.cluster.local:7090\t*",
					"8080\tdb.bar.svc.cluster.local:8080\tdb.bar.svc.cluster.local,db.bar.svc.cluster.local.,db.bar,db.bar.svc,*.db.bar.svc.cluster.local,",
					"80\tallow_any\t*"},
				&ldsDB: {"7080\tb-http.bar.svc.cluster.local:7080\tb-http.bar.svc.cluster.local,b-http.bar.svc.cluster.local.,b-http,b-http.bar.svc,b-http.bar,"},
			},
		},
		{
			name: "rds-registry-only-and-vs-hosts", rules: "R59 R61",
			extra: []string{rdsServices, ldsSidecar("foo", "  outboundTrafficPolicy: {mode: REGISTRY_ONLY}\n  egress:\n  - hosts: [\"bar/*\", \"./*\"]\n"),
				`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ext, namespace: bar}
spec:
  hosts: [nothere.example.com, b-http.bar.svc.cluster.local]
  http:
  - match: [{sourceLabels: {app: test-app}}]
    route: [{destination: {host: b-http.bar.svc.cluster.local, port: {number: 7080}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: other, namespace: bar}
spec:
  hosts: [elsewhere.example.com]
  http:
  - match: [{sourceLabels: {app: nobody}}]
    route: [{destination: {host: b-http.bar.svc.cluster.local}}]
`},
			proxies: []Proxy{ldsFoo},
			// The VirtualService's routes let foo's test-app in: its other host becomes a virtual
			// host on the services' ports; a VirtualService whose routes do not is left out.
			want: map[*Proxy][]string{&ldsFoo: {"7080\tnothere.example.com:7080\tnothere.example.com", "80\tblock_all\t*"}},
			gone: map[*Proxy][]string{&ldsFoo: {"elsewhere.example.com", "allow_any"}},
		},
		{
			// A ServiceEntry host that is also a short name of a Service (bar.bar for
			// bar.bar.svc.cluster.local) keeps that domain: the Service's virtual host loses it, and
			// a call to the Service by that name reaches the ServiceEntry (the trace's virtual host
			// step, R62).
			name: "rds-short-name-taken", rules: "R60 R62",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: bar-bar, namespace: foo}
spec: {hosts: [bar.bar], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS, location: MESH_EXTERNAL}
`},
			proxies: []Proxy{ldsFoo},
			want:    map[*Proxy][]string{&ldsFoo: {"80\tbar.bar:80\tbar.bar,bar.bar."}},
			gone:    map[*Proxy][]string{&ldsFoo: {",bar.bar,"}},
		},
	}
}

// TestRouteCasesIstio checks Istio's own routes on the route cases against what the rules say
// it builds (a check of the harness and of the catalogue; no CLI).
func TestRouteCasesIstio(t *testing.T) {
	for _, c := range rdsCases() {
		t.Run(c.name, func(t *testing.T) {
			inv, err := ParseInventory(c.mesh(t))
			if err != nil {
				t.Fatal(err)
			}
			got := IstioRoutes(t, inv, c.proxies)
			has := func(px *Proxy, sub string) bool {
				return slices.ContainsFunc(got[px.Key()], func(l string) bool { return strings.Contains("\n"+l, sub) })
			}
			for px, want := range c.want {
				for _, w := range want {
					if !has(px, w) {
						t.Errorf("%s [%s] %s: no line of Istio's routes holds %q:\n%s", c.name, c.rules, px.Key(), w, strings.Join(got[px.Key()], "\n"))
					}
				}
			}
			for px, gone := range c.gone {
				for _, g := range gone {
					if has(px, g) {
						t.Errorf("%s [%s] %s: a line of Istio's routes holds %q, which the rules say it does not:\n%s", c.name, c.rules, px.Key(), g, strings.Join(got[px.Key()], "\n"))
					}
				}
			}
		})
	}
}
