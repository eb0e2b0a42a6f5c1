package predict

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Predictor holds the indexes istiod builds in its PushContext for one inventory.
// It is safe for concurrent use. Proxies that share a Sidecar and namespace share
// the scope computation and, unless a DestinationRule with a workloadSelector
// tells them apart, the sorted list of outbound clusters.
type Predictor struct {
	ix     *index
	mu     sync.Mutex
	scopes map[scopeKey]*sidecarScope
	// kept lists the scopes that hold a sorted outbound list, oldest first;
	// keptClusters counts the clusters they hold, at most budget.
	kept         []*sidecarScope
	keptClusters int
	budget       int
	// siblings predict the proxies of revisions at other Istio releases (C12), by "major.minor".
	siblings map[string]*Predictor
	// reroutes are Reroutes' answers, by namespace (guarded by mu).
	reroutes map[string]map[string][]Reroute
}

// sortedBudget bounds the outbound clusters a Predictor keeps sorted for
// reuse, about 100 MiB. Beyond it the scopes used least recently recompute
// their list when a proxy needs it again.
const sortedBudget = 1 << 20

type scopeKey struct {
	sc *mesh.Sidecar
	ns string
}

// WorkloadProxy is a workload of the inventory that runs sidecars (census.Workload), seen as
// a proxy: its replicas share its labels, and so its clusters.
type WorkloadProxy struct {
	Namespace string
	// Name and Kind are Istio's name of the workload (census.Identity).
	Name     string
	Kind     string
	Labels   map[string]string
	Replicas census.Replicas
	// Version is the Istio release of the revision that injects it, "" when not known.
	Version string
}

// Proxy returns the proxy identity of the workload.
func (w WorkloadProxy) Proxy() Proxy {
	return Proxy{Namespace: w.Namespace, Labels: w.Labels, Version: w.Version}
}

// New indexes the inventory.
func New(inv *mesh.Inventory, opts Options) (*Predictor, error) {
	ver, err := istioconfig.ParseVersion(opts.IstioVersion)
	if err != nil {
		return nil, err
	}
	domain := opts.DomainSuffix
	if domain == "" {
		domain = mesh.DefaultDomainSuffix
	}
	p := &Predictor{ix: buildIndex(inv, ver, domain), scopes: map[scopeKey]*sidecarScope{}, budget: sortedBudget}
	// C12: the proxies of a revision at another release are predicted with its rules.
	for _, v := range p.ix.census.Versions() {
		sv, err := istioconfig.ParseVersion(v)
		if err != nil || sv == ver || !sv.Modelled() || sv.Less(istioconfig.Oldest) {
			continue
		}
		if p.siblings == nil {
			p.siblings = map[string]*Predictor{}
		}
		p.siblings[v] = &Predictor{ix: buildIndex(inv, sv, domain), scopes: map[scopeKey]*sidecarScope{}, budget: sortedBudget}
	}
	return p, nil
}

// Version is the Istio release the Predictor predicts with, for proxies of no other known release.
func (p *Predictor) Version() string { return p.ix.ver.String() }

// VersionFor is the Istio release a proxy is predicted with: its revision's when that is one the
// Predictor models, else the Predictor's.
func (p *Predictor) VersionFor(proxy Proxy) string { return p.forProxy(proxy).ix.ver.String() }

// forProxy is the Predictor for a proxy's release.
func (p *Predictor) forProxy(proxy Proxy) *Predictor {
	if s := p.siblings[proxy.Version]; s != nil {
		return s
	}
	return p
}

// WithSidecars returns a Predictor for the inventory with the given Sidecars
// in place of those of the same namespace and name, or added, as
// mesh.Inventory.WithSidecars makes it. It predicts exactly what New on that
// inventory would, but reuses every index that does not depend on Sidecars
// (services, VirtualServices, DestinationRules, workloads), so a plan that
// tries one Sidecar per scope indexes the mesh once.
func (p *Predictor) WithSidecars(sidecars ...*mesh.Sidecar) *Predictor {
	return p.withInventory(p.ix.inv.WithSidecars(sidecars...))
}

// WithoutSidecars is WithSidecars for mesh.Inventory.WithoutSidecars: the
// inventory without the Sidecars drop selects.
func (p *Predictor) WithoutSidecars(drop func(*mesh.Sidecar) bool) *Predictor {
	return p.withInventory(p.ix.inv.WithoutSidecars(drop))
}

