package predict

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The EDS endpoints istiod pushes for a sidecar's EDS clusters (R57).

// Endpoint is one endpoint of an EDS cluster, a row of `istioctl proxy-config endpoint`.
type Endpoint struct {
	Cluster string `json:"cluster"`
	// Address is the endpoint's IP. For a replica of a workload whose Pods the inventory does
	// not hold, it names the pod in angle brackets, "<reviews-v1.bookinfo pod 2 IP>", and
	// AddressKnown is false: only the replica count is known.
	Address      string `json:"address"`
	AddressKnown bool   `json:"address_known"`
	Port         int    `json:"port"`
}

// Endpoints returns the endpoints of every EDS cluster of a prediction (Predict's), sorted by
// cluster, address and port.
func (p *Predictor) Endpoints(res *Result) []Endpoint {
	if s := p.siblings[res.Proxy.Version]; s != nil {
		return s.Endpoints(res)
	}
	var out []Endpoint
	p.eachEDS(res, func(name string, eps []svcEndpoint, subset map[string]string) {
		out = appendEndpoints(out, name, eps, subset)
	})
	slices.SortFunc(out, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// EndpointCount is len(Endpoints(res)), without the list: a proxy of a scope whose outbound
// clusters every proxy shares (no DestinationRule selects workloads) reads the scope's count.
func (p *Predictor) EndpointCount(res *Result) int {
	if s := p.siblings[res.Proxy.Version]; s != nil {
		return s.EndpointCount(res)
	}
	scope := p.scope(p.ix.sidecarFor(res.Proxy), res.Proxy.Namespace)
	if scope.labelFree {
		scope.epMu.Lock()
		defer scope.epMu.Unlock()
		if scope.epCounted {
			return scope.epCount
		}
	}
	n := 0
	p.eachEDS(res, func(_ string, eps []svcEndpoint, subset map[string]string) {
		for _, e := range eps {
			if istioconfig.LabelsSubset(subset, e.labels) {
				n++
			}
		}
	})
	if scope.labelFree {
		scope.epCount, scope.epCounted = n, true
	}
	return n
}

// eachEDS calls fn with every EDS cluster of a prediction, its service port's endpoints and the
// labels of its subset (nil for none).
func (p *Predictor) eachEDS(res *Result, fn func(cluster string, eps []svcEndpoint, subset map[string]string)) {
	proxy := res.Proxy
	ix := p.ix
	eds := map[string]bool{}
	for _, c := range res.Clusters {
		if c.Type == TypeEDS && c.Direction == Outbound {
			eds[c.Name] = true
		}
	}
	scope := p.scope(ix.sidecarFor(proxy), proxy.Namespace)
	for _, s := range scope.services {
		dr := scope.destinationRuleFor(proxy, s.svc.host)
		for _, port := range s.ports {
			names := []string{port.cluster}
			subsets := []map[string]string{nil}
			if dr != nil {
				// R36: a subset's endpoints are those whose labels hold the subset's.
				for _, ss := range dr.subsets {
					names = append(names, outboundName(port.num, ss.GetName(), s.svc.host))
					subsets = append(subsets, ss.GetLabels())
				}
			}
			var eps []svcEndpoint
			for i, name := range names {
				if !eds[name] {
					continue
				}
				if eps == nil {
					eps = ix.serviceEndpointsOnce(s.svc, port)
				}
				fn(name, eps, subsets[i])
				delete(eds, name) // a name istiod builds twice (R32) has one load assignment
			}
		}
	}
}

// serviceEndpointsOnce is serviceEndpoints, computed once per service port of the index.
func (ix *index) serviceEndpointsOnce(s *service, p svcPort) []svcEndpoint {
	k := epKey{pos: s.pos, num: p.num, name: p.name}
	ix.eps.mu.Lock()
	eps, ok := ix.eps.m[k]
	ix.eps.mu.Unlock()
	if ok {
		return eps
	}
	eps = ix.serviceEndpoints(s, p)
	if eps == nil {
		eps = []svcEndpoint{}
	}
	ix.eps.mu.Lock()
	if ix.eps.m == nil {
		ix.eps.m = map[epKey][]svcEndpoint{}
	}
	ix.eps.m[k] = eps
	ix.eps.mu.Unlock()
	return eps
}

type epKey struct {
	pos, num int
	name     string
}

// epCache holds an index's endpoints by service port.
type epCache struct {
	mu sync.Mutex
	m  map[epKey][]svcEndpoint
}

// svcEndpoint is an endpoint of a service port, with the labels subsets select by.
type svcEndpoint struct {
	Endpoint
	labels map[string]string
}

func appendEndpoints(out []Endpoint, cluster string, eps []svcEndpoint, subset map[string]string) []Endpoint {
	for _, e := range eps {
		if istioconfig.LabelsSubset(subset, e.labels) {
			e.Cluster = cluster
			out = append(out, e.Endpoint)
		}
	}
	return out
}

// serviceEndpoints is R57: the endpoints of one port of a service. A Kubernetes Service's are
// the pods its selector matches, on the target port (a named one resolved per pod, as the
// EndpointSlice controller does) of the first Service port with the number that is not UDP; a ServiceEntry's are its own endpoints (the port their ports map gives the port's
// name, else the target port, else the port), or the pods its workloadSelector selects (the
// container port of the port's name, else the target port, else the port), once per address
// of the ServiceEntry.
func (ix *index) serviceEndpoints(s *service, p svcPort) []svcEndpoint {
	var out []svcEndpoint
	if !s.k8s {
		seDefault := cmp.Or(p.target, p.num)
		for _, we := range s.seEndpoints {
			port := seDefault
			if n, ok := we.GetPorts()[p.name]; ok && n > 0 {
				port = int(n)
			}
			out = append(out, svcEndpoint{Endpoint{Address: we.GetAddress(), AddressKnown: true, Port: port}, we.GetLabels()})
		}
		if len(s.seEndpoints) == 0 && len(s.selector) > 0 {
			pods, controllers := ix.selected(s.ns, s.selector)
			for _, w := range append(pods, controllers...) {
				port := seDefault
				if n := namedTCPPort(w, p.name); n > 0 {
					port = n
				}
				out = appendPodEndpoints(out, w, port)
			}
		}
		// istiod makes one service per address of a ServiceEntry, and each holds every endpoint
		// of the host: the cluster lists each endpoint once per address.
		one := out
		for range len(s.addrs) - 1 {
			out = append(out, one...)
		}
		return out
	}
	if len(s.selector) == 0 {
		return nil // a Service without selector: its endpoints are not in the inventory
	}
	// istiod's EndpointSlice handler indexes no endpoint of a Service whose exportTo annotation
	// names "~" (serviceNeedsPush): its cluster, which a VirtualService of its own namespace can
	// still pull in, has none.
	if slices.Contains(s.exportTo, "~") {
		return nil
	}
	pods, controllers := ix.selected(s.ns, s.selector)
	for _, w := range append(pods, controllers...) {
		if port, ok := ix.targetPort(s, p, w); ok {
			out = appendPodEndpoints(out, w, port)
		}
	}
	return out
}

// selected are the workloads of a namespace whose pods a selector matches: its Pods when the
// inventory holds any, else the controllers, whose pods it does not.
func (ix *index) selected(ns string, sel map[string]string) (pods, controllers []*mesh.Workload) {
	for _, w := range ix.workloadsByNs[ns] {
		if !istioconfig.LabelsSubset(sel, w.PodLabels) {
			continue
		}
		if w.Kind == "Pod" {
			pods = append(pods, w)
		} else {
			controllers = append(controllers, w)
		}
	}
	if len(pods) > 0 {
		return pods, nil
	}
	return nil, controllers
}

// appendPodEndpoints appends the endpoint of a Pod with an IP, or one per replica of a
// controller, on port.
func appendPodEndpoints(out []svcEndpoint, w *mesh.Workload, port int) []svcEndpoint {
	if w.Kind == "Pod" {
		if w.PodIP != "" {
			out = append(out, svcEndpoint{Endpoint{Address: w.PodIP, AddressKnown: true, Port: port}, w.PodLabels})
		}
		return out
	}
	n := 1
	if w.Replicas != nil {
		n = int(*w.Replicas)
	}
	for i := 1; i <= n; i++ {
		out = append(out, svcEndpoint{Endpoint{Address: "<" + w.Name + "." + w.Namespace + " pod " + strconv.Itoa(i) + " IP>", Port: port}, w.PodLabels})
	}
	return out
}

// targetPort is the port of a Kubernetes Service port's endpoints on a workload's pods: the
// target port of the first Service port with its number that is not UDP (the one istiod's
// endpoint builder keeps the endpoints of, by name), a name resolved to the pod's container
// port; false when the pod has no such port.
func (ix *index) targetPort(s *service, p svcPort, w *mesh.Workload) (int, bool) {
	for _, sp := range ix.kubePorts(s) {
		if int(sp.Port) == p.num && sp.Protocol != corev1.ProtocolUDP {
			return resolveTargetPort(sp, w)
		}
	}
	return 0, false
}
