package predict

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The conformance module checks every listener name against Istio's own generator on meshes
// whose addresses are all known (TestListenerCases, TestListenersRandom). These tests pin
// what only meshscope decides: how a listener whose address the manifests do not carry is
// named and counted.

const listenerMesh = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: a}
spec: {selector: {app: web}, ports: [{name: http, port: 80}, {name: tcp-db, port: 5432}, {name: plain, port: 9000}]}
---
apiVersion: v1
kind: Service
metadata: {name: known, namespace: a}
spec: {clusterIP: 10.96.0.7, selector: {app: web}, ports: [{name: tcp, port: 6000}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: a}
spec: {clusterIP: None, selector: {app: db}, ports: [{name: tcp-pg, port: 5433}, {name: http, port: 8080}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: a}
spec: {replicas: 3, template: {metadata: {labels: {app: db}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: a}
spec: {template: {metadata: {labels: {app: web}}}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: multi, namespace: a}
spec:
  hosts: [multi.ext]
  addresses: [240.0.0.1, 240.0.0.2/32, 10.10.0.0/16]
  ports: [{number: 7000, name: tcp, protocol: TCP}]
  resolution: STATIC
  endpoints: [{address: 10.40.0.1}]
`

func listenerPredictor(t *testing.T, version string, extra ...string) *Predictor {
	t.Helper()
	return yamlPredictor(t, version, strings.Join(append([]string{listenerMesh}, extra...), "\n---\n"))
}

// clientDeployments are Deployments "client" in the namespaces, as YAML documents.
func clientDeployments(namespaces ...string) string {
	docs := make([]string, len(namespaces))
	for i, ns := range namespaces {
		docs[i] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: client, namespace: " + ns + "}\n" +
			"spec: {template: {metadata: {labels: {app: client}}}}"
	}
	return strings.Join(docs, "\n---\n")
}

// yamlPredictor predicts the mesh of the manifests for the Istio version ("" for the newest).
func yamlPredictor(t *testing.T, version, manifests string) *Predictor {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("mesh", []byte(manifests)); err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{IstioVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestListenersNameUnknownAddresses(t *testing.T) {
	p := listenerPredictor(t, "")
	web := Proxy{Namespace: "a", Labels: map[string]string{"app": "web"}}
	db := Proxy{Namespace: "a", Labels: map[string]string{"app": "db"}}
	ls := p.Listeners(web)
	want := []string{
		"0.0.0.0_7000", // R50: a CIDR address listens on the wildcard
		"0.0.0.0_80",   // R50: HTTP always on the wildcard
		"0.0.0.0_8080", // R51: a headless HTTP port is not expanded
		"10.96.0.7_6000",
		"240.0.0.1_7000", "240.0.0.2_7000", // R50: a /32 is its IP
		// R51: one listener per replica of the StatefulSet the headless Service selects.
		"<db.a pod 1 IP>_5433", "<db.a pod 2 IP>_5433", "<db.a pod 3 IP>_5433",
		// R50: the API server assigns these VIPs on create.
		"<web.a VIP>_5432", "<web.a VIP>_9000",
		"virtualInbound", "virtualOutbound",
	}
	if got := listenerNames(ls); !slices.Equal(got, want) {
		t.Errorf("listeners of web:\n got %q\nwant %q", got, want)
	}
	for _, l := range ls {
		if known := !strings.Contains(l.Name, "<"); l.AddressKnown != known {
			t.Errorf("%s: AddressKnown = %v", l.Name, l.AddressKnown)
		}
	}
	// R51: the proxy's own pod is not an endpoint it calls through a listener of its own.
	got := listenerNames(p.Listeners(db))
	if n := countPrefix(got, "<db.a pod "); n != 2 {
		t.Errorf("a db replica gets %d endpoint listeners of its own Service, want 2 (3 replicas less itself): %q", n, got)
	}
}

func TestListenersExactHostsAndRelease(t *testing.T) {
	sidecar := `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: a}
spec: {egress: [{hosts: [a/multi.ext]}]}`
	web := Proxy{Namespace: "a", Labels: map[string]string{"app": "web"}}
	// R50: from 1.31 the exact-host index keeps one of the addresses, which istiod picks
	// arbitrarily; before, every address has its listener.
	got := listenerNames(listenerPredictor(t, "1.31", sidecar).Listeners(web))
	if !slices.Contains(got, "<240.0.0.1|240.0.0.2|10.10.0.0/16>_7000") {
		t.Errorf("1.31: %q lacks the listener on one of the addresses", got)
	}
	got = listenerNames(listenerPredictor(t, "1.30", sidecar).Listeners(web))
	for _, w := range []string{"240.0.0.1_7000", "240.0.0.2_7000", "0.0.0.0_7000"} {
		if !slices.Contains(got, w) {
			t.Errorf("1.30: %q lacks %s", got, w)
		}
	}
}

func TestListenersInterceptionNone(t *testing.T) {
	p := listenerPredictor(t, "", `apiVersion: apps/v1
kind: Deployment
metadata: {name: raw, namespace: a}
spec: {template: {metadata: {labels: {app: raw}, annotations: {sidecar.istio.io/interceptionMode: NONE}}}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: raw, namespace: a}
spec:
  workloadSelector: {labels: {app: raw}}
  ingress: [{port: {number: 9081, protocol: HTTP, name: http}, defaultEndpoint: "127.0.0.1:8080"}]
  egress: [{hosts: ["./*"]}]`)
	got := listenerNames(p.Listeners(Proxy{Namespace: "a", Labels: map[string]string{"app": "raw"}}))
	// R48: no virtual listeners; R53: every egress port binds localhost; R55: the ingress port
	// binds the pod IP, unknown here.
	for _, w := range []string{"127.0.0.1_80", "127.0.0.1_5432", "<raw.a pod IP>_9081"} {
		if !slices.Contains(got, w) {
			t.Errorf("%q lacks %s", got, w)
		}
	}
	if slices.Contains(got, "virtualOutbound") || slices.Contains(got, "virtualInbound") {
		t.Errorf("%q has a virtual listener, but the proxy captures nothing", got)
	}
}

func listenerNames(ls []Listener) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

func countPrefix(xs []string, prefix string) int {
	n := 0
	for _, x := range xs {
		if strings.HasPrefix(x, prefix) {
			n++
		}
	}
	return n
}

// ListenerCount, RouteCount and EndpointCount count what Listeners, Routes and Endpoints list, for
// every workload of meshes with endpoint listeners of the proxy's own pods, Sidecars, a proxy
// that captures nothing and VirtualServices that route by the caller's labels.
func TestListenerCountIsListeners(t *testing.T) {
	for _, extra := range [][]string{
		nil,
		{`apiVersion: v1
kind: Pod
metadata: {name: db-x, namespace: a, labels: {app: db}}
spec: {containers: [{name: c, image: i}]}
status: {podIP: 10.1.0.9}`},
		{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: a}
spec: {egress: [{bind: 127.0.0.3, hosts: ["./*"]}, ]}`},
		{`apiVersion: apps/v1
kind: Deployment
metadata: {name: raw, namespace: a}
spec: {template: {metadata: {labels: {app: raw}, annotations: {sidecar.istio.io/interceptionMode: NONE}}}}`},
		// Only web's proxies get the VirtualService's route, so only they lack the default
		// virtual host of its host; raw is on no route of it at all.
		{`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: only-web, namespace: a}
spec:
  hosts: [vs-only.example.com]
  http: [{match: [{sourceLabels: {app: web}}], route: [{destination: {host: web.a.svc.cluster.local}}]}]`},
	} {
		p := listenerPredictor(t, "", extra...)
		for _, w := range p.WorkloadProxies() {
			// twice: the second count reads the scope's cache
			for range 2 {
				checkCounts(t, p, w)
			}
		}
	}
}