// withInventory re-indexes the Sidecars of inv, which differs from the
// Predictor's inventory in its Sidecars only. Scopes are computed afresh.
func (p *Predictor) withInventory(inv *mesh.Inventory) *Predictor {
	ix := *p.ix
	ix.inv = inv
	ix.visible = maps.Clone(p.ix.visible)
	ix.rootSidecar = nil
	ix.initSidecars()
	out := &Predictor{ix: &ix, scopes: map[scopeKey]*sidecarScope{}, budget: p.budget}
	if len(p.siblings) > 0 {
		out.siblings = make(map[string]*Predictor, len(p.siblings))
		for v, s := range p.siblings {
			out.siblings[v] = s.withInventory(inv)
		}
	}
	return out
}

// SidecarFor returns the Sidecar that applies to the proxy, or nil for the default scope.
func (p *Predictor) SidecarFor(proxy Proxy) *mesh.Sidecar { return p.ix.sidecarFor(proxy) }

func (p *Predictor) scope(sc *mesh.Sidecar, ns string) *sidecarScope {
	k := scopeKey{sc, ns}
	p.mu.Lock()
	s, ok := p.scopes[k]
	p.mu.Unlock()
	if ok {
		return s
	}
	s = p.ix.buildScope(sc, ns)
	p.mu.Lock()
	p.scopes[k] = s
	p.mu.Unlock()
	return s
}

// Predict returns the clusters istiod builds for the proxy.
func (p *Predictor) Predict(proxy Proxy) *Result { return p.predict(proxy, true) }

// predict is Predict. Without merge, a proxy whose scope shares its outbound list gets no
// Clusters, only the outbound list and the rest: a review of many workloads compares those
// and never needs the merged list.
func (p *Predictor) predict(proxy Proxy, merge bool) *Result {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.predict(proxy, merge)
	}
	ix := p.ix
	sc := ix.sidecarFor(proxy)
	scope := p.scope(sc, proxy.Namespace)
	res := &Result{Proxy: proxy}
	if sc != nil {
		res.Sidecar = sc.Key()
	}
	// The outbound clusters depend on the proxy only through DestinationRules
	// with a workloadSelector. Without them, every proxy of the scope gets the
	// same list, and the first one sorts it for the others.
	var outbound []Cluster
	if scope.labelFree {
		outbound, res.facts = p.sortedOutbound(scope)
	} else {
		outbound = ix.sortedOutbound(scope, proxy)
	}
	// R37: BlackHoleCluster and PassthroughCluster, whatever the outbound policy; R38:
	// AllowAnyDynamicDNSCluster for ALLOW_ANY_DYNAMIC_DNS. R44 (HBONE) and R45 (credential
	// socket) are not modelled.
	// rest is kept in the Result, so it is allocated once, at its final size.
	inbound := ix.inbound(sc, proxy)
	rest := make([]Cluster, 0, len(inbound)+4)
	rest = append(rest,
		Cluster{Name: "BlackHoleCluster", Type: TypeStatic},
		Cluster{Name: "PassthroughCluster", Type: TypeOriginalDst},
	)
	if scope.outbound == "ALLOW_ANY_DYNAMIC_DNS" {
		rest = append(rest, Cluster{Name: "AllowAnyDynamicDNSCluster", Type: "DYNAMIC_FORWARD_PROXY"})
	}
	rest = append(rest, inbound...)
	if ix.ver.UnifiedInboundPassthrough() { // R43
		rest = append(rest, Cluster{Name: "InboundPassthroughCluster", Type: TypeOriginalDst})
	} else {
		rest = append(rest, Cluster{Name: "InboundPassthroughClusterIpv4", Type: TypeOriginalDst})
	}
	slices.SortStableFunc(rest, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	shared := scope.labelFree
	// R39: the EnvoyFilter cluster patches meshscope models (ADD, REMOVE) make the proxy's list
	// its own.
	if o, r, ok := applyClusterPatches(ix.clusterPatches(proxy), outbound, rest); ok {
		outbound, rest, shared, res.facts = o, r, false, nil
	}
	res.outbound, res.rest, res.shared = outbound, rest, shared
	if merge || !res.shared {
		res.Clusters = mergeByName(outbound, rest)
	}
	res.Bootstrap = ix.bootstrap()
	return res
}

// sortedOutbound returns the outbound clusters of the proxy, sorted by name
// (stably, in the order istiod builds them for equal names).
// R32: duplicate names are kept, as istiod does not normalize outbound clusters.
func (ix *index) sortedOutbound(scope *sidecarScope, proxy Proxy) []Cluster {
	raw := make([]Cluster, 0, scope.clusterHint)
	for _, s := range scope.services {
		raw = ix.appendOutbound(raw, scope, proxy, s)
	}
	order := make([]int32, len(raw))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(raw[a].Name, raw[b].Name); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]Cluster, len(raw))
	for i, j := range order {
		out[i] = raw[j]
	}
	return out
}

