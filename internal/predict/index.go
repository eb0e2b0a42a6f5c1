package predict

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

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

type vsEntry struct {
	cfg   *mesh.VirtualService
	ns    string
	hosts []string // resolved
}

type consolidatedDR struct {
	rule *mesh.DestinationRule
	// name is "name.namespace" of rule.
	name     string
	exportTo map[string]bool
	selector map[string]string
	hasSel   bool
	subsets  []*networking.Subset
	policy   *networking.TrafficPolicy
	from     []string
}

type drSet struct {
	specific map[string][]*consolidatedDR
	wildcard map[string][]*consolidatedDR
}

func newDRSet() *drSet {
	return &drSet{specific: map[string][]*consolidatedDR{}, wildcard: map[string][]*consolidatedDR{}}
}

// index is the PushContext-like view of an inventory.
type index struct {
	inv     *mesh.Inventory
	ver     istioconfig.Version
	domain  string
	root    string
	defSvc  []string
	defDR   map[string]bool
	defVS   []string
	visible map[string]bool // namespace -> seen by istiod (discoverySelectors)

	services   []*service
	public     []*service
	publicByNs map[string][]*service
	exportedTo map[string][]*service
	byHostNs   map[string]map[string]*service

	vsPrivate  map[string][]*vsEntry
	vsExported map[string][]*vsEntry
	vsPublic   []*vsEntry

	drLocal    map[string]*drSet
	drExported map[string]*drSet
	drRoot     *drSet

	sidecarsByNs map[string][]*mesh.Sidecar
	rootSidecar  *mesh.Sidecar

	kubeByNs map[string][]*mesh.Service
	// workloadsByNs holds the workloads that run pods, per visible namespace.
	workloadsByNs map[string][]*mesh.Workload
	// selectorSEsByNs holds the ServiceEntries with a workloadSelector, per namespace.
	selectorSEsByNs map[string][]*mesh.ServiceEntry
}

func (ix *index) nsVisible(ns string) bool {
	v, ok := ix.visible[ns]
	if !ok {
		v = ix.inv.NamespaceVisible(ns)
		ix.visible[ns] = v
	}
	return v
}

func buildIndex(inv *mesh.Inventory, ver istioconfig.Version, domain string) *index {
	ix := &index{
		inv: inv, ver: ver, domain: domain, root: inv.Mesh.RootNamespace,
		defSvc:  istioconfig.DefaultExportTo(inv.Mesh.DefaultServiceExportTo),
		defVS:   istioconfig.DefaultExportTo(inv.Mesh.DefaultVirtualServiceExportTo),
		defDR:   map[string]bool{},
		visible: map[string]bool{},
	}
	if ix.root == "" {
		ix.root = mesh.DefaultRootNamespace
	}
	for _, e := range istioconfig.DefaultExportTo(inv.Mesh.DefaultDestinationRuleExportTo) {
		ix.defDR[e] = true
	}
	for _, n := range inv.NamespaceNames() {
		ix.nsVisible(n)
	}
	ix.workloadsByNs = map[string][]*mesh.Workload{}
	for _, w := range inv.Workloads {
		if ix.nsVisible(w.Namespace) && w.HasPods() {
			ix.workloadsByNs[w.Namespace] = append(ix.workloadsByNs[w.Namespace], w)
		}
	}
	ix.initServices()
	ix.initVirtualServices()
	ix.initDestinationRules()
	ix.initSidecars()
	return ix
}

// ---- services (R1-R12) ----

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

func (ix *index) servicesExportedTo(ns string) []*service {
	out := make([]*service, 0, len(ix.exportedTo[ns])+len(ix.public))
	out = append(out, ix.exportedTo[ns]...)
	return append(out, ix.public...)
}

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
	}
	s.exportTo = istioconfig.AnnotationExportTo(ks.Annotations)
	if ks.Spec.Type == corev1.ServiceTypeExternalName && ks.Spec.ExternalName != "" {
		if ix.ver.ExternalNameAlias() { // R27
			s.res = resAlias
		} else {
			s.res = resDNSLB
			s.endpointLabels = []map[string]string{nil}
		}
	}
	if ks.Spec.ClusterIP == corev1.ClusterIPNone {
		s.res = resPassthrough
	}
	for _, p := range ks.Spec.Ports {
		s.ports = append(s.ports, svcPort{name: p.Name, num: int(p.Port), proto: istioconfig.ConvertKubeProtocol(p.Port, p.Name, p.Protocol, p.AppProtocol),
			cluster: outboundName(int(p.Port), "", s.host)})
	}
	return s
}

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
		ports = append(ports, svcPort{name: p.GetName(), num: int(p.GetNumber()), proto: istioconfig.ParseProtocol(p.GetProtocol())})
	}
	var selector map[string]string
	if ws := spec.GetWorkloadSelector(); ws != nil {
		selector = ws.GetLabels()
	}
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
	var out []*service
	for _, h := range spec.GetHosts() {
		out = append(out, &service{
			host: h, ns: se.Namespace, attrName: h, objName: se.Name, res: res, ports: withClusterNames(ports, h),
			exportTo: exportTo, created: se.Created, labels: se.Labels, selector: selector,
			endpointLabels: endpoints,
			dnsRace:        se.Annotations["networking.istio.io/dns-connect-strategy"] == "RACE_FIRST_TCP_CONNECT",
		})
	}
	return out
}

