// Package bench generates synthetic meshes for meshscope's benchmarks (make
// bench): services in team namespaces, two workloads per service, and for every
// service a declared set of dependencies drawn with a Zipf skew, so that a few
// hub services are called by many. The same mesh files feed the predictor here
// and Istio's own config generator in the conformance module.
package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// Spec describes a generated mesh. The zero values of the optional fields take
// the defaults of DefaultSpec.
type Spec struct {
	// Services is the number of application services.
	Services int
	// PerNamespace is the number of services in each team namespace (default 10).
	PerNamespace int
	// WorkloadsPerService is the number of Deployments behind each service, one
	// per version label (default 2).
	WorkloadsPerService int
	// Dependencies is the number of distinct services each service calls (default 5).
	Dependencies int
	// ZipfS is the Zipf exponent of the callee popularity (default 1.1, must be > 1).
	ZipfS float64
	// Seed makes the mesh deterministic (default 1).
	Seed uint64
}

// DefaultSpec returns the benchmark mesh of n services.
func DefaultSpec(n int) Spec {
	return Spec{Services: n, PerNamespace: 10, WorkloadsPerService: 2, Dependencies: 5, ZipfS: 1.1, Seed: 1}
}

func (s Spec) withDefaults() Spec {
	d := DefaultSpec(s.Services)
	if s.PerNamespace > 0 {
		d.PerNamespace = s.PerNamespace
	}
	if s.WorkloadsPerService > 0 {
		d.WorkloadsPerService = s.WorkloadsPerService
	}
	if s.Dependencies > 0 {
		d.Dependencies = s.Dependencies
	}
	if s.ZipfS > 1 {
		d.ZipfS = s.ZipfS
	}
	if s.Seed != 0 {
		d.Seed = s.Seed
	}
	return d
}

// Service ports of every application service: name, port and target port.
var appPorts = []struct {
	Name   string
	Port   int
	Target int
}{{"http", 80, 8080}, {"grpc", 9090, 9090}}

// InboundPerWorkload is the number of inbound clusters of an application
// workload: the distinct target ports of the one Service that selects it.
const InboundPerWorkload = 2

// FixedClusters are the clusters every sidecar holds: BlackHoleCluster,
// PassthroughCluster and InboundPassthroughCluster.
const FixedClusters = 3

// App is one application service, its workloads and what it calls.
type App struct {
	Namespace string
	Name      string
	// Deps are the declared dependencies, "name.namespace" with the called ports.
	Deps []scope.Dependency
	// Workloads are the Deployment names behind the service.
	Workloads []string
}

// Selector is the workload selector of the app's scope: every version of the app.
func (a App) Selector() map[string]string { return map[string]string{"app": a.Name} }

// Declaration is the app's meshscope scope: its dependencies, ports declared.
func (a App) Declaration() scope.Declaration {
	return scope.Declaration{Namespace: a.Namespace, Selector: a.Selector(), Dependencies: a.Deps}
}

// Proxy is one sidecar of the mesh: an application workload.
type Proxy struct {
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
	// App indexes Mesh.Apps.
	App int `json:"app"`
}

// Mesh is a generated mesh.
type Mesh struct {
	Spec       Spec
	Namespaces []string
	Apps       []App
	// Proxies are the application workloads, in app order, versions in order.
	Proxies []Proxy
}

// Generate builds the mesh of the spec, deterministically.
func Generate(s Spec) *Mesh {
	s = s.withDefaults()
	m := &Mesh{Spec: s}
	nsCount := (s.Services + s.PerNamespace - 1) / s.PerNamespace
	for i := 0; i < nsCount; i++ {
		m.Namespaces = append(m.Namespaces, fmt.Sprintf("team-%04d", i))
	}
	m.Apps = make([]App, s.Services)
	for i := range m.Apps {
		a := &m.Apps[i]
		a.Namespace = m.Namespaces[i/s.PerNamespace]
		a.Name = fmt.Sprintf("svc-%05d", i)
		for v := 1; v <= s.WorkloadsPerService; v++ {
			a.Workloads = append(a.Workloads, fmt.Sprintf("%s-v%d", a.Name, v))
			m.Proxies = append(m.Proxies, Proxy{Namespace: a.Namespace, Labels: map[string]string{"app": a.Name, "version": fmt.Sprintf("v%d", v)}, App: i})
		}
	}

	// Popularity: a random permutation of the services ranked by a Zipf draw, so
	// that hubs are spread over the namespaces.
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x5eed))
	rank := r.Perm(s.Services)
	zipf := rand.NewZipf(r, s.ZipfS, 1, uint64(s.Services-1))
	deps := min(s.Dependencies, s.Services-1)
	for i := range m.Apps {
		var callees []int
		for len(callees) < deps {
			j := rank[zipf.Uint64()]
			if j == i || slices.Contains(callees, j) {
				continue
			}
			callees = append(callees, j)
		}
		slices.Sort(callees)
		for _, j := range callees {
			var ports []uint32
			switch x := r.Float64(); {
			case x < 0.6:
				ports = []uint32{80}
			case x < 0.85:
				ports = []uint32{9090}
			default:
				ports = []uint32{80, 9090}
			}
			c := m.Apps[j]
			m.Apps[i].Deps = append(m.Apps[i].Deps, scope.Dependency{Service: c.Name + "." + c.Namespace, Ports: ports})
		}
	}
	return m
}

