package predict

import (
	"cmp"
	"crypto/sha256"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// The RDS route configurations istiod pushes to a sidecar (R58-R61): the names its outbound
// listeners' HTTP filter chains ask for, and for each the virtual hosts and their domains, as
// ConfigGeneratorImpl.BuildHTTPRoutes builds them.

// Route is one RDS route configuration, a row group of `istioctl proxy-config route`.
type Route struct {
	// Name is "P" for the route HTTP services on port P share, or "HOST:P" for the route of
	// one sniffed service port.
	Name         string        `json:"name"`
	VirtualHosts []VirtualHost `json:"virtual_hosts"`
}

// VirtualHost is one virtual host of a route configuration.
type VirtualHost struct {
	// Name is "HOST:PORT", or the catch-all's allow_any, block_all or allow_any_dynamic_dns.
	Name string `json:"name"`
	// Domains are the Host header values it matches, in istiod's order. An address the
	// inventory does not carry is named in angle brackets, as listeners name it.
	Domains []string `json:"domains"`
	// Service is the registry host the virtual host is for, "" for a VirtualService host that
	// matches no service and for the catch-all.
	Service string `json:"service,omitempty"`
	// VirtualService is "namespace/name" of the VirtualService whose routes the virtual host
	// holds, "" for a service's default route.
	VirtualService string `json:"virtual_service,omitempty"`
}

// Catch-all virtual host names (istio networking/util: Passthrough, BlackHole, AllowAnyDynamicDNS).
const (
	vhostAllowAny           = "allow_any"
	vhostBlockAll           = "block_all"
	vhostAllowAnyDynamicDNS = "allow_any_dynamic_dns"
)

// ldsEntry is one entry of istiod's outbound listener map (R58): the protocol the listener
// took, whether a port's egress listener made it, and its filter chains.
type ldsEntry struct {
	proto  string
	locked bool
	chains []ldsChain
}

// ldsChain is a filter chain, as far as its match and route decide: an HTTP chain asks RDS
// for rds; alpn is set when it matches the plaintext HTTP ALPNs; match names a TCP chain's
// match ("" matches every connection).
type ldsChain struct {
	rds   string
	alpn  bool
	match string
	// host is the service whose cluster a TCP chain proxies to, unless vs, "namespace/name" of
	// a VirtualService whose TCP or TLS route decides where it proxies, is set.
	host string
	vs   string
}

// conflicts is filterChainOpts.conflictsWith for the chains modelled.
func (c ldsChain) conflicts(o ldsChain) bool {
	if c.alpn != o.alpn {
		return false
	}
	return c.alpn || c.match == o.match
}

func (e *ldsEntry) routes() []string {
	if e == nil {
		return nil
	}
	var out []string
	for _, c := range e.chains {
		if c.rds != "" {
			out = append(out, c.rds)
		}
	}
	return out
}

// Listener conflict kinds (istio core: NoConflict, HTTPOverTCP, ...).
const (
	noConflict = iota
	httpOverTCP
	tcpOverHTTP
	tcpOverTCP
	tcpOverAuto
	autoOverHTTP
	autoOverTCP
)

// chains is R58: buildSidecarOutboundListener's filter chains and conflict handling for one
// service port on listener key name bound at addr, which decide the routes the listener asks
// for. cidr is the service's CIDR address when it listens on the wildcard.
func (b *ldsBuilder) chains(s *service, name, addr string, port int, proto, cidr string) {
	if b.entries == nil {
		return
	}
	cur := b.entries[name]
	if cur != nil && cur.locked {
		return
	}
	lp := listenerProtocol(proto)
	entryProto := proto
	conflict := noConflict
	var opts []ldsChain
	httpChain := func(rds string) ldsChain {
		return ldsChain{rds: rds, alpn: addr == wildcardIPv4}
	}
	portName := strconv.Itoa(port)
	if proto == istioconfig.HTTPProxy {
		opts = []ldsChain{{rds: portName}}
	} else {
		switch lp {
		case ListenerHTTP:
			if cur != nil {
				if listenerProtocol(cur.proto) != ListenerTCP {
					return
				}
				conflict = httpOverTCP
			}
			opts = []ldsChain{httpChain(portName)}
			if addr == wildcardIPv4 {
				// With a TCP fallthrough chain beside it, the listener sniffs.
				entryProto = istioconfig.Unsupported
			}
		case ListenerTCP:
			opts = b.tcpChains(s, addr, port, proto, cidr)
			if cur != nil {
				switch listenerProtocol(cur.proto) {
				case ListenerHTTP:
					conflict = tcpOverHTTP
				case ListenerTCP:
					conflict = tcpOverTCP
				default:
					conflict = tcpOverAuto
				}
			}
		case ListenerAuto:
			if cur != nil {
				switch listenerProtocol(cur.proto) {
				case ListenerHTTP:
					conflict = autoOverHTTP
				case ListenerTCP:
					conflict = autoOverTCP
				default:
					return
				}
			}
			rds := portName
			if addr != wildcardIPv4 {
				rds = s.host + ":" + portName // a sniffed service has a route of its own
			}
			opts = append(b.tcpChains(s, addr, port, proto, cidr), ldsChain{rds: rds, alpn: true})
			entryProto = istioconfig.Unsupported
		default:
			return
		}
	}
	// isConflictWithWellKnownPort: Mongo and MySQL share a port with nothing else.
	if cur != nil && conflict != noConflict {
		wk := func(p string) bool { return p == istioconfig.Mongo || p == istioconfig.MySQL }
		if (wk(proto) || wk(cur.proto)) && proto != cur.proto {
			return
		}
	}
	switch conflict {
	case noConflict, autoOverHTTP:
		b.entries[name] = &ldsEntry{proto: entryProto, chains: opts}
	case httpOverTCP, tcpOverHTTP, autoOverTCP:
		cur.merge(opts)
		cur.proto = istioconfig.Unsupported
	default:
		cur.merge(opts)
	}
}

// merge is mergeTCPFilterChains: an incoming chain whose match an existing one has is dropped.
func (e *ldsEntry) merge(in []ldsChain) {
	for _, c := range in {
		if !slices.ContainsFunc(e.chains, c.conflicts) {
			e.chains = append(e.chains, c)
		}
	}
}

// tcpChains are the TCP and TLS filter chains of a service port (buildSidecarOutboundTCPListenerOpts),
// by their match: a CIDR, the service's SNI where the address cannot tell it apart, or all.
func (b *ldsBuilder) tcpChains(s *service, addr string, port int, proto, cidr string) []ldsChain {
	match := ""
	if cidr != "" {
		match = "cidr:" + cidr
	}
	if proto != istioconfig.HTTPS && proto != istioconfig.TLS {
		return []ldsChain{{match: match, host: s.host, vs: b.tcpVS(s, port)}}
	}
	if b.cur != nil {
		if vs := b.tlsVS(s, port); vs != "" {
			return []ldsChain{{match: "tls:" + s.host, host: s.host, vs: vs}}
		}
	}
	svcAddr := ""
	if as := b.addresses(b.cur, s); len(as) > 0 {
		svcAddr = as[0].addr
	}
	if cidr != "" || svcAddr == "" || (svcAddr == wildcardIPv4 && addr == wildcardIPv4) {
		match += ";sni:" + s.host
	}
	return []ldsChain{{match: match, host: s.host}}
}

// tlsVS is "namespace/name" of the first VirtualService of the egress listener with a TLS route
// for the host on the port (buildSidecarOutboundTLSFilterChainOpts), "" for none.
func (b *ldsBuilder) tlsVS(s *service, port int) string {
	for _, e := range b.cur.vss {
		if !slices.ContainsFunc(e.hosts, func(h string) bool { return istioconfig.HostsOverlap(h, s.host) }) {
			continue
		}
		for _, t := range e.cfg.Spec.GetTls() {
			for _, m := range t.GetMatch() {
				if (m.GetPort() == 0 || int(m.GetPort()) == port) && (len(m.GetGateways()) == 0 || slices.Contains(m.GetGateways(), "mesh")) {
					return e.cfg.Namespace + "/" + e.cfg.Name
				}
			}
		}
	}
	return ""
}

// tcpVS is "namespace/name" of the first VirtualService of the egress listener whose TCP route
// takes the host's port for the proxy, with a match of every destination address
// (buildSidecarOutboundTCPFilterChainOpts), "" for none. Its destinations, not the service's
// cluster, are where the chain proxies.
func (b *ldsBuilder) tcpVS(s *service, port int) string {
	if b.cur == nil {
		return ""
	}
	for _, e := range b.cur.vss {
		if !slices.ContainsFunc(e.hosts, func(h string) bool { return istioconfig.HostsOverlap(h, s.host) }) {
			continue
		}
		for _, t := range e.cfg.Spec.GetTcp() {
			if len(t.GetRoute()) == 0 {
				continue
			}
			if len(t.GetMatch()) == 0 {
				return e.cfg.Namespace + "/" + e.cfg.Name
			}
			for _, m := range t.GetMatch() {
				if (m.GetPort() == 0 || int(m.GetPort()) == port) &&
					(len(m.GetGateways()) == 0 || slices.Contains(m.GetGateways(), "mesh")) &&
					istioconfig.LabelsSubset(m.GetSourceLabels(), b.labels) &&
					(m.GetSourceNamespace() == "" || m.GetSourceNamespace() == b.proxyNS) &&
					len(m.GetDestinationSubnets()) == 0 {
					return e.cfg.Namespace + "/" + e.cfg.Name
				}
			}
		}
	}
	return ""
}

// Routes returns the RDS route configurations istiod pushes to the proxy, sorted by name,
// each route name its listeners ask for once (R59-R61).
func (p *Predictor) Routes(proxy Proxy) []Route {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.Routes(proxy)
	}
	var names []string
	for _, l := range p.Listeners(proxy) {
		names = append(names, l.Routes...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	ix := p.ix
	scope := p.scope(ix.sidecarFor(proxy), proxy.Namespace)
	rb := &rdsBuilder{ix: ix, scope: scope, proxy: proxy, dnsDomain: proxy.Namespace + ".svc." + ix.domain,
		cache: map[int][]VirtualHost{}}
	out := make([]Route, 0, len(names))
	for _, n := range names {
		out = append(out, Route{Name: n, VirtualHosts: rb.route(n)})
	}
	return out
}

// RouteCount returns how many route configurations and virtual hosts Routes gives the proxy,
// from the scope's listener summary and virtual hosts counted once per scope and per way the
// proxy's labels meet its VirtualServices' sourceLabels: a review of thousands of workloads
// builds each scope's routes once.
func (p *Predictor) RouteCount(proxy Proxy) (routes, virtualHosts int) {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.RouteCount(proxy)
	}
	ix := p.ix
	scope := p.scope(ix.sidecarFor(proxy), proxy.Namespace)
	n := ix.nodeOf(proxy)
	sum := scope.ldsSummary(ix, n.interceptNone)
	names := slices.Clone(sum.routes)
	for i, owners := range sum.podKeys {
		if slices.ContainsFunc(owners, func(o *ldsOwner) bool { return !o.self(n) }) {
			names = append(names, sum.podRoutes[i]...)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	m := scope.rdsMemoFor(ix, proxy)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		c, ok := m.counts[name]
		if !ok {
			c = len(m.rb.route(name))
			m.counts[name] = c
		}
		virtualHosts += c
	}
	// Only the counts are kept: a port's virtual hosts, which its sniffed routes share, can
	// hold every service of the mesh.
	clear(m.rb.cache)
	return len(names), virtualHosts
}

// rdsMemo is the virtual host counts by route name of the proxies of one routeCountKey.
type rdsMemo struct {
	mu     sync.Mutex
	rb     *rdsBuilder
	counts map[string]int
}

// routeCountCache holds an index's rdsMemos.
type routeCountCache struct {
	mu sync.Mutex
	m  map[string]*rdsMemo
}

func (sc *sidecarScope) rdsMemoFor(ix *index, proxy Proxy) *rdsMemo {
	key := sc.fingerprint() + sc.routeSignature(ix, proxy)
	c := ix.routeCounts
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.m[key]; m != nil {
		return m
	}
	if c.m == nil {
		c.m = map[string]*rdsMemo{}
	}
	m := &rdsMemo{counts: map[string]int{},
		rb: &rdsBuilder{ix: ix, scope: sc, proxy: proxy, dnsDomain: proxy.Namespace + ".svc." + ix.domain, cache: map[int][]VirtualHost{}}}
	c.m[key] = m
	return m
}

// fingerprint is routeFingerprint, computed once per scope.
func (sc *sidecarScope) fingerprint() string {
	sc.rdsMu.Lock()
	defer sc.rdsMu.Unlock()
	if sc.routeKey == "" {
		sc.routeKey = sc.routeFingerprint()
	}
	return sc.routeKey
}

// routeFingerprint is a digest of all that a scope's virtual hosts are built from besides the
// proxy's labels and namespace: its outbound traffic policy, and each egress listener's port,
// bind, capture mode and hosts, the services and ports it imports and its VirtualServices.
// Scopes of one fingerprint (the default scopes of a mesh's namespaces, say) count the same
// virtual hosts, since the proxy's namespace only adds the short name of a service of its own
// namespace to the domains of its virtual host, beside the FQDN: no virtual host is won or lost
// by it, unless a host of the scope has no dot and could be such a short name. Such a scope's
// fingerprint names the namespace. It holds all that a scope's outbound listeners are built
// from too (ldsSummary), so scopes of one fingerprint share their listener counts.
func (sc *sidecarScope) routeFingerprint() string {
	// One buffer, hashed once: a scope of the default Sidecar imports every service of the mesh.
	var buf []byte
	w := func(parts ...string) {
		for _, p := range parts {
			buf = append(buf, p...)
			buf = append(buf, 0)
		}
	}
	num := func(n int) {
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, 0)
	}
	nsFree := true
	w(sc.outbound)
	for _, l := range sc.egress {
		port := l.cfg.GetPort()
		w("egress")
		num(int(port.GetNumber()))
		w(port.GetProtocol(), l.cfg.GetBind(), l.cfg.GetCaptureMode().String(),
			strconv.FormatBool(l.matchPort), strconv.FormatBool(l.allExact))
		for _, host := range l.cfg.GetHosts() {
			if rest, ok := strings.CutPrefix(host, "./"); ok {
				host = sc.ns + "/" + rest // the aliases a listener imports follow its hosts
			}
			w(host)
		}
		for _, s := range l.services {
			w("s")
			num(s.svc.pos)
			for _, p := range s.ports {
				num(p.num)
			}
			if !strings.Contains(s.svc.host, ".") {
				nsFree = false
			}
		}
		for _, e := range l.vss {
			w("vs", e.cfg.Namespace, e.cfg.Name, e.ns)
		}
	}
	if !nsFree {
		w("namespace", sc.ns)
	}
	sum := sha256.Sum256(buf)
	return string(sum[:])
}

// routeSignature is all that a scope's virtual hosts read of a proxy's labels and namespace
// (vsHasRoutes): whether they meet each sourceLabels and sourceNamespace of its VirtualServices'
// HTTP matches and their delegates', in order. Proxies of one signature get the same virtual
// hosts.
func (sc *sidecarScope) routeSignature(ix *index, proxy Proxy) string {
	var sig []byte
	add := func(ms []*networking.HTTPMatchRequest) {
		for _, m := range ms {
			if len(m.GetSourceLabels()) > 0 {
				sig = append(sig, '0'+b2i(istioconfig.LabelsSubset(m.GetSourceLabels(), proxy.Labels)))
			}
			if m.GetSourceNamespace() != "" {
				sig = append(sig, '0'+b2i(m.GetSourceNamespace() == proxy.Namespace))
			}
		}
	}
	for _, l := range sc.egress {
		for _, e := range l.vss {
			for _, h := range e.cfg.Spec.GetHttp() {
				add(h.GetMatch())
				if d := h.GetDelegate(); d != nil {
					if del := ix.delegate(d, e.ns); del != nil {
						for _, dh := range del.Spec.GetHttp() {
							add(dh.GetMatch())
						}
					}
				}
			}
		}
	}
	return string(sig)
}

func b2i(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Whether a virtual host has its service's addresses as domains (R60).
const (
	addrPlain = iota // they are its own
	addrNone         // an earlier virtual host took them
	addrMaybe        // another virtual host may have taken them: "<address|none>"
)

type rdsBuilder struct {
	ix        *index
	scope     *sidecarScope
	proxy     Proxy
	dnsDomain string
	// cache holds a port's virtual hosts for the sniffed routes on it.
	cache map[int][]VirtualHost
}

// route is buildSidecarOutboundHTTPRouteConfig: the virtual hosts of route name.
func (rb *rdsBuilder) route(name string) []VirtualHost {
	portPart, sniffed := name, false
	if i := strings.IndexByte(name, ':'); i >= 0 {
		portPart, sniffed = name[i+1:], true
	}
	port, err := strconv.Atoi(portPart)
	if err != nil {
		return nil // istiod answers an unknown name with an empty route
	}
	if sniffed {
		vhs, ok := rb.cache[port]
		if !ok {
			vhs = rb.virtualHosts(port)
			rb.cache[port] = vhs
		}
		// R61: only the service's own virtual host, matching every Host header.
		host := name[:strings.LastIndexByte(name, ':')]
		var out []VirtualHost
		for _, vh := range vhs {
			if slices.Contains(vh.Domains, name) || slices.Contains(vh.Domains, host) {
				out = append(out, vh)
			}
		}
		if len(out) == 1 {
			out[0].Domains = []string{"*"}
		}
		sortVirtualHosts(out)
		return out
	}
	out := rb.virtualHosts(port)
	rb.cache[port] = out
	out = slices.Clone(out)
	sortVirtualHosts(out)
	// R61: the catch-all virtual host of the outbound traffic policy.
	catchAll := vhostAllowAny
	switch rb.scope.outbound {
	case "REGISTRY_ONLY":
		catchAll = vhostBlockAll
	case "ALLOW_ANY_DYNAMIC_DNS":
		catchAll = vhostAllowAnyDynamicDNS
	}
	return append(out, VirtualHost{Name: catchAll, Domains: []string{"*"}})
}

func sortVirtualHosts(vhs []VirtualHost) {
	slices.SortStableFunc(vhs, func(a, b VirtualHost) int { return cmp.Compare(a.Name, b.Name) })
}

// rdsService is a service as a route on one port sees it (BuildSidecarOutboundVirtualHosts'
// servicesByName): the port's own, or every port for an HTTP_PROXY port.
type rdsService struct {
	host    string
	svc     *service
	ports   []svcPort
	aliases []string
	addrs   []string
}

// vhostWrapper is istio route.VirtualHostWrapper: the virtual hosts one VirtualService, or
// one service's default route, makes on a port.
type vhostWrapper struct {
	port     int
	services []*rdsService
	vsHosts  []string
	// vs is "namespace/name" of the VirtualService, "" for a default route.
	vs string
}

// virtualHosts is R59, BuildSidecarOutboundVirtualHosts: the virtual hosts of the routes on
// listener port port, from the egress listener GetEgressListenerForRDS picks.
func (rb *rdsBuilder) virtualHosts(port int) []VirtualHost {
	l := rb.egressForRDS(port)
	if l == nil {
		return nil
	}
	listenPort := port
	if l.cfg.GetPort() != nil && istioconfig.ParseProtocol(l.cfg.GetPort().GetProtocol()) == istioconfig.HTTPProxy {
		listenPort = 0 // an HTTP proxy port routes every port of every service
	}
	byName := map[string]*rdsService{}
	var order []string
	for _, s := range l.services {
		rs := &rdsService{host: s.svc.host, svc: s.svc}
		if listenPort == 0 {
			rs.ports = s.ports
		} else {
			// PortList.GetByPort: the first port with the number that is not UDP.
			i := slices.IndexFunc(s.ports, func(p svcPort) bool { return p.num == listenPort && p.proto != istioconfig.UDP })
			if i < 0 {
				continue
			}
			rs.host = strings.ToLower(rs.host)
			rs.ports = []svcPort{s.ports[i]}
		}
		rs.aliases = rb.aliases(l, s.svc)
		rs.addrs = rb.vhostAddresses(s.svc)
		if _, ok := byName[rs.host]; !ok {
			order = append(order, rs.host)
		}
		byName[rs.host] = rs
	}
	vss := l.vss
	if listenPort != 80 {
		vss = slices.DeleteFunc(slices.Clone(vss), func(e *vsEntry) bool { return !rb.vsSelected(e, byName) })
	}
	mostSpecific := rb.wildcardVSIndex(l)
	var wrappers []vhostWrapper
	wrapped := map[string]bool{}
	for _, e := range vss {
		if !rb.vsHasRoutes(e, listenPort) {
			continue
		}
		vsHosts, matching := separateVSHosts(e, byName, order, mostSpecific)
		byPort := map[int][]*rdsService{}
		for _, rs := range matching {
			for _, p := range rs.ports {
				if httpOrSniffed(p.proto) {
					byPort[p.num] = append(byPort[p.num], rs)
				}
			}
		}
		if len(byPort) == 0 && listenPort == 80 {
			byPort[80] = nil
		}
		ports := make([]int, 0, len(byPort))
		for p := range byPort {
			ports = append(ports, p)
		}
		sort.Ints(ports)
		for _, p := range ports {
			wrappers = append(wrappers, vhostWrapper{port: p, services: byPort[p], vsHosts: vsHosts, vs: e.cfg.Namespace + "/" + e.cfg.Name})
			for _, rs := range byPort[p] {
				wrapped[rs.host] = true
			}
		}
	}
	nVS := len(wrappers)
	for _, h := range order {
		rs := byName[h]
		if wrapped[h] || rs.svc.res == resAlias {
			continue
		}
		for _, p := range rs.ports {
			if httpOrSniffed(p.proto) {
				wrappers = append(wrappers, vhostWrapper{port: p.num, services: []*rdsService{rs}})
			}
		}
	}
	// R60: the hosts of one ServiceEntry share its addresses, and an address goes to the first
	// virtual host that has it. The first VirtualService's virtual host keeps it; istiod builds
	// the default virtual hosts in map order, so which of them keeps an address no
	// VirtualService took is arbitrary: each names it "<address|none>". A ServiceEntry with
	// several addresses gives each host one of them, also arbitrarily.
	sharedAddrs := map[string]map[string]bool{}
	for _, w := range wrappers {
		for _, rs := range w.services {
			if len(rs.addrs) > 0 {
				k := strings.Join(rs.addrs, ",")
				if sharedAddrs[k] == nil {
					sharedAddrs[k] = map[string]bool{}
				}
				sharedAddrs[k][rs.host] = true
			}
		}
	}
	claimed := map[string]string{}
	addrMode := func(rs *rdsService, isDefault bool) int {
		k := strings.Join(rs.addrs, ",")
		if len(sharedAddrs[k]) < 2 {
			return addrPlain
		}
		first, ok := claimed[k]
		switch {
		case !ok && !isDefault:
			claimed[k] = rs.host
			return addrPlain
		case ok && first != rs.host && !strings.HasPrefix(rs.addrs[0], "<"):
			return addrNone
		}
		return addrMaybe
	}
	knownFQDN := map[string]bool{}
	for _, w := range wrappers {
		for _, rs := range w.services {
			knownFQDN[net.JoinHostPort(rs.host, strconv.Itoa(w.port))] = true
			knownFQDN[rs.host] = true
		}
	}
	names := map[string]bool{}
	seenDomains := map[string]bool{}
	byPort := map[int][]VirtualHost{}
	build := func(w vhostWrapper, host string, rs *rdsService, isDefault bool) {
		name := net.JoinHostPort(host, strconv.Itoa(w.port))
		if names[name] {
			return
		}
		names[name] = true
		var domains, alt []string
		if rs == nil {
			domains = []string{host}
		} else {
			domains, alt = rb.domains(rs, listenPort, w.port, addrMode(rs, isDefault))
		}
		kept := domains[:0]
		for _, d := range domains {
			if alts, ok := strings.CutSuffix(d, "|none>"); ok {
				taken := slices.ContainsFunc(strings.Split(strings.TrimPrefix(alts, "<"), "|"), func(a string) bool {
					return seenDomains[a]
				})
				if !taken {
					kept = append(kept, d)
				}
				continue
			}
			if seenDomains[strings.ToLower(d)] || (slices.Contains(alt, d) && knownFQDN[d]) {
				continue
			}
			kept = append(kept, d)
			seenDomains[strings.ToLower(d)] = true
		}
		if len(kept) == 0 {
			return
		}
		vh := VirtualHost{Name: name, Domains: kept, VirtualService: w.vs}
		if rs != nil {
			vh.Service = rs.svc.host
		}
		byPort[w.port] = append(byPort[w.port], vh)
	}
	for i, w := range wrappers {
		for _, h := range w.vsHosts {
			build(w, strings.ToLower(h), nil, false)
		}
		for _, rs := range w.services {
			build(w, rs.host, rs, i >= nVS)
		}
	}
	if listenPort != 0 {
		return byPort[listenPort]
	}
	// mergeAllVirtualHosts: off port 80, only the domains that name a port.
	var out []VirtualHost
	for p, vhs := range byPort {
		if p == 80 {
			out = append(out, vhs...)
			continue
		}
		for _, vh := range vhs {
			vh.Domains = slices.DeleteFunc(vh.Domains, func(d string) bool { return !strings.Contains(d, ":") })
			if len(vh.Domains) > 0 {
				out = append(out, vh)
			}
		}
	}
	return out
}

// egressForRDS is GetEgressListenerForRDS: the first egress listener on the port, else the
// catch-all.
func (rb *rdsBuilder) egressForRDS(port int) *listener {
	for _, l := range rb.scope.egress {
		if l.cfg.GetPort() == nil || int(l.cfg.GetPort().GetNumber()) == port {
			return l
		}
	}
	return nil
}

func httpOrSniffed(proto string) bool {
	return listenerProtocol(proto) == ListenerHTTP || proto == istioconfig.Unsupported
}

// vsSelected is selectVirtualServices: off port 80, a VirtualService counts only when one of its
// hosts names a service on the port.
func (rb *rdsBuilder) vsSelected(e *vsEntry, byName map[string]*rdsService) bool {
	for _, h := range e.hosts {
		h = strings.ToLower(h)
		if byName[h] != nil {
			return true
		}
		for sh := range byName {
			if (istioconfig.IsWildcard(h) || istioconfig.IsWildcard(sh)) && istioconfig.HostsOverlap(h, sh) {
				return true
			}
		}
	}
	return false
}

// wildcardVSIndex is computeWildcardHostVirtualServiceIndex: for each service host of the
// egress listener, the VirtualService with the most specific host that matches it.
func (rb *rdsBuilder) wildcardVSIndex(l *listener) map[string]*vsEntry {
	exact, wild := map[string]*vsEntry{}, map[string]*vsEntry{}
	for _, e := range l.vss {
		for _, h := range e.hosts {
			m := exact
			if istioconfig.IsWildcard(h) {
				m = wild
			}
			if _, ok := m[h]; !ok {
				m[h] = e
			}
		}
	}
	out := map[string]*vsEntry{}
	for _, s := range l.services {
		if e, ok := istioconfig.MostSpecificHostMatch(s.svc.host, exact, wild); ok {
			out[s.svc.host] = e
		}
	}
	return out
}

// separateVSHosts is separateVSHostsAndServices: a VirtualService's hosts that name services on
// the port, and those that name none.
func separateVSHosts(e *vsEntry, byName map[string]*rdsService, order []string, mostSpecific map[string]*vsEntry) ([]string, []*rdsService) {
	var hosts []string
	var matching []*rdsService
	var wild []string
	for _, h := range e.hosts {
		lh := strings.ToLower(h)
		if istioconfig.IsWildcard(lh) {
			wild = append(wild, lh)
			continue
		}
		if rs := byName[lh]; rs != nil {
			matching = append(matching, rs)
		} else {
			hosts = append(hosts, h)
		}
	}
	for _, h := range wild {
		found := false
		for _, sh := range order {
			if !istioconfig.HostsOverlap(sh, h) {
				continue
			}
			found = true
			if mostSpecific[byName[sh].svc.host] != e {
				continue
			}
			matching = append(matching, byName[sh])
		}
		if !found {
			hosts = append(hosts, h)
		}
	}
	return hosts, matching
}

// vsHasRoutes is BuildHTTPRoutesForVirtualService giving at least one route for the proxy on
// the port: an HTTP route without match, or with a match whose port, source labels, source
// namespace and gateways let the proxy in. A delegate's routes count with the root's match.
func (rb *rdsBuilder) vsHasRoutes(e *vsEntry, listenPort int) bool {
	ok := func(m *networking.HTTPMatchRequest) bool {
		if m.GetPort() != 0 && int(m.GetPort()) != listenPort {
			return false
		}
		if len(m.GetGateways()) > 0 {
			return slices.Contains(m.GetGateways(), "mesh")
		}
		return istioconfig.LabelsSubset(m.GetSourceLabels(), rb.proxy.Labels) &&
			(m.GetSourceNamespace() == "" || m.GetSourceNamespace() == rb.proxy.Namespace)
	}
	anyOK := func(ms []*networking.HTTPMatchRequest) bool {
		return len(ms) == 0 || slices.ContainsFunc(ms, ok)
	}
	for _, h := range e.cfg.Spec.GetHttp() {
		if d := h.GetDelegate(); d != nil {
			del := rb.ix.delegate(d, e.ns)
			if del == nil || !anyOK(h.GetMatch()) {
				continue
			}
			for _, dh := range del.Spec.GetHttp() {
				if anyOK(dh.GetMatch()) {
					return true
				}
			}
			continue
		}
		if anyOK(h.GetMatch()) {
			return true
		}
	}
	return false
}

// aliases are R60: the hosts of the ExternalName aliases of the service that the egress
// listener imports (resolveServiceAliases, matchingAliasService).
func (rb *rdsBuilder) aliases(l *listener, s *service) []string {
	all := rb.ix.aliasIndex()[s.host]
	if len(all) == 0 {
		return nil
	}
	hc := l.hosts[s.ns]
	if hc == nil || !hc.matches(s.host) {
		hc = l.hosts["*"]
	}
	var out []string
	for _, a := range all {
		if hc != nil && hc.matches(a.host) {
			out = append(out, a.host)
		}
	}
	return out
}

type aliasRef struct{ ns, host string }

type aliasCache struct {
	once sync.Once
	m    map[string][]aliasRef
}

// aliasIndex maps a concrete host to its aliases, sorted by namespace and host, each alias
// followed through other aliases to the host it ends at (a loop ends nowhere).
func (ix *index) aliasIndex() map[string][]aliasRef {
	ix.aliases.once.Do(func() {
		raw := map[string]string{}
		var refs []aliasRef
		for _, s := range ix.services {
			if s.res == resAlias {
				refs = append(refs, aliasRef{ns: s.ns, host: s.host})
				raw[s.host] = s.aliasFor
			}
		}
		out := map[string][]aliasRef{}
		for _, a := range refs {
			target := raw[a.host]
			seen := map[string]bool{a.host: true, target: true}
			loop := false
			for {
				next, ok := raw[target]
				if !ok {
					break
				}
				if seen[next] {
					loop = true
					break
				}
				seen[next] = true
				target = next
			}
			if !loop {
				out[target] = append(out[target], a)
			}
		}
		for _, v := range out {
			slices.SortFunc(v, func(a, b aliasRef) int {
				return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.host, b.host))
			})
		}
		ix.aliases.m = out
	})
	return ix.aliases.m
}

