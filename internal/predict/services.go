package predict

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The service registry as istiod holds it (R1-R12): Kubernetes Services and ServiceEntries
// converted to services, in creation order, with their exportTo buckets.

type resolution int

const (
	resClientSideLB resolution = iota
	resPassthrough
	resDNSLB
	resDNSRoundRobin
	resAlias
	resDynamicDNS
)

type svcPort struct {
	name  string
	num   int
	proto string
	// cluster is the outbound cluster name, "outbound|<num>||<host>".
	cluster string
	// target is a ServiceEntry port's targetPort, 0 when unset (R57).
	target int
}

// outboundName is the name of a service port's outbound cluster.
func outboundName(num int, subset, host string) string {
	return "outbound|" + strconv.Itoa(num) + "|" + subset + "|" + host
}

// withClusterNames returns the ports with their outbound cluster names for host.
func withClusterNames(ports []svcPort, host string) []svcPort {
	out := make([]svcPort, len(ports))
	for i, p := range ports {
		p.cluster = outboundName(p.num, "", host)
		out[i] = p
	}
	return out
}

// service mirrors istio model.Service: one hostname of one registry object.
type service struct {
	host     string
	ns       string
	attrName string // Attributes.Name: the K8s name or the SE host
	objName  string // the K8s Service or ServiceEntry name
	k8s      bool
	res      resolution
	ports    []svcPort
	exportTo []string // the object's own exportTo; empty means the mesh default
	created  time.Time
	labels   map[string]string
	selector map[string]string
	// endpointLabels are the label sets of the endpoints of DNS-resolved services.
	endpointLabels []map[string]string
	dnsRace        bool
	// vip is a Kubernetes Service's spec.clusterIP: "" when the manifest does not say (the
	// API server assigns it on create), "None" for a headless Service (R50).
	vip string
	// addrs are a ServiceEntry's addresses as istiod converts them: a /32 or /128 is a plain
	// IP, a wider prefix stays a CIDR (R50).
	addrs []string
	// aliasFor is an alias's ExternalName: the host it stands for (R27, R60).
	aliasFor string
	// seEndpoints are a ServiceEntry's own endpoints (R57).
	seEndpoints []*networking.WorkloadEntry
	// full is the canonical scoped view with every port.
	full *scoped
	// pos is the service's position in index.services.
	pos int
	// ambiguous is set when another service of the index has the same host, or
	// when the service is exported twice to a namespace: a scope then has to
	// choose between the candidates, or drop the repeat.
	ambiguous bool
}

// scoped is a service as a sidecar scope holds it: possibly trimmed to some ports.
type scoped struct {
	svc   *service
	ports []svcPort
}

func (ix *index) initServices() {
	ix.kubeByNs = map[string][]*mesh.Service{}
	var all []*service
	for _, ks := range ix.inv.Services {
		if !ix.nsVisible(ks.Namespace) {
			continue
		}
		ix.kubeByNs[ks.Namespace] = append(ix.kubeByNs[ks.Namespace], ks)
		all = append(all, ix.convertKube(ks))
	}
	ix.selectorSEsByNs = map[string][]*mesh.ServiceEntry{}
	for _, se := range ix.inv.ServiceEntries {
		if !ix.nsVisible(se.Namespace) {
			continue
		}
		if se.Spec.GetWorkloadSelector() != nil {
			ix.selectorSEsByNs[se.Namespace] = append(ix.selectorSEsByNs[se.Namespace], se)
		}
		all = append(all, ix.convertServiceEntry(se)...)
	}
	// R5 is not modelled: an inventory is one registry. R7: creation order.
	slices.SortStableFunc(all, byCreation)
	ix.services = all
	ix.exportedTo = map[string][]*service{}
	ix.publicByNs = map[string][]*service{}
	ix.byHostNs = map[string]map[string]*service{}
	hostCount := make(map[string]int, len(all))
	for _, s := range all {
		hostCount[s.host]++
	}
	for i, s := range all {
		s.pos = i
		s.ambiguous = hostCount[s.host] > 1
		s.full = &scoped{svc: s, ports: s.ports}
		// R10: the exportTo buckets.
		exp := ix.serviceExportTo(s)
		switch {
		case slices.Contains(exp, "*"):
			ix.public = append(ix.public, s)
			ix.publicByNs[s.ns] = append(ix.publicByNs[s.ns], s)
		case slices.Contains(exp, "~"):
		default:
			seenOwn := false
			for k, e := range exp {
				if e == "." || e == s.ns {
					if !seenOwn {
						ix.exportedTo[s.ns] = append(ix.exportedTo[s.ns], s)
						seenOwn = true
					}
					continue
				}
				if slices.Contains(exp[:k], e) {
					s.ambiguous = true
				}
				ix.exportedTo[e] = append(ix.exportedTo[e], s)
			}
		}
		// R8: one service per host and namespace, the Kubernetes one over a ServiceEntry.
		byNs := ix.byHostNs[s.host]
		if byNs == nil {
			byNs = map[string]*service{}
			ix.byHostNs[s.host] = byNs
		}
		if cur, ok := byNs[s.ns]; !ok || (!cur.k8s && s.k8s) {
			byNs[s.ns] = s
		}
	}
}

// byCreation orders services as istiod does (R7).
func byCreation(a, b *service) int {
	return istioconfig.CompareCreation(istioconfig.Creation{Created: a.created, Name: a.attrName, Namespace: a.ns},
		istioconfig.Creation{Created: b.created, Name: b.attrName, Namespace: b.ns})
}