// ---- virtual services (R23) ----

func (ix *index) initVirtualServices() {
	ix.vsPrivate = map[string][]*vsEntry{}
	ix.vsExported = map[string][]*vsEntry{}
	vss := slices.Clone(ix.inv.VirtualServices)
	slices.SortStableFunc(vss, func(a, b *mesh.VirtualService) int { return compareMeta(&a.Meta, &b.Meta) })
	for _, vs := range vss {
		if !ix.nsVisible(vs.Namespace) || len(vs.Spec.GetHosts()) == 0 {
			continue // delegate VirtualServices are merged into their parents and never selected directly
		}
		bindsMesh := len(vs.Spec.GetGateways()) == 0 || slices.Contains(vs.Spec.GetGateways(), "mesh")
		if !bindsMesh {
			continue
		}
		e := &vsEntry{cfg: vs, ns: vs.Namespace}
		for _, h := range vs.Spec.GetHosts() {
			e.hosts = append(e.hosts, istioconfig.ResolveShortName(h, vs.Namespace, ix.domain))
		}
		var exp []string
		if len(vs.Spec.GetExportTo()) > 0 {
			for _, x := range vs.Spec.GetExportTo() {
				if x == "." {
					x = vs.Namespace
				}
				exp = append(exp, x)
			}
		} else {
			// The merged VirtualService controller copies the mesh default with "." made the namespace.
			for _, x := range ix.defVS {
				if x == "." {
					x = vs.Namespace
				}
				exp = append(exp, x)
			}
		}
		exp = istioconfig.ExportToSet(exp)
		switch {
		case slices.Contains(exp, "*"):
			ix.vsPublic = append(ix.vsPublic, e)
		case slices.Contains(exp, "~"):
		default:
			for _, x := range exp {
				if x == vs.Namespace {
					ix.vsPrivate[x] = append(ix.vsPrivate[x], e)
				} else {
					ix.vsExported[x] = append(ix.vsExported[x], e)
				}
			}
		}
	}
}

// destinations mirrors virtualServiceDestinationsFilteredBySourceNamespace, with
// destination hosts resolved against the VirtualService's namespace.
func (ix *index) destinations(e *vsEntry, configNs string) (map[string]map[int]bool, []string) {
	out := map[string]map[int]bool{}
	var order []string
	add := func(d *networking.Destination) {
		if d == nil {
			return
		}
		h := istioconfig.ResolveShortName(d.GetHost(), e.ns, ix.domain)
		pn := int(d.GetPort().GetNumber())
		if out[h] == nil {
			out[h] = map[int]bool{}
			order = append(order, h)
		}
		out[h][pn] = true
	}
	v := e.cfg.Spec
	for _, h := range v.GetHttp() {
		matched := true
		for _, m := range h.GetMatch() {
			if m.GetSourceNamespace() != "" {
				if m.GetSourceNamespace() == configNs {
					matched = true
					break
				}
				matched = false
			}
		}
		if !matched {
			continue
		}
		for _, r := range h.GetRoute() {
			add(r.GetDestination())
		}
		if h.GetMirror() != nil {
			add(h.GetMirror())
		}
		for _, m := range h.GetMirrors() {
			add(m.GetDestination())
		}
	}
	for _, t := range v.GetTcp() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination())
		}
	}
	for _, t := range v.GetTls() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination())
		}
	}
	return out, order
}

// ---- destination rules (R33) ----

// hasDRs reports whether any DestinationRule is indexed.
func (ix *index) hasDRs() bool {
	return len(ix.drLocal) > 0 || len(ix.drExported) > 0 || len(ix.drRoot.specific) > 0 || len(ix.drRoot.wildcard) > 0
}

func (ix *index) initDestinationRules() {
	ix.drLocal = map[string]*drSet{}
	ix.drExported = map[string]*drSet{}
	ix.drRoot = newDRSet()
	drs := make([]*mesh.DestinationRule, 0, len(ix.inv.DestinationRules))
	for _, dr := range ix.inv.DestinationRules {
		if ix.nsVisible(dr.Namespace) {
			drs = append(drs, dr)
		}
	}
	slices.SortStableFunc(drs, func(a, b *mesh.DestinationRule) int {
		as, bs := a.Spec.GetWorkloadSelector() != nil, b.Spec.GetWorkloadSelector() != nil
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return compareMeta(&a.Meta, &b.Meta)
	})
	for _, dr := range drs {
		h := istioconfig.ResolveShortName(dr.Spec.GetHost(), dr.Namespace, ix.domain)
		exp := map[string]bool{}
		if dr.Spec.GetWorkloadSelector() == nil {
			for _, e := range dr.Spec.GetExportTo() {
				exp[e] = true
			}
		} else {
			exp["."] = true
		}
		if len(exp) == 0 || exp["*"] || exp["."] || exp[dr.Namespace] {
			set := ix.drLocal[dr.Namespace]
			if set == nil {
				set = newDRSet()
				ix.drLocal[dr.Namespace] = set
			}
			mergeDR(set, dr, h, exp)
		}
		privateOnly := (len(exp) == 0 && ix.defDR["."]) || (len(exp) == 1 && (exp["."] || exp[dr.Namespace]))
		if !privateOnly {
			set := ix.drExported[dr.Namespace]
			if set == nil {
				set = newDRSet()
				ix.drExported[dr.Namespace] = set
			}
			mergeDR(set, dr, h, exp)
		} else if dr.Namespace == ix.root {
			mergeDR(ix.drRoot, dr, h, exp)
		}
	}
}

func setEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func supersetOf(a, b map[string]bool) bool {
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}

// mergeDR mirrors PushContext.mergeDestinationRule with enhanced merge on.
func mergeDR(set *drSet, dr *mesh.DestinationRule, h string, exp map[string]bool) {
	m := set.specific
	if istioconfig.IsWildcard(h) {
		m = set.wildcard
	}
	var sel map[string]string
	if ws := dr.Spec.GetWorkloadSelector(); ws != nil {
		sel = ws.GetMatchLabels()
	}
	hasSel := dr.Spec.GetWorkloadSelector() != nil
	fresh := func() *consolidatedDR {
		return &consolidatedDR{rule: dr, name: dr.Name + "." + dr.Namespace, exportTo: exp, selector: sel, hasSel: hasSel,
			subsets: slices.Clone(dr.Spec.GetSubsets()), policy: dr.Spec.GetTrafficPolicy(), from: []string{dr.Key()}}
	}
	list, exists := m[h]
	if !exists {
		m[h] = []*consolidatedDR{fresh()}
		return
	}
	appendSeparately := true
	for i, mdr := range list {
		switch {
		case setEqual(exp, mdr.exportTo):
			appendSeparately = false
		case len(mdr.exportTo) > 0 && supersetOf(exp, mdr.exportTo):
			appendSeparately = true
		default:
			appendSeparately = true
			continue
		}
		bothWithout := !hasSel && !mdr.hasSel
		bothWith := hasSel && mdr.hasSel
		selMatch := maps.Equal(mdr.selector, sel)
		if bothWith && !selMatch {
			appendSeparately = true
			continue
		}
		if bothWithout || (bothWith && selMatch) {
			appendSeparately = false
		}
		merged := *mdr
		merged.from = append(slices.Clone(mdr.from), dr.Key())
		merged.subsets = slices.Clone(mdr.subsets)
		for _, ss := range dr.Spec.GetSubsets() {
			if !slices.ContainsFunc(merged.subsets, func(x *networking.Subset) bool { return x.GetName() == ss.GetName() }) {
				merged.subsets = append(merged.subsets, ss)
			}
		}
		if merged.policy == nil && dr.Spec.GetTrafficPolicy() != nil {
			merged.policy = dr.Spec.GetTrafficPolicy()
		}
		list[i] = &merged
	}
	if appendSeparately {
		m[h] = append(list, fresh())
	}
}

// ---- sidecars (R13, R14) ----

func (ix *index) initSidecars() {
	ix.sidecarsByNs = map[string][]*mesh.Sidecar{}
	scs := make([]*mesh.Sidecar, 0, len(ix.inv.Sidecars))
	for _, sc := range ix.inv.Sidecars {
		if ix.nsVisible(sc.Namespace) {
			scs = append(scs, sc)
		}
	}
	slices.SortStableFunc(scs, func(a, b *mesh.Sidecar) int { return compareMeta(&a.Meta, &b.Meta) })
	// Sidecars with a workloadSelector first, each group in creation order.
	slices.SortStableFunc(scs, func(a, b *mesh.Sidecar) int {
		return cmp.Compare(boolRank(a.Spec.GetWorkloadSelector() == nil), boolRank(b.Spec.GetWorkloadSelector() == nil))
	})
	for _, sc := range scs {
		ix.sidecarsByNs[sc.Namespace] = append(ix.sidecarsByNs[sc.Namespace], sc)
		if ix.rootSidecar == nil && sc.Namespace == ix.root && sc.Spec.GetWorkloadSelector() == nil {
			ix.rootSidecar = sc
		}
	}
}

// compareMeta orders configs as istiod does (R13, R23, R33).
func compareMeta(a, b *mesh.Meta) int {
	return istioconfig.CompareCreation(istioconfig.Creation{Created: a.Created, Name: a.Name, Namespace: a.Namespace},
		istioconfig.Creation{Created: b.Created, Name: b.Name, Namespace: b.Namespace})
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sidecarFor mirrors PushContext.getSidecarScope selection (R15). nil means the default scope.
func (ix *index) sidecarFor(p Proxy) *mesh.Sidecar {
	for _, sc := range ix.sidecarsByNs[p.Namespace] {
		ws := sc.Spec.GetWorkloadSelector()
		if ws == nil {
			return sc
		}
		if istioconfig.LabelsSubset(ws.GetLabels(), p.Labels) {
			return sc
		}
	}
	return ix.rootSidecar
}