// sortedOutbound returns the sorted outbound clusters every proxy of a
// labelFree scope gets. The list is shared: it must not be changed.
func (p *Predictor) sortedOutbound(scope *sidecarScope) ([]Cluster, *listFacts) {
	scope.sortedMu.Lock()
	list, facts := scope.sorted, scope.facts
	scope.sortedMu.Unlock()
	if list != nil {
		return list, facts
	}
	list = p.ix.sortedOutbound(scope, Proxy{})
	p.mu.Lock()
	defer p.mu.Unlock()
	scope.sortedMu.Lock()
	if scope.sorted != nil {
		list, facts = scope.sorted, scope.facts // another proxy was faster
		scope.sortedMu.Unlock()
		return list, facts
	}
	facts = &listFacts{}
	scope.sorted, scope.facts = list, facts
	scope.sortedMu.Unlock()
	p.kept = append(p.kept, scope)
	p.keptClusters += len(list)
	for p.keptClusters > p.budget && len(p.kept) > 1 {
		old := p.kept[0]
		p.kept = p.kept[1:]
		old.sortedMu.Lock()
		p.keptClusters -= len(old.sorted)
		old.sorted, old.facts = nil, nil
		old.sortedMu.Unlock()
	}
	return list, facts
}

// mergeByName merges two lists sorted by name. On equal names a comes first:
// the result is the stable sort of a followed by b.
func mergeByName(a, b []Cluster) []Cluster {
	out := make([]Cluster, 0, len(a)+len(b))
	i := 0
	for _, c := range b {
		k := i + sort.Search(len(a)-i, func(x int) bool { return a[i+x].Name > c.Name })
		out = append(out, a[i:k]...)
		out = append(out, c)
		i = k
	}
	return append(out, a[i:]...)
}

// bootstrap is R46: the static clusters of the bootstrap, with the tracer's.
func (ix *index) bootstrap() []Cluster {
	b := []Cluster{
		{Name: "agent", Type: TypeStatic},
		{Name: "prometheus_stats", Type: TypeStatic},
		{Name: "sds-grpc", Type: TypeStatic},
		{Name: "xds-grpc", Type: TypeStatic},
	}
	if t := ix.inv.Mesh.Tracer; t != "" {
		b = append(b, Cluster{Name: t, Type: TypeStrictDNS})
	}
	sort.Slice(b, func(i, j int) bool { return b[i].Name < b[j].Name })
	return b
}

func drName(d *consolidatedDR) string {
	if d == nil {
		return ""
	}
	return d.name
}

// lbFor returns the effective load balancer of a traffic policy for a port.
func lbFor(tp *networking.TrafficPolicy, port int) *networking.LoadBalancerSettings {
	for _, pl := range tp.GetPortLevelSettings() {
		if int(pl.GetPort().GetNumber()) == port {
			return pl.GetLoadBalancer()
		}
	}
	return tp.GetLoadBalancer()
}