// Floor is the theoretical floor of a proxy's CDS clusters: one per declared
// service port, plus its inbound clusters, plus the three fixed clusters.
func (m *Mesh) Floor(p Proxy) int {
	n := 0
	for _, d := range m.Apps[p.App].Deps {
		n += len(d.Ports)
	}
	return n + InboundPerWorkload + FixedClusters
}

// Declarations returns every app's scope declaration.
func (m *Mesh) Declarations() []scope.Declaration {
	out := make([]scope.Declaration, len(m.Apps))
	for i, a := range m.Apps {
		out[i] = a.Declaration()
	}
	return out
}

// created is the creationTimestamp of every generated object: the same for all,
// so istiod and meshscope break ties by name, then namespace.
const created = "2025-01-01T00:00:00Z"

// YAML renders the mesh inventory: namespaces, the control plane and cluster
// services (istiod, kube-dns, kubernetes), and every app's Service and Deployments.
func (m *Mesh) YAML() []byte {
	var b strings.Builder
	b.Grow(len(m.Apps) * 1100)
	doc := func(format string, a ...any) {
		b.WriteString("---\n")
		fmt.Fprintf(&b, format, a...)
	}
	for _, ns := range []string{"istio-system", "kube-system", "default"} {
		doc("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, creationTimestamp: %q}\n", ns, created)
	}
	// The team namespaces are injected, as a mesh's application namespaces are.
	for _, ns := range m.Namespaces {
		doc("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, creationTimestamp: %q, labels: {istio-injection: enabled}}\n", ns, created)
	}
	doc(`apiVersion: v1
kind: Service
metadata: {name: istiod, namespace: istio-system, creationTimestamp: %q, labels: {app: istiod}}
spec:
  selector: {app: istiod}
  ports:
  - {name: grpc-xds, port: 15010, targetPort: 15010}
  - {name: https-dns, port: 15012, targetPort: 15012}
  - {name: https-webhook, port: 443, targetPort: 15017}
  - {name: http-monitoring, port: 15014, targetPort: 15014}
`, created)
	doc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system, creationTimestamp: %q}
spec:
  selector: {matchLabels: {app: istiod}}
  template:
    metadata: {labels: {app: istiod}}
    spec: {containers: [{name: discovery, image: pilot, ports: [{containerPort: 15010}, {containerPort: 15012}, {containerPort: 15017}, {containerPort: 15014}]}]}
`, created)
	doc(`apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, creationTimestamp: %q, labels: {k8s-app: kube-dns}}
spec:
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
  - {name: metrics, port: 9153, protocol: TCP, targetPort: 9153}
`, created)
	doc(`apiVersion: v1
kind: Service
metadata: {name: kubernetes, namespace: default, creationTimestamp: %q, labels: {component: apiserver}}
spec:
  ports:
  - {name: https, port: 443, targetPort: 6443}
`, created)
	for _, a := range m.Apps {
		var ports strings.Builder
		for _, p := range appPorts {
			fmt.Fprintf(&ports, "  - {name: %s, port: %d, targetPort: %d}\n", p.Name, p.Port, p.Target)
		}
		doc("apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: %s, creationTimestamp: %q, labels: {app: %s}}\nspec:\n  selector: {app: %s}\n  ports:\n%s",
			a.Name, a.Namespace, created, a.Name, a.Name, ports.String())
		for v, w := range a.Workloads {
			doc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, creationTimestamp: %q}
spec:
  selector: {matchLabels: {app: %s, version: v%d}}
  template:
    metadata: {labels: {app: %s, version: v%d}}
    spec: {containers: [{name: app, image: app, ports: [{name: http, containerPort: 8080}, {name: grpc, containerPort: 9090}]}]}
`, w, a.Namespace, created, a.Name, v+1, a.Name, v+1)
		}
	}
	return []byte(b.String())
}
