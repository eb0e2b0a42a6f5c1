package predict

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// hostClass mirrors istio's hostClassification for one namespace key.
type hostClass struct {
	exact    map[string]bool
	all      []string
	excluded []string
}

// isExcluded reports whether an exclusion covers h (R19).
func (hc *hostClass) isExcluded(h string) bool {
	for _, e := range hc.excluded {
		if istioconfig.HostSubsetOf(h, e) {
			return true
		}
	}
	return false
}

// matches reports whether the hosts import service host h (R19): exactly, or, with a wildcard
// on either side, h is a subset of a host. Istio: hostClassification.Matches.
func (hc *hostClass) matches(h string) bool { return hc.match(h, false) }

// vsMatches reports whether the hosts import VirtualService host h (R23): exactly, or, with a
// wildcard on either side, the two overlap. Istio: hostClassification.VSMatches.
func (hc *hostClass) vsMatches(h string) bool { return hc.match(h, true) }

func (hc *hostClass) match(h string, overlap bool) bool {
	if hc.exact[h] {
		return true
	}
	hw := istioconfig.IsWildcard(h)
	for _, imp := range hc.all {
		if !hw && !istioconfig.IsWildcard(imp) {
			continue
		}
		if overlap && istioconfig.HostsOverlap(h, imp) || !overlap && istioconfig.HostSubsetOf(h, imp) {
			return true
		}
	}
	return false
}

// sidecarScope is the part of istio's SidecarScope that decides CDS.
type sidecarScope struct {
	sidecar  *mesh.Sidecar
	ns       string
	services []*scoped
	drs      map[string][]*consolidatedDR
	outbound string
	// labelFree is set when no DestinationRule with a workloadSelector can apply
	// to the scope's proxies: their outbound clusters are then all the same.
	labelFree bool
	// sorted are the sorted outbound clusters of a labelFree scope, computed by
	// the first proxy and shared by the others while the Predictor keeps them.
	sortedMu sync.Mutex
	sorted   []Cluster
	// facts are what a comparison reads of sorted, computed once; dropped with it.
	facts *listFacts
	// clusterHint is the number of outbound clusters to expect.
	clusterHint int
	// egress are the Sidecar's egress listeners with the services each imports, which
	// decide LDS and RDS (R48): services pulled in by a VirtualService only are not in them.
	egress []*listener
	// lds are the scope's outbound listener counts, by interception mode (REDIRECT, NONE),
	// computed on first use.
	ldsMu sync.Mutex
	lds   [2]*ldsCount
	// routeKey is routeFingerprint, computed on first use.
	rdsMu    sync.Mutex
	routeKey string
	// epCount is a labelFree scope's EndpointCount, once epCounted.
	epMu      sync.Mutex
	epCount   int
	epCounted bool
}

type listener struct {
	cfg       *networking.IstioEgressListener
	matchPort bool
	// allExact is set when every host is exact and namespaced (R18's exact-host path).
	allExact bool
	hosts    map[string]*hostClass
	services []*scoped
	vss      []*vsEntry
}

// buildScope mirrors convertToSidecarScope + initSidecarScopeInternalIndexes.
func (ix *index) buildScope(sc *mesh.Sidecar, configNs string) *sidecarScope {
	out := &sidecarScope{sidecar: sc, ns: configNs}
	var spec *networking.Sidecar
	if sc != nil {
		spec = sc.Spec
	}
	// R16: a Sidecar without egress imports "*/*".
	egress := spec.GetEgress()
	if len(egress) == 0 {
		egress = []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}
	}
	listeners := make([]*listener, 0, len(egress))
	for _, e := range egress {
		listeners = append(listeners, ix.convertListener(configNs, e))
	}
	out.collect(ix, listeners, configNs)
	out.egress = listeners
	out.drs = map[string][]*consolidatedDR{}
	if ix.hasDRs() {
		for _, s := range out.services {
			if l := ix.destinationRule(configNs, s.svc); l != nil {
				out.drs[s.svc.host] = l
			}
		}
	}
	for _, s := range out.services {
		out.clusterHint += len(s.ports)
	}
	out.labelFree = true
	for _, l := range out.drs {
		for _, d := range l {
			if d.hasSel && d.rule.Namespace == configNs {
				out.labelFree = false
			}
		}
	}
	if otp := spec.GetOutboundTrafficPolicy(); otp != nil {
		out.outbound = otp.GetMode().String()
	} else {
		out.outbound = ix.inv.Mesh.OutboundTrafficPolicy
	}
	return out
}