// appendOutbound appends the outbound clusters of one service of the scope (R27-R31, R36).
func (ix *index) appendOutbound(out []Cluster, scope *sidecarScope, proxy Proxy, s *scoped) []Cluster {
	svc := s.svc
	// R27: an alias has no cluster.
	if svc.res == resAlias {
		return out
	}
	dr := scope.destinationRuleFor(proxy, svc.host)
	// R28: a wildcard DYNAMIC_DNS host has one DFP cluster per HTTP, TLS, GRPC or HTTP2 port.
	if istioconfig.IsWildcard(svc.host) && svc.res == resDynamicDNS {
		for _, p := range s.ports {
			switch p.proto {
			case istioconfig.HTTP, istioconfig.TLS, istioconfig.GRPC, istioconfig.HTTP2:
				out = append(out, Cluster{Name: p.cluster, FQDN: svc.host, Port: p.num,
					Direction: Outbound, Type: "DYNAMIC_FORWARD_PROXY", DestinationRule: drName(dr)})
			}
		}
		return out
	}
	dns := svc.res == resDNSLB || svc.res == resDNSRoundRobin
	for _, p := range s.ports {
		// R29: one cluster per port, none for UDP.
		if p.proto == istioconfig.UDP {
			continue
		}
		// R31: a DNS cluster without endpoints is dropped.
		if dns && len(svc.endpointLabels) == 0 {
			continue
		}
		// R30: the discovery type of the resolution.
		typ := TypeEDS
		switch svc.res {
		case resDNSLB:
			typ = TypeStrictDNS
			if svc.dnsRace {
				typ = TypeLogicalDNS
			}
		case resDNSRoundRobin:
			typ = TypeLogicalDNS
		case resPassthrough:
			typ = TypeOriginalDst
		}
		var policy *networking.TrafficPolicy
		if dr != nil {
			policy = dr.policy
		}
		if lbFor(policy, p.num).GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH {
			typ = TypeOriginalDst
		}
		out = append(out, Cluster{Name: p.cluster, FQDN: svc.host, Port: p.num,
			Direction: Outbound, Type: typ, DestinationRule: drName(dr)})
		if dr == nil {
			continue
		}
		// R36: one cluster per subset, but none for a DNS subset without endpoints (R31).
		for _, ss := range dr.subsets {
			styp := typ
			if ss.GetTrafficPolicy().GetLoadBalancer().GetSimple() == networking.LoadBalancerSettings_PASSTHROUGH {
				styp = TypeOriginalDst
			}
			if (styp == TypeStrictDNS || styp == TypeLogicalDNS) && !hasEndpointWith(svc.endpointLabels, ss.GetLabels()) {
				continue
			}
			out = append(out, Cluster{Name: outboundName(p.num, ss.GetName(), svc.host), FQDN: svc.host,
				Port: p.num, Subset: ss.GetName(), Direction: Outbound, Type: styp, DestinationRule: drName(dr)})
		}
	}
	return out
}

func hasEndpointWith(eps []map[string]string, sel map[string]string) bool {
	for _, e := range eps {
		if istioconfig.LabelsSubset(sel, e) {
			return true
		}
	}
	return false
}