// vhostAddresses are the service's addresses a virtual host matches (GetAllAddressesForProxy):
// its own, several of a ServiceEntry named as the one istiod keeps for the host.
func (rb *rdsBuilder) vhostAddresses(s *service) []string {
	as := ownAddresses(s, true)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.addr
	}
	return out
}

// domains is R60, generateVirtualHostDomains: the Host headers of a service's virtual host,
// and which of them expand a host. mode says whether the addresses are the host's (see
// virtualHosts).
func (rb *rdsBuilder) domains(rs *rdsService, listenPort, port int, mode int) (domains, alt []string) {
	if listenPort != 0 {
		port = 0 // sidecars ignore the port in host matching
	}
	withPort := func(out []string, d string) []string {
		if port == 0 {
			return append(out, d)
		}
		return append(out, d, net.JoinHostPort(d, strconv.Itoa(port)))
	}
	for _, h := range append([]string{rs.svc.host}, rs.aliases...) {
		a := rb.altHosts(h, port)
		domains = withPort(domains, h)
		domains = append(domains, a...)
		alt = append(alt, a...)
	}
	if rs.svc.res == resPassthrough && rs.svc.k8s {
		for _, d := range domains {
			domains = append(domains, "*."+d)
		}
	}
	for _, a := range rs.addrs {
		if a == "" || a == wildcardIPv4 {
			continue
		}
		switch mode {
		case addrNone:
			continue
		case addrMaybe:
			a = "<" + strings.TrimSuffix(strings.TrimPrefix(a, "<"), ">") + "|none>"
		}
		domains = withPort(domains, a)
	}
	return domains, alt
}