func (ix *index) convertListener(configNs string, e *networking.IstioEgressListener) *listener {
	l := &listener{cfg: e, hosts: map[string]*hostClass{}}
	l.matchPort = e.GetPort().GetNumber() != 0 && istioconfig.ParseProtocol(e.GetPort().GetProtocol()) != istioconfig.HTTPProxy
	allExact := true
	exclusion := ix.ver.EgressExclusions() // R17
	for _, h := range e.GetHosts() {
		eh, ok := istioconfig.ParseEgressHost(h, exclusion)
		if !ok {
			continue
		}
		ns, name, excluded := eh.Namespace, eh.Name, eh.Excluded
		if ns == "." {
			ns = configNs
		}
		hc := l.hosts[ns]
		if hc == nil {
			hc = &hostClass{exact: map[string]bool{}}
			l.hosts[ns] = hc
		}
		if excluded {
			hc.excluded = append(hc.excluded, name)
			continue
		}
		if !istioconfig.IsWildcard(name) {
			hc.exact[name] = true
		} else {
			allExact = false
		}
		if ns == "*" {
			allExact = false
		}
		hc.all = append(hc.all, name)
	}
	l.vss = ix.selectVirtualServices(configNs, l.hosts)
	var cands []*service
	// R18: the candidate services, by the exact-host path when every host is exact and
	// namespaced; R22: "*/*" imports all, "~/*" excludes all.
	switch _, wild := l.hosts["*"]; {
	case allExact:
		cands = ix.servicesForExactHosts(configNs, l.hosts)
	case !wild:
		cands = ix.servicesExportedToIn(configNs, l.hosts)
	default:
		cands = ix.servicesExportedTo(configNs)
	}
	l.services = ix.selectServices(l, cands, configNs)
	l.allExact = allExact
	return l
}

func (ix *index) servicesForExactHosts(configNs string, hosts map[string]*hostClass) []*service {
	var out []*service
	for ns, hc := range hosts {
		for h := range hc.exact {
			if s, ok := ix.byHostNs[h][ns]; ok && ix.serviceVisible(s, configNs) {
				out = append(out, s)
			}
		}
	}
	// Same order as the creation-ordered service list.
	slices.SortStableFunc(out, byCreation)
	return out
}

// servicesExportedToIn is servicesExportedTo restricted to the namespaces of
// hosts, in the same order: a listener without a "*/" host imports nothing else.
func (ix *index) servicesExportedToIn(configNs string, hosts map[string]*hostClass) []*service {
	var out []*service
	for _, s := range ix.exportedTo[configNs] {
		if hosts[s.ns] != nil {
			out = append(out, s)
		}
	}
	private := len(out)
	for ns := range hosts {
		out = append(out, ix.publicByNs[ns]...)
	}
	slices.SortFunc(out[private:], func(a, b *service) int { return cmp.Compare(a.pos, b.pos) })
	return out
}

// selectServices imports the candidates a listener's hosts match (R19), trimmed to its port
// (R20), one namespace per hostname (R21).
func (ix *index) selectServices(l *listener, cands []*service, configNs string) []*scoped {
	var imported []*scoped
	wild := l.hosts["*"]
	for _, s := range cands {
		nsHosts := l.hosts[s.ns]
		if (nsHosts != nil && nsHosts.isExcluded(s.host)) || (wild != nil && wild.isExcluded(s.host)) {
			continue
		}
		if nsHosts != nil && nsHosts.matches(s.host) {
			if m := matchListenerPort(s.full, l); m != nil {
				imported = append(imported, m)
				continue
			}
		}
		if wild != nil && wild.matches(s.host) {
			if m := matchListenerPort(s.full, l); m != nil {
				imported = append(imported, m)
			}
		}
	}
	type choice struct {
		ns  string
		k8s bool
	}
	// Only hosts that several services share need a choice.
	valid := map[string]choice{}
	unified := ix.ver.UnifiedSidecarScope() // R21
	for _, s := range imported {
		if !s.svc.ambiguous {
			continue
		}
		c := choice{s.svc.ns, s.svc.k8s}
		ex, found := valid[s.svc.host]
		switch {
		case !found:
			valid[s.svc.host] = c
		case c.ns == configNs:
			valid[s.svc.host] = c
		case unified && !ex.k8s && c.k8s && (c.ns == configNs || ex.ns != configNs):
			valid[s.svc.host] = c
		}
	}
	out := imported[:0]
	for _, s := range imported {
		if !s.svc.ambiguous || valid[s.svc.host].ns == s.svc.ns {
			out = append(out, s)
		}
	}
	return out
}