// inbound mirrors buildInboundClusters (R40-R42).
func (ix *index) inbound(sc *mesh.Sidecar, proxy Proxy) []Cluster {
	var out []Cluster
	seen := map[string]bool{}
	add := func(c Cluster) {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	// R42: a Sidecar with ingress has one cluster per ingress listener.
	if ingress := sc.GetSpecIngress(); len(ingress) > 0 {
		for _, in := range ingress {
			typ := TypeOriginalDst
			if de := in.GetDefaultEndpoint(); de != "" {
				if !strings.HasPrefix(de, "unix://") {
					_, port, err := net.SplitHostPort(de)
					if err != nil || port == "" {
						continue
					}
					if _, err := strconv.Atoi(port); err != nil {
						continue
					}
				}
				typ = TypeStatic
			}
			n := int(in.GetPort().GetNumber())
			add(Cluster{Name: fmt.Sprintf("inbound|%d||", n), Port: n, Direction: Inbound, Type: typ})
		}
		return out
	}
	// R41: else one per distinct target port of the proxy's services (R40).
	for _, tp := range ix.targetPorts(proxy) {
		add(Cluster{Name: fmt.Sprintf("inbound|%d||", tp), Port: tp, Direction: Inbound, Type: TypeOriginalDst})
	}
	return out
}

// targetPorts (R40) mirrors the aggregate GetProxyServiceTargets for a pod: first the
// Kubernetes registry (the target ports of every Service in the pod's namespace
// whose selector matches the pod), then the ServiceEntry registry (every port of
// each ServiceEntry in the pod's namespace whose workloadSelector selects it).
func (ix *index) targetPorts(proxy Proxy) []int {
	w := ix.podOf(proxy)
	var out []int
	add := func(n int) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, ks := range ix.kubeByNs[proxy.Namespace] {
		if !istioconfig.SelectorMatches(ks.Spec.Selector, proxy.Labels) {
			continue
		}
		type tpKey struct {
			port  int
			proto string
		}
		seen := map[tpKey]bool{}
		names := map[string]bool{}
		for _, sp := range ks.Spec.Ports {
			if names[sp.Name] {
				continue // svc.Ports.Get(name) returns the first port of that name
			}
			names[sp.Name] = true
			num, ok := resolveTargetPort(sp, w)
			if !ok {
				continue
			}
			k := tpKey{num, istioconfig.ConvertKubeProtocol(sp.Port, sp.Name, sp.Protocol, sp.AppProtocol)}
			if seen[k] {
				continue
			}
			seen[k] = true
			add(num)
		}
	}
	if w == nil {
		return out // the ServiceEntry registry finds workloads by pod IP
	}
	for _, se := range ix.selectorSEsByNs[proxy.Namespace] {
		if !istioconfig.LabelsSubset(se.Spec.GetWorkloadSelector().GetLabels(), w.PodLabels) || len(se.Spec.GetHosts()) == 0 {
			continue
		}
		for _, p := range se.Spec.GetPorts() {
			switch {
			case namedTCPPort(w, p.GetName()) > 0:
				add(namedTCPPort(w, p.GetName()))
			case p.GetTargetPort() > 0:
				add(int(p.GetTargetPort()))
			default:
				add(int(p.GetNumber()))
			}
		}
	}
	return out
}

// podOf returns the running workload whose pods carry exactly the proxy's labels.
func (ix *index) podOf(proxy Proxy) *mesh.Workload {
	for _, w := range ix.workloadsByNs[proxy.Namespace] {
		if maps.Equal(w.PodLabels, proxy.Labels) {
			return w
		}
	}
	return nil
}

// resolveTargetPort mirrors kube FindPort: a number, or a container port with the
// same name and protocol.
func resolveTargetPort(sp corev1.ServicePort, w *mesh.Workload) (int, bool) {
	if sp.TargetPort.Type == intstr.Int {
		return int(sp.TargetPort.IntVal), true
	}
	if w == nil {
		return 0, false
	}
	for _, cp := range w.Ports {
		if cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol {
			return int(cp.Port), true
		}
	}
	return 0, false
}

func namedTCPPort(w *mesh.Workload, name string) int {
	for _, cp := range w.Ports {
		if name != "" && cp.Name == name && cp.Protocol == corev1.ProtocolTCP {
			return int(cp.Port)
		}
	}
	return 0
}

// Census is the inventory's census of proxies, which WorkloadProxies lists the sidecars of.
func (p *Predictor) Census() *census.Census { return p.ix.census }

// WorkloadProxies lists every workload of the inventory that runs sidecars, sorted by
// namespace, name and kind. Census says which run none, and why.
func (p *Predictor) WorkloadProxies() []WorkloadProxy { return p.workloadProxies("") }

// WorkloadProxiesIn lists the workloads of one namespace that run sidecars, sorted by name and kind.
func (p *Predictor) WorkloadProxiesIn(namespace string) []WorkloadProxy {
	if namespace == "" {
		return nil
	}
	return p.workloadProxies(namespace)
}

// workloadProxies lists the workloads of namespace ("": of every namespace), sorted.
func (p *Predictor) workloadProxies(namespace string) []WorkloadProxy {
	ws := p.ix.census.Sidecars(namespace)
	out := make([]WorkloadProxy, len(ws))
	for i, w := range ws {
		out[i] = WorkloadProxy{Namespace: w.Namespace, Name: w.Name, Kind: w.Kind, Labels: w.Labels, Replicas: w.Replicas, Version: w.Version}
	}
	return out
}

// VersionNotes say, for a report, which Istio release the proxies are predicted with (C12):
// per istiod revision of the inventory, its release when it has its own rules, or the release
// assumed instead; without any istiod Deployment, the release assumed for every proxy.
func (p *Predictor) VersionNotes() []string {
	revs := p.ix.census.Revisions()
	if len(revs) == 0 {
		return []string{fmt.Sprintf("Proxies are predicted with Istio %s rules: the inventory holds no istiod Deployment "+
			"whose image says which release runs (set --istio-version or istio_version otherwise).", p.ix.ver)}
	}
	names := slices.Sorted(maps.Keys(revs))
	var out []string
	for _, n := range names {
		r := revs[n]
		switch {
		case r.Version == "":
			out = append(out, fmt.Sprintf("istiod revision %s (%s, image %q) does not say its Istio release in its image tag: "+
				"its proxies are predicted with %s rules.", n, r.Deployment, r.Image, p.ix.ver))
		case p.siblings[r.Version] != nil || r.Version == p.ix.ver.String():
			out = append(out, fmt.Sprintf("istiod revision %s runs Istio %s (%s): its proxies are predicted with %s rules.",
				n, r.Version, r.Image, r.Version))
		default:
			out = append(out, fmt.Sprintf("istiod revision %s runs Istio %s (%s), whose rules meshscope does not model: "+
				"its proxies are predicted with %s rules.", n, r.Version, r.Image, p.ix.ver))
		}
	}
	unknown := 0
	for _, w := range p.ix.census.Sidecars("") {
		if w.Version == "" {
			unknown++
		}
	}
	if unknown > 0 {
		out = append(out, fmt.Sprintf("%d workloads of a revision whose release the inventory does not say are predicted with Istio %s rules.", unknown, p.ix.ver))
	}
	return out
}