// altHosts is GenerateAltVirtualHosts for a sidecar, whose DNS domain is "<ns>.svc.<suffix>":
// the absolute FQDN, and a Kubernetes host's short forms.
func (rb *rdsBuilder) altHosts(h string, port int) []string {
	var out []string
	if net.ParseIP(h) == nil {
		out = append(out, h+".")
	}
	ps := ""
	if port != 0 {
		ps = ":" + strconv.Itoa(port)
		out = append(out, h+"."+ps)
	}
	svcSuffix := rb.dnsDomain[strings.Index(rb.dnsDomain, ".svc."):]
	if !strings.HasSuffix(h, svcSuffix) {
		return out
	}
	ih := strings.Index(h, ".svc.")
	if ih <= 0 {
		return out
	}
	ns := strings.IndexByte(h, '.')
	if ns+1 >= len(h) || ns+1 > ih {
		return out
	}
	both := func(d string) []string {
		if ps == "" {
			return []string{d}
		}
		return []string{d, d + ps}
	}
	if h[ns+1:ih] == rb.proxy.Namespace {
		if ps == "" {
			return append(out, h[:ns], h[:ih]+".svc", h[:ih])
		}
		out = append(out, both(h[:ns])...)
		out = append(out, both(h[:ih]+".svc")...)
		return append(out, both(h[:ih])...)
	}
	out = append(out, both(h[:ih])...)
	return append(out, both(h[:ih]+".svc")...)
}