// checkCounts fails t when ListenerCount or RouteCount disagree with Listeners and Routes.
func checkCounts(t *testing.T, p *Predictor, w WorkloadProxy) {
	t.Helper()
	if got, want := p.ListenerCount(w.Proxy()), len(p.Listeners(w.Proxy())); got != want {
		t.Errorf("%s/%s: ListenerCount %d, Listeners %d", w.Namespace, w.Name, got, want)
	}
	routes := p.Routes(w.Proxy())
	vhosts := 0
	for _, r := range routes {
		vhosts += len(r.VirtualHosts)
	}
	if gotR, gotV := p.RouteCount(w.Proxy()); gotR != len(routes) || gotV != vhosts {
		t.Errorf("%s/%s: RouteCount %d routes, %d virtual hosts; Routes %d, %d", w.Namespace, w.Name, gotR, gotV, len(routes), vhosts)
	}
	res := p.Predict(w.Proxy())
	if got, want := p.EndpointCount(res), len(p.Endpoints(res)); got != want {
		t.Errorf("%s/%s: EndpointCount %d, Endpoints %d", w.Namespace, w.Name, got, want)
	}
}

// Endpoints (R57): a controller's replicas are named with their count when the inventory holds no
// Pod of it; a subset keeps the endpoints whose labels hold its own; a ServiceEntry lists each
// endpoint once per address; a Service whose exportTo annotation names "~" has none.
func TestEndpoints(t *testing.T) {
	p := listenerPredictor(t, "", `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: a}
spec:
  host: web.a.svc.cluster.local
  subsets: [{name: v2, labels: {version: v2}}, {name: web, labels: {app: web}}]
---
apiVersion: v1
kind: Service
metadata: {name: hidden, namespace: a, annotations: {networking.istio.io/exportTo: "~"}}
spec: {selector: {app: web}, ports: [{name: http, port: 8081}]}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-hidden, namespace: a}
spec:
  hosts: [web.a.svc.cluster.local]
  http: [{route: [{destination: {host: hidden.a.svc.cluster.local}}]}]`)
	res := p.Predict(Proxy{Namespace: "a", Labels: map[string]string{"app": "web"}})
	eps := p.Endpoints(res)
	var got []string
	for _, e := range eps {
		got = append(got, e.Cluster+" "+e.Address+":"+strconv.Itoa(e.Port))
	}
	want := []string{
		"outbound|5432||web.a.svc.cluster.local <web.a pod 1 IP>:5432",
		"outbound|5432|web|web.a.svc.cluster.local <web.a pod 1 IP>:5432",
		"outbound|6000||known.a.svc.cluster.local <web.a pod 1 IP>:6000",
		"outbound|7000||multi.ext 10.40.0.1:7000",
		"outbound|7000||multi.ext 10.40.0.1:7000",
		"outbound|7000||multi.ext 10.40.0.1:7000",
		"outbound|80||web.a.svc.cluster.local <web.a pod 1 IP>:80",
		"outbound|80|web|web.a.svc.cluster.local <web.a pod 1 IP>:80",
		"outbound|9000||web.a.svc.cluster.local <web.a pod 1 IP>:9000",
		"outbound|9000|web|web.a.svc.cluster.local <web.a pod 1 IP>:9000",
	}
	slices.Sort(want)
	if !slices.Contains(res.Names(), "outbound|8081||hidden.a.svc.cluster.local") {
		t.Error("the VirtualService does not pull in the hidden Service's cluster: the case tests nothing")
	}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints:\n got %q\nwant %q", got, want)
	}
}