// serviceExportTo is the service's effective exportTo (R9).
func (ix *index) serviceExportTo(s *service) []string {
	return istioconfig.EffectiveExportTo(s.exportTo, ix.defSvc)
}

// serviceVisible mirrors PushContext.IsServiceVisible (R12).
func (ix *index) serviceVisible(s *service, ns string) bool {
	return istioconfig.ExportedTo(ix.serviceExportTo(s), s.ns, ns)
}

// servicesExportedTo is R11: the services exported to ns, then the public ones.
func (ix *index) servicesExportedTo(ns string) []*service {
	out := make([]*service, 0, len(ix.exportedTo[ns])+len(ix.public))
	out = append(out, ix.exportedTo[ns]...)
	return append(out, ix.public...)
}

// convertKube is R1: a Kubernetes Service is one service, <name>.<namespace>.svc.<domain>, with
// every port (R2 names its protocol) and its exportTo annotation (R9).
func (ix *index) convertKube(ks *mesh.Service) *service {
	s := &service{
		host:     ks.Name + "." + ks.Namespace + ".svc." + ix.domain,
		ns:       ks.Namespace,
		attrName: ks.Name,
		objName:  ks.Name,
		k8s:      true,
		res:      resClientSideLB,
		created:  ks.Created,
		labels:   ks.Labels,
		selector: ks.Spec.Selector,
		vip:      ks.Spec.ClusterIP,
	}
	s.exportTo = istioconfig.AnnotationExportTo(ks.Annotations)
	if ks.Spec.Type == corev1.ServiceTypeExternalName && ks.Spec.ExternalName != "" {
		if ix.ver.ExternalNameAlias() { // R27
			s.res = resAlias
			s.aliasFor = ks.Spec.ExternalName
		} else {
			s.res = resDNSLB
			s.endpointLabels = []map[string]string{nil}
		}
	}
	// R1: headless is Passthrough, even for an ExternalName Service.
	if ks.Spec.ClusterIP == corev1.ClusterIPNone {
		s.res = resPassthrough
	}
	for _, p := range ks.Spec.Ports {
		s.ports = append(s.ports, svcPort{name: p.Name, num: int(p.Port), proto: istioconfig.ConvertKubeProtocol(p.Port, p.Name, p.Protocol, p.AppProtocol),
			cluster: outboundName(int(p.Port), "", s.host)})
	}
	return s
}

// convertServiceEntry is R3: a ServiceEntry is one service per host, the host verbatim.
func (ix *index) convertServiceEntry(se *mesh.ServiceEntry) []*service {
	spec := se.Spec
	res := resClientSideLB
	switch spec.GetResolution() {
	case networking.ServiceEntry_NONE:
		res = resPassthrough
	case networking.ServiceEntry_DNS:
		res = resDNSLB
	case networking.ServiceEntry_DNS_ROUND_ROBIN:
		res = resDNSRoundRobin
	case networking.ServiceEntry_DYNAMIC_DNS:
		res = resDynamicDNS
	}
	var ports []svcPort
	for _, p := range spec.GetPorts() {
		ports = append(ports, svcPort{name: p.GetName(), num: int(p.GetNumber()), proto: istioconfig.ParseProtocol(p.GetProtocol()),
			target: int(p.GetTargetPort())})
	}
	var selector map[string]string
	if ws := spec.GetWorkloadSelector(); ws != nil {
		selector = ws.GetLabels()
	}
	// R4: a DNS ServiceEntry's endpoints: its own, else the pods its workloadSelector selects,
	// else one endpoint per port with no labels.
	var endpoints []map[string]string
	if res == resDNSLB || res == resDNSRoundRobin {
		switch {
		case len(spec.GetEndpoints()) > 0:
			for _, ep := range spec.GetEndpoints() {
				endpoints = append(endpoints, ep.GetLabels())
			}
		case spec.GetWorkloadSelector() != nil:
			for _, w := range ix.workloadsByNs[se.Namespace] {
				if istioconfig.LabelsSubset(selector, w.PodLabels) {
					endpoints = append(endpoints, w.PodLabels)
				}
			}
		default:
			endpoints = []map[string]string{nil}
		}
	}
	exportTo := istioconfig.ExportToSet(spec.GetExportTo())
	addrs := make([]string, 0, len(spec.GetAddresses()))
	for _, a := range spec.GetAddresses() {
		addrs = append(addrs, seAddress(a))
	}
	var out []*service
	for _, h := range spec.GetHosts() {
		out = append(out, &service{
			host: h, ns: se.Namespace, attrName: h, objName: se.Name, res: res, ports: withClusterNames(ports, h),
			exportTo: exportTo, created: se.Created, labels: se.Labels, selector: selector,
			endpointLabels: endpoints, addrs: addrs, seEndpoints: spec.GetEndpoints(),
			dnsRace: se.Annotations["networking.istio.io/dns-connect-strategy"] == "RACE_FIRST_TCP_CONNECT",
		})
	}
	return out
}

// seAddress is a ServiceEntry address as istiod's convertServices keeps it: a host prefix
// (/32, /128) becomes its IP, anything else is kept as written.
func seAddress(a string) string {
	if pfx, err := netip.ParsePrefix(a); err == nil && pfx.IsSingleIP() {
		return pfx.Addr().String()
	}
	return a
}