// matchListenerPort mirrors matchingService's port step (serviceMatchingListenerPort, R20).
func matchListenerPort(s *scoped, l *listener) *scoped {
	if !l.matchPort {
		return s
	}
	want := int(l.cfg.GetPort().GetNumber())
	for _, p := range s.ports {
		if p.num == want {
			if len(s.ports) == 1 {
				return s
			}
			return &scoped{svc: s.svc, ports: []svcPort{p}}
		}
	}
	return nil
}

func matchVSPorts(s *scoped, ports map[int]bool) *scoped {
	if len(ports) == 0 || ports[0] {
		return s
	}
	var found []svcPort
	for _, p := range s.ports {
		if ports[p.num] {
			found = append(found, p)
		}
	}
	if len(found) == len(s.ports) {
		return s
	}
	if len(found) > 0 {
		return &scoped{svc: s.svc, ports: found}
	}
	return nil
}

// selectVirtualServices is R23: the VirtualServices visible in configNs that a host of the
// listener matches, less exclusions.
func (ix *index) selectVirtualServices(configNs string, hosts map[string]*hostClass) []*vsEntry {
	var out []*vsEntry
	seen := map[*vsEntry]bool{}
	wild := hosts["*"]
	add := func(e *vsEntry, hc *hostClass) {
		if seen[e] {
			return
		}
		nsExcl := hosts[e.ns]
		for _, h := range e.hosts {
			if !hc.vsMatches(h) {
				continue
			}
			if (nsExcl != nil && nsExcl.isExcluded(h)) || (wild != nil && wild.isExcluded(h)) {
				continue
			}
			out = append(out, e)
			seen[e] = true
			return
		}
	}
	loop := func(list []*vsEntry) {
		for _, e := range list {
			if hc := hosts[e.ns]; hc != nil {
				add(e, hc)
			}
			if wild != nil {
				add(e, wild)
			}
		}
	}
	loop(ix.vsPrivate[configNs])
	loop(ix.vsExported[configNs])
	loop(ix.vsPublic)
	return out
}

type addedIndex struct {
	s   *scoped
	pos int
}