// RouteCount shares a count between the default scopes of namespaces, whose routes import the
// same services, except where a host without a dot could be a service's short name in one
// namespace and not another, as ServiceEntry "web" is a.web's in namespace a: each proxy's counts
// are still what Routes lists, and in a the name "web" is the domain of one virtual host only.
func TestRouteCountAcrossNamespaces(t *testing.T) {
	p := yamlPredictor(t, "", `apiVersion: v1
kind: Service
metadata: {name: web, namespace: a, creationTimestamp: "2025-01-01T00:00:00Z"}
spec: {clusterIP: 10.96.0.1, selector: {app: web}, ports: [{name: http, port: 80}]}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: c, creationTimestamp: "2025-01-01T00:00:01Z"}
spec: {hosts: [web], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}
---
`+clientDeployments("a", "b"))
	for _, w := range p.WorkloadProxies() {
		checkCounts(t, p, w)
		if w.Namespace != "a" {
			continue
		}
		n := 0
		for _, r := range p.Routes(w.Proxy()) {
			for _, vh := range r.VirtualHosts {
				if slices.Contains(vh.Domains, "web") {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("%d virtual hosts of a's proxy have domain web, want 1", n)
		}
	}
}

// ListenerCount shares a scope's listeners between the scopes of one fingerprint: the default
// scopes of namespaces b and c import the same services, a's also imports the Service a keeps to
// itself, and a Sidecar's copy of the Predictor reads the same counts. Each proxy's count is still
// what Listeners lists, in every namespace and copy.
func TestListenerCountAcrossNamespaces(t *testing.T) {
	p := yamlPredictor(t, "", `apiVersion: v1
kind: Service
metadata: {name: web, namespace: a}
spec: {clusterIP: 10.96.0.1, selector: {app: web}, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: own, namespace: a, annotations: {networking.istio.io/exportTo: "."}}
spec: {clusterIP: 10.96.0.2, selector: {app: web}, ports: [{name: tcp, port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: b}
spec: {clusterIP: None, selector: {app: db}, ports: [{name: tcp, port: 3306}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: b, labels: {app: db}}
spec: {containers: [{name: c, image: i}]}
status: {podIP: 10.1.0.7}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: a}
spec: {template: {metadata: {labels: {app: web}}}}
---
`+clientDeployments("b", "c"))
	// every proxy, the db pod's own included, whose endpoint listener it leaves out
	for _, w := range p.WorkloadProxies() {
		checkCounts(t, p, w)
	}
	if got := len(p.ix.ldsCounts.m); got != 2 {
		t.Errorf("%d listener counts for the default scopes of a, b and c, want 2 (b's and c's shared)", got)
	}
	sc := mesh.New()
	if err := sc.AddYAML("sidecar", []byte(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: c}
spec: {egress: [{hosts: ["./*", "a/*"]}]}`)); err != nil {
		t.Fatal(err)
	}
	head := p.WithSidecars(sc.Sidecars...)
	for _, w := range head.WorkloadProxies() {
		checkCounts(t, head, w)
	}
	if got := len(p.ix.ldsCounts.m); got != 3 {
		t.Errorf("%d listener counts once c has a Sidecar, want 3 (its copy's own added)", got)
	}
}
