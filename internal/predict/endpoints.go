package predict

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

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
	// Health is the status istiod sends with the endpoint: HEALTHY, UNHEALTHY (a Pod that is
	// not ready) or DRAINING (a ready Pod being deleted, kept for persistent sessions).
	Health string `json:"health"`
}

// The health statuses of endpoints, as Envoy's config.core.v3.HealthStatus names them.
const (
	Healthy   = "HEALTHY"
	Unhealthy = "UNHEALTHY"
	Draining  = "DRAINING"
)

// Endpoints returns the endpoints of every EDS cluster of a prediction (Predict's), sorted by
// cluster, address and port.
func (p *Predictor) Endpoints(res *Result) []Endpoint {
	if s := p.siblings[res.Proxy.Version]; s != nil {
		return s.Endpoints(res)
	}
	var out []Endpoint
	p.eachEDS(res, func(name string, eps []svcEndpoint, sub edsSubset) {
		out = appendEndpoints(out, name, eps, sub)
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
	p.eachEDS(res, func(_ string, eps []svcEndpoint, sub edsSubset) {
		for _, e := range eps {
			if sub.keeps(e) {
				n++
			}
		}
	})
	if scope.labelFree {
		scope.epCount, scope.epCounted = n, true
	}
	return n
}

// EndpointsUnknown are the hosts of a prediction's EDS clusters whose endpoints the inventory
// does not hold, sorted: Kubernetes Services without a selector for which it holds no
// EndpointSlice, unless it listed a cluster's slices (R57).
func (p *Predictor) EndpointsUnknown(res *Result) []string {
	if s := p.siblings[res.Proxy.Version]; s != nil {
		return s.EndpointsUnknown(res)
	}
	if p.ix.inv.EndpointSlicesListed {
		return nil
	}
	eds := map[string]bool{}
	for _, c := range res.Clusters {
		if c.Type == TypeEDS && c.Direction == Outbound {
			eds[c.Name] = true
		}
	}
	var out []string
	for _, s := range p.scope(p.ix.sidecarFor(res.Proxy), res.Proxy.Namespace).services {
		if !s.svc.k8s || len(s.svc.selector) > 0 || slices.Contains(s.svc.exportTo, "~") ||
			len(p.ix.slicesByService[s.svc.ns+"/"+s.svc.objName]) > 0 {
			continue
		}
		for _, port := range s.ports {
			if eds[port.cluster] {
				out = append(out, s.svc.host)
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// edsSubset is what an EDS cluster keeps of its service port's endpoints: those whose labels hold
// the subset's (nil for none), without the unhealthy ones when dropUnhealthy.
type edsSubset struct {
	labels        map[string]string
	dropUnhealthy bool
}

func (sub edsSubset) keeps(e svcEndpoint) bool {
	return istioconfig.LabelsSubset(sub.labels, e.labels) && (!sub.dropUnhealthy || e.Health != Unhealthy)
}

// eachEDS calls fn with every EDS cluster of a prediction, its service port's endpoints and what
// the cluster keeps of them.
func (p *Predictor) eachEDS(res *Result, fn func(cluster string, eps []svcEndpoint, sub edsSubset)) {
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
			forced := ix.sendsUnhealthy(s.svc)
			names := []string{port.cluster}
			subsets := []edsSubset{{dropUnhealthy: !forced && minHealthPercent(dr, port.num, "")}}
			if dr != nil {
				// R36: a subset's endpoints are those whose labels hold the subset's.
				for _, ss := range dr.subsets {
					names = append(names, outboundName(port.num, ss.GetName(), s.svc.host))
					subsets = append(subsets, edsSubset{ss.GetLabels(), !forced && minHealthPercent(dr, port.num, ss.GetName())})
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

func appendEndpoints(out []Endpoint, cluster string, eps []svcEndpoint, sub edsSubset) []Endpoint {
	for _, e := range eps {
		if sub.keeps(e) {
			e.Cluster = cluster
			out = append(out, e.Endpoint)
		}
	}
	return out
}

// serviceEndpoints is R57: the endpoints of one port of a service. A Kubernetes Service's are
// those of its EndpointSlices when it has no selector (sliceEndpoints), else the pods its
// selector matches, on the target port (a named one resolved per pod, as the EndpointSlice
// controller does) of the first Service port with the number that is not UDP; a ServiceEntry's are its own endpoints (the port their ports map gives the port's
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
			out = append(out, svcEndpoint{Endpoint{Address: we.GetAddress(), AddressKnown: true, Port: port, Health: Healthy}, we.GetLabels()})
		}
		if len(s.seEndpoints) == 0 && len(s.selector) > 0 {
			pods, controllers := ix.selected(s.ns, s.selector)
			for _, w := range append(pods, controllers...) {
				// istiod's pod handler keeps the Pods that are ready, not completed and not being
				// deleted as the workloads of a ServiceEntry.
				if w.Terminal() || w.NotReady || w.Terminating {
					continue
				}
				port := seDefault
				if n := namedTCPPort(w, p.name); n > 0 {
					port = n
				}
				out = appendPodEndpoints(out, w, port, Healthy)
			}
		}
		out = ix.drain(s, out)
		// istiod makes one service per address of a ServiceEntry, and each holds every endpoint
		// of the host: the cluster lists each endpoint once per address.
		one := out
		for range len(s.addrs) - 1 {
			out = append(out, one...)
		}
		return out
	}
	// istiod's EndpointSlice handler indexes no endpoint of a Service whose exportTo annotation
	// names "~" (serviceNeedsPush): its cluster, which a VirtualService of its own namespace can
	// still pull in, has none.
	if slices.Contains(s.exportTo, "~") {
		return nil
	}
	ks := ix.kubeService(s)
	if len(s.selector) == 0 {
		for _, e := range ix.sliceEndpoints(s, p.name) {
			if e.Health != terminating {
				out = append(out, e)
			}
		}
		return ix.drain(s, out)
	}
	pods, controllers := ix.selected(s.ns, s.selector)
	for _, w := range append(pods, controllers...) {
		health, ok := podHealth(ks, w)
		if !ok {
			continue
		}
		if port, ok := ix.targetPort(s, p, w); ok {
			out = appendPodEndpoints(out, w, port, health)
		}
	}
	return ix.drain(s, out)
}

// drain marks DRAINING the endpoints labelled istio.io/draining, and leaves out every draining
// endpoint unless the service carries istio.io/persistent-session (R57).
func (ix *index) drain(s *service, eps []svcEndpoint) []svcEndpoint {
	keep := s.labels[persistentSessionLabel] != ""
	out := eps[:0]
	for _, e := range eps {
		if e.labels[drainingLabel] != "" {
			e.Health = Draining
		}
		if e.Health == Draining && !keep {
			continue
		}
		out = append(out, e)
	}
	return out
}

const drainingLabel = "istio.io/draining"

// terminating is the health istiod gives a slice's endpoint that is shutting down and not ready
// (model.Terminating): EDS never sends it, a headless Service's listeners keep it.
const terminating = "TERMINATING"

// sliceEndpoints are R57's endpoints of the port named portName of a Kubernetes Service without
// a selector, as istiod's EndpointSlice handler reads them (updateEndpointCacheForSlice,
// endpointHealthStatus, getPod): every address of the EndpointSlices labelled with the Service's
// name, except those of FQDN slices, once per slice port of that name, with the slice port's
// number. An endpoint's health follows its conditions, an unset one counting as true: ready is
// HEALTHY; else a terminating one is DRAINING when it serves and the Service carries
// istio.io/persistent-session, otherwise terminating (dropped from EDS); else UNHEALTHY. Its labels are its Pod's: the Pod its targetRef
// names, else a Pod of the namespace with its IP. An address whose targetRef names a Pod the
// inventory does not hold is left out, as istiod waits for that Pod.
func (ix *index) sliceEndpoints(s *service, portName string) []svcEndpoint {
	var out []svcEndpoint
	persistent := s.labels[persistentSessionLabel] != ""
	for _, es := range ix.slicesByService[s.ns+"/"+s.objName] {
		if es.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		for _, e := range es.Endpoints {
			c := e.Conditions
			health := Unhealthy
			switch {
			case c.Ready == nil || *c.Ready:
				health = Healthy
			case persistent && (c.Serving == nil || *c.Serving) && (c.Terminating == nil || *c.Terminating):
				health = Draining
			case c.Terminating == nil || *c.Terminating:
				health = terminating
			}
			for _, a := range e.Addresses {
				pod, expected := ix.slicePod(s.ns, a, e.TargetRef)
				if pod == nil && expected {
					continue
				}
				var labels map[string]string
				if pod != nil {
					labels = pod.PodLabels
				}
				for _, sp := range es.Ports {
					if ptr.Deref(sp.Name, "") != portName {
						continue
					}
					out = append(out, svcEndpoint{Endpoint{Address: a, AddressKnown: true, Port: int(ptr.Deref(sp.Port, 0)), Health: health}, labels})
				}
			}
		}
	}
	return out
}

// slicePod is istiod's getPod for an EndpointSlice's address: the Pod its targetRef names
// (expected is then true, found or not), else a Pod of the namespace with the address.
func (ix *index) slicePod(ns, addr string, ref *corev1.ObjectReference) (pod *mesh.Workload, expected bool) {
	if ref != nil && ref.Kind == "Pod" {
		for _, w := range ix.workloadsByNs[ref.Namespace] {
			if w.Kind == "Pod" && w.Name == ref.Name {
				return w, true
			}
		}
		return nil, true
	}
	for _, w := range ix.workloadsByNs[ns] {
		if w.Kind == "Pod" && w.PodIP == addr {
			return w, false
		}
	}
	return nil, false
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
func appendPodEndpoints(out []svcEndpoint, w *mesh.Workload, port int, health string) []svcEndpoint {
	if w.Kind == "Pod" {
		if w.PodIP != "" {
			out = append(out, svcEndpoint{Endpoint{Address: w.PodIP, AddressKnown: true, Port: port, Health: health}, w.PodLabels})
		}
		return out
	}
	n := 1
	if w.Replicas != nil {
		n = int(*w.Replicas)
	}
	for i := 1; i <= n; i++ {
		out = append(out, svcEndpoint{Endpoint{Address: "<" + w.Name + "." + w.Namespace + " pod " + strconv.Itoa(i) + " IP>", Port: port, Health: health}, w.PodLabels})
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

// minHealthPercent reports whether the traffic policy of an EDS cluster (the DestinationRule's,
// its port-level settings for port, the subset's over them) sets outlierDetection
// minHealthPercent above 0: then istiod leaves unhealthy endpoints out (R57), as Envoy's panic
// threshold would otherwise send traffic to them.
func minHealthPercent(dr *consolidatedDR, port int, subset string) bool {
	if dr == nil {
		return false
	}
	od, _ := portOutlier(dr.policy, port)
	for _, ss := range dr.subsets {
		if ss.GetName() == subset && subset != "" {
			if sod, portLevel := portOutlier(ss.GetTrafficPolicy(), port); sod != nil || portLevel {
				od = sod
			}
			break
		}
	}
	return od.GetMinHealthPercent() > 0
}

// portOutlier is a traffic policy's outlier detection on port: its port-level settings' when
// they name the port (true: they replace the policy's whole, unset fields included), else its own.
func portOutlier(p *networking.TrafficPolicy, port int) (*networking.OutlierDetection, bool) {
	for _, pl := range p.GetPortLevelSettings() {
		if pl.GetPort() != nil && int(pl.GetPort().GetNumber()) == port {
			return pl.GetOutlierDetection(), true
		}
	}
	return p.GetOutlierDetection(), false
}

// sendsUnhealthy reports whether istiod sends a service's unhealthy endpoints whatever its
// DestinationRule says: a Kubernetes Service with a traffic distribution (spec.trafficDistribution,
// else the networking.istio.io/traffic-distribution annotation of the Service, else of its
// namespace) needs them to spill over between zones.
func (ix *index) sendsUnhealthy(s *service) bool {
	if !s.k8s {
		return false
	}
	ks := ix.kubeService(s)
	if ks == nil {
		return false
	}
	if td := ks.Spec.TrafficDistribution; td != nil {
		switch *td {
		case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone,
			corev1.ServiceTrafficDistributionPreferSameNode:
			return true
		}
	}
	a := ks.Annotations[trafficDistributionAnnotation]
	if a == "" {
		if ns := ix.inv.Namespaces[s.ns]; ns != nil {
			a = ns.Annotations[trafficDistributionAnnotation]
		}
	}
	switch strings.ToLower(a) {
	case strings.ToLower(corev1.ServiceTrafficDistributionPreferClose), strings.ToLower(corev1.ServiceTrafficDistributionPreferSameZone),
		strings.ToLower(corev1.ServiceTrafficDistributionPreferSameNode):
		return true
	}
	return false
}

const trafficDistributionAnnotation = "networking.istio.io/traffic-distribution"

// podHealth is R57's readiness of a Pod behind a Kubernetes Service, as the EndpointSlice
// controller writes it and istiod reads it: ready (publishNotReadyAddresses, or a Ready Pod not
// being deleted) is HEALTHY; a Pod being deleted is dropped, unless it still serves and the
// Service carries istio.io/persistent-session (DRAINING); any other is UNHEALTHY. ok is false
// for a Pod that has no endpoint at all (completed).
func podHealth(ks *mesh.Service, w *mesh.Workload) (health string, ok bool) {
	if w.Terminal() {
		return "", false
	}
	if (ks != nil && ks.Spec.PublishNotReadyAddresses) || (!w.NotReady && !w.Terminating) {
		return Healthy, true
	}
	if w.Terminating {
		if !w.NotReady && ks != nil && ks.Labels[persistentSessionLabel] != "" {
			return Draining, true
		}
		return "", false
	}
	return Unhealthy, true
}

const persistentSessionLabel = "istio.io/persistent-session"