// collect mirrors SidecarScope.collectImportedServices and appendSidecarServices (R24, R25):
// listener after listener, so that ports imported by several listeners add up (R26).
func (sc *sidecarScope) collect(ix *index, listeners []*listener, configNs string) {
	// One listener and no VirtualService: appendSvc below would keep the
	// listener's services as they are unless two of them share a host.
	if len(listeners) == 1 && len(listeners[0].vss) == 0 &&
		!slices.ContainsFunc(listeners[0].services, func(s *scoped) bool { return s.svc.ambiguous }) {
		sc.services = slices.Clone(listeners[0].services)
		return
	}
	added := map[string]addedIndex{}
	appendSvc := func(s *scoped) {
		if s == nil {
			return
		}
		found, ok := added[s.svc.host]
		if !ok {
			sc.services = append(sc.services, s)
			added[s.svc.host] = addedIndex{s, len(sc.services) - 1}
			return
		}
		ex := found.s
		if ex == s {
			return
		}
		if ex.svc.k8s && !s.svc.k8s {
			return
		}
		if !ex.svc.k8s && s.svc.k8s {
			sc.services[found.pos] = s
			added[s.svc.host] = addedIndex{s, found.pos}
			return
		}
		if slices.Equal(ex.ports, s.ports) {
			return
		}
		if !canMerge(ex.svc, s.svc) {
			return
		}
		merged := &scoped{svc: ex.svc, ports: slices.Clone(ex.ports)}
		for _, p := range s.ports {
			if !slices.ContainsFunc(merged.ports, func(q svcPort) bool { return q.num == p.num }) {
				merged.ports = append(merged.ports, p)
			}
		}
		sc.services[found.pos] = merged
		added[s.svc.host] = addedIndex{merged, found.pos}
	}
	for _, l := range listeners {
		for _, s := range l.services {
			appendSvc(s)
		}
		for _, vs := range l.vss {
			dests, order := ix.destinations(vs, configNs)
			for _, h := range order {
				ports := dests[h]
				byNs := ix.byHostNs[h]
				match := func(s *service) *scoped {
					if l.matchPort {
						return matchListenerPort(s.full, l)
					}
					return matchVSPorts(s.full, ports)
				}
				if s, ok := byNs[configNs]; ok {
					appendSvc(match(s))
					continue
				}
				if len(byNs) == 0 {
					continue
				}
				if ns := ix.pickNamespace(byNs, configNs); ns != "" {
					appendSvc(match(byNs[ns]))
				}
			}
		}
	}
}

// canMerge is R25's canMergeServices: the ports of two services of one host add up.
func canMerge(a, b *service) bool {
	return a.ns == b.ns && a.res == b.res && a.k8s == b.k8s &&
		maps.Equal(a.labels, b.labels) && maps.Equal(a.selector, b.selector) &&
		setEqual(toSet(a.exportTo), toSet(b.exportTo))
}

func toSet(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// pickNamespace mirrors pickBestVisibleNamespace (PILOT_SIDECAR_PICK_BEST_SERVICE_NAMESPACE=true, R24).
func (ix *index) pickNamespace(byNs map[string]*service, configNs string) string {
	var best *service
	nss := make([]string, 0, len(byNs))
	for ns := range byNs {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	for _, ns := range nss {
		s := byNs[ns]
		if !ix.serviceVisible(s, configNs) {
			continue
		}
		if s.k8s {
			return ns
		}
		if best == nil || s.created.Before(best.created) {
			best = s
		}
	}
	if best != nil {
		return best.ns
	}
	return ""
}

// destinationRule mirrors PushContext.destinationRule (R34).
func (ix *index) destinationRule(proxyNs string, s *service) []*consolidatedDR {
	if proxyNs != ix.root {
		if set := ix.drLocal[proxyNs]; set != nil {
			if l, ok := istioconfig.MostSpecificHostMatch(s.host, set.specific, set.wildcard); ok {
				return l
			}
		}
	} else if l, ok := istioconfig.MostSpecificHostMatch(s.host, ix.drRoot.specific, ix.drRoot.wildcard); ok {
		return l
	}
	if out := ix.exportedDR(s.ns, s.host, proxyNs); len(out) > 0 {
		return out
	}
	if out := ix.exportedDR(ix.root, s.host, proxyNs); len(out) > 0 {
		return out
	}
	return nil
}

func (ix *index) exportedDR(owner, h, client string) []*consolidatedDR {
	set := ix.drExported[owner]
	if set == nil {
		return nil
	}
	l, ok := istioconfig.MostSpecificHostMatch(h, set.specific, set.wildcard)
	if !ok {
		return nil
	}
	var out []*consolidatedDR
	for _, d := range l {
		if len(d.exportTo) == 0 || d.exportTo["*"] || d.exportTo[client] {
			out = append(out, d)
		}
	}
	return out
}

// destinationRuleFor mirrors SidecarScope.DestinationRule for outbound traffic (R35).
func (sc *sidecarScope) destinationRuleFor(p Proxy, h string) *consolidatedDR {
	var catchAll *consolidatedDR
	for _, d := range sc.drs[h] {
		if !d.hasSel {
			catchAll = d
		}
		if sc.ns == d.rule.Namespace && d.hasSel && istioconfig.LabelsSubset(d.selector, p.Labels) {
			return d
		}
	}
	return catchAll
}
