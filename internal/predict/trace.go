package predict

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// Following a call through a proxy's listeners and routes to its service (R62): the path an
// application's connection to a service port takes in the Envoy configuration istiod pushes.

// Call is a call from a proxy to one service port, followed.
type Call struct {
	Host string `json:"host"`
	Port int    `json:"port"`
	// Listener is the listener the connection lands on, "" when none takes it.
	Listener string `json:"listener,omitempty"`
	// Route and VirtualHost are the route configuration and its virtual host an HTTP call
	// follows, "" for TCP.
	Route       string `json:"route,omitempty"`
	VirtualHost string `json:"virtual_host,omitempty"`
	// VirtualService is "namespace/name" of the VirtualService whose routes the call follows;
	// its destinations decide the cluster.
	VirtualService string `json:"virtual_service,omitempty"`
	// Cluster is the cluster the call goes to: the service port's outbound cluster,
	// PassthroughCluster or BlackHoleCluster; "" when a VirtualService decides.
	Cluster string `json:"cluster,omitempty"`
	// Reached is set when the call reaches the service through the mesh's configuration for it.
	Reached bool `json:"reached"`
	// Step is the step at which a call that is not reached goes astray (Step* constants), and
	// Why says how.
	Step string `json:"step,omitempty"`
	Why  string `json:"why,omitempty"`
	// Name is, for a call astray at StepVirtualHost, the name the application may use that the
	// route does not send to the service.
	Name string `json:"name,omitempty"`
	// Index is the position in Trace's calls of the call this one follows.
	Index int `json:"-"`
}

// The steps of a call's path where it can go astray.
const (
	// StepImport: the proxy imports no service of the host, or no port of the number.
	StepImport = "import"
	// StepListener: no listener takes the port, so the call leaves through virtualOutbound.
	StepListener = "listener"
	// StepFilterChain: another service's TCP filter chain takes every connection on the listener.
	StepFilterChain = "filter chain"
	// StepHTTPRoutes: an HTTP port's call lands on a listener without HTTP routes for it.
	StepHTTPRoutes = "http routes"
	// StepVirtualHost: the route has no virtual host for a name the application may call the
	// service by, or gives it to another service.
	StepVirtualHost = "virtual host"
)

// HostPort names a call: a service host and a port; port 0 stands for every port of the host.
type HostPort struct {
	Host string
	Port int
}

// Trace follows calls from the proxy (R62). A call of port 0 is followed on every non-UDP port
// of its host. The listeners are predicted once, and only the routes the calls need.
func (p *Predictor) Trace(proxy Proxy, calls []HostPort) []Call {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.Trace(proxy, calls)
	}
	if len(calls) == 0 {
		return nil // no listeners to build
	}
	ix := p.ix
	scope := p.scope(ix.sidecarFor(proxy), proxy.Namespace)
	t := &tracer{
		p: p, scope: scope, listeners: map[string]*Listener{}, routes: map[string][]VirtualHost{},
		rb: &rdsBuilder{ix: ix, scope: scope, proxy: proxy, dnsDomain: proxy.Namespace + ".svc." + ix.domain, cache: map[int][]VirtualHost{}},
	}
	t.interceptNone = ix.nodeOf(proxy).interceptNone
	ls := p.Listeners(proxy)
	for i := range ls {
		if _, dup := t.listeners[ls[i].Name]; !dup {
			t.names = append(t.names, ls[i].Name) // sorted, as Listeners returns them
		}
		t.listeners[ls[i].Name] = &ls[i]
	}
	var out []Call
	for idx, c := range calls {
		l, s := scope.importing(c.Host, c.Port)
		if s != nil && s.svc.res == resAlias {
			continue // an alias has no listener of its own: the call follows the host it names
		}
		if s == nil {
			out = append(out, t.astray(Call{Host: c.Host, Port: c.Port, Index: idx}, false, StepImport, "the proxy imports no service "+c.Host))
			continue
		}
		ports := s.ports
		if c.Port != 0 {
			i := slices.IndexFunc(ports, func(sp svcPort) bool { return sp.num == c.Port && sp.proto != istioconfig.UDP })
			if i < 0 {
				out = append(out, t.astray(Call{Host: c.Host, Port: c.Port, Index: idx}, false, StepImport, fmt.Sprintf("the proxy imports no port %d of %s", c.Port, c.Host)))
				continue
			}
			ports = ports[i : i+1]
		}
		for _, sp := range ports {
			if sp.proto == istioconfig.UDP {
				continue
			}
			c := t.follow(l, s, sp)
			c.Index = idx
			out = append(out, c)
		}
	}
	return out
}

type tracer struct {
	p         *Predictor
	scope     *sidecarScope
	listeners map[string]*Listener
	names     []string // of listeners, sorted
	// interceptNone is set for a proxy that captures no traffic: it has no virtualOutbound.
	interceptNone bool
	routes        map[string][]VirtualHost
	rb            *rdsBuilder
}

// importing finds the egress listener and the service of host the scope imports: the first
// that has port (a non-UDP port with the number; any port for 0), else the first at all.
func (sc *sidecarScope) importing(host string, port int) (*listener, *scoped) {
	var fl *listener
	var fs *scoped
	for _, l := range sc.egress {
		for _, s := range l.services {
			if s.svc.host != host {
				continue
			}
			if port == 0 || slices.ContainsFunc(s.ports, func(sp svcPort) bool { return sp.num == port && sp.proto != istioconfig.UDP }) {
				return l, s
			}
			if fs == nil {
				fl, fs = l, s
			}
		}
	}
	return fl, fs
}

// astray is a call that leaves through virtualOutbound's catch-all chains (buildOutboundCatchAllNetworkFilterChains):
// PassthroughCluster under ALLOW_ANY, BlackHoleCluster under REGISTRY_ONLY and for
// virtualOutbound's own port; under ALLOW_ANY_DYNAMIC_DNS a plaintext HTTP call goes to
// AllowAnyDynamicDNSCluster through its catch-all virtual host.
func (t *tracer) astray(c Call, http bool, step, why string) Call {
	c.Step = step
	c.Cluster = t.fallthroughCluster()
	switch {
	case c.Port == 15001:
		c.Cluster = "BlackHoleCluster" // a loop
	case http && t.scope.outbound == "ALLOW_ANY_DYNAMIC_DNS":
		c.VirtualHost, c.Cluster = vhostAllowAnyDynamicDNS, "AllowAnyDynamicDNSCluster"
	}
	if c.Listener == "" && !t.interceptNone {
		c.Listener = virtualOutbound
	}
	c.Why = why + "; the call goes to " + c.Cluster
	return c
}

// fallthroughCluster is where a listener's default filter chain sends a connection no chain
// matches (buildOutboundCatchAllNetworkFiltersOnly).
func (t *tracer) fallthroughCluster() string {
	if t.scope.outbound == "REGISTRY_ONLY" {
		return "BlackHoleCluster"
	}
	return "PassthroughCluster"
}

// follow is R62 for one service port: the listener its address lands on, then its route and
// virtual host for HTTP, or the listener's TCP chain.
func (t *tracer) follow(l *listener, s *scoped, sp svcPort) Call {
	c := Call{Host: s.svc.host, Port: sp.num}
	port := strconv.Itoa(sp.num)
	// The address the application connects to: the service's own listener, else the wildcard.
	b := ldsBuilder{ix: t.p.ix}
	var lst *Listener
	if !s.svc.passthroughAddress() {
		for _, a := range b.addresses(l, s.svc) {
			if x := t.listeners[a.addr+"_"+port]; x != nil && !strings.Contains(a.addr, "/") {
				lst = x
				break
			}
		}
	} else {
		// A headless Service or a ServiceEntry without addresses: the resolved address is an
		// endpoint's, which has its own listener or falls to the wildcard one.
		for _, name := range t.names {
			if x := t.listeners[name]; x.Port == sp.num && x.Direction == Outbound && x.Name != wildcardIPv4+"_"+port && slices.Contains(x.Services, c.Host) {
				lst = x
				break
			}
		}
	}
	if lst == nil {
		lst = t.listeners[wildcardIPv4+"_"+port]
	}
	if lst == nil {
		// An egress bind, or a proxy that captures nothing: the application calls the listener's
		// own address (localhost) for the service.
		for _, name := range t.names {
			if x := t.listeners[name]; x.Port == sp.num && x.Direction == Outbound && slices.Contains(x.Services, c.Host) {
				lst = x
				break
			}
		}
	}
	if lst == nil {
		return t.astray(c, httpOrSniffed(sp.proto), StepListener, fmt.Sprintf("no listener takes port %d", sp.num))
	}
	c.Listener = lst.Name
	// The address dialled: the listener's own, or on the wildcard listener the service's.
	dial := lst.Address
	if dial == wildcardIPv4 {
		dial = ""
		if as := ownAddresses(s.svc, false); len(as) > 0 {
			dial = as[0].addr
		}
	}
	if !httpOrSniffed(sp.proto) {
		return t.tcp(c, lst, sp, dial)
	}
	ch := t.chain(lst, sp, c.Host, dial, true)
	switch {
	case ch == nil || ch.rds == "":
		// No HTTP chain takes the call: its bytes go through a TCP chain, if any.
		c = t.tcpChain(c, lst, sp, ch)
		if c.Reached && sp.proto != istioconfig.Unsupported {
			c.Reached, c.Step = false, StepHTTPRoutes
			c.Why = fmt.Sprintf("listener %s has no HTTP route for port %d, only a TCP chain: the call reaches %s as TCP, "+
				"so its HTTP routing (VirtualServices, retries, per-request balancing) is lost", lst.Name, sp.num, c.Cluster)
		}
		return c
	}
	route := ch.rds
	c.Route = route
	vhs, ok := t.routes[route]
	if !ok {
		vhs = t.rb.route(route)
		t.routes[route] = vhs
	}
	if strings.Contains(route, ":") {
		// R61: a sniffed service's own route holds its virtual host alone, matching every name.
		switch {
		case len(vhs) != 1:
			c.Step = StepVirtualHost
			c.Why = fmt.Sprintf("route %s has no virtual host (the egress listener of port %d does not import its service), "+
				"so Envoy answers an HTTP call with 404", route, sp.num)
		case vhs[0].Service == c.Host:
			return t.reach(c, vhs[0], sp)
		default:
			c.VirtualHost, c.VirtualService, c.Step = vhs[0].Name, vhs[0].VirtualService, StepVirtualHost
			if vhs[0].VirtualService == "" {
				c.Cluster = outboundName(sp.num, "", vhs[0].Service)
			}
			c.Why = fmt.Sprintf("listener %s sends HTTP to route %s, whose one virtual host, %s's, matches every name", lst.Name, route, vhs[0].Service)
		}
		return c
	}
	// Envoy picks the virtual host one of whose domains is the Host header exactly, else the
	// catch-all. The application may call the service by any name DNS resolves for it.
	var reached *VirtualHost
	for _, name := range t.callNames(s.svc) {
		i := slices.IndexFunc(vhs, func(vh VirtualHost) bool { return slices.Contains(vh.Domains, name) })
		if i < 0 {
			c.Name = name
			return catchAll(c, vhs, fmt.Sprintf("route %s has no virtual host for the name %s, so a call by that name matches its catch-all", route, name))
		}
		vh := vhs[i]
		if vh.Service != "" && vh.Service != c.Host {
			c.Name, c.Step, c.VirtualHost = name, StepVirtualHost, vh.Name
			c.Why = fmt.Sprintf("route %s sends the name %s to virtual host %s, which is %s's", route, name, vh.Name, vh.Service)
			return c
		}
		if name == c.Host {
			reached = &vhs[i]
		}
	}
	if reached == nil {
		c.Name = c.Host
		return catchAll(c, vhs, fmt.Sprintf("route %s has no virtual host for %s, so the call matches its catch-all", route, c.Host))
	}
	return t.reach(c, *reached, sp)
}

// catchAll is an HTTP call that no virtual host of its route names: the catch-all virtual host
// (R61) sends it out of the mesh, or answers it.
func catchAll(c Call, vhs []VirtualHost, why string) Call {
	c.Step = StepVirtualHost
	c.Cluster = "PassthroughCluster"
	if n := len(vhs); n > 0 && slices.Equal(vhs[n-1].Domains, []string{"*"}) {
		c.VirtualHost = vhs[n-1].Name
		switch c.VirtualHost {
		case vhostBlockAll:
			c.Cluster = "BlackHoleCluster" // a direct 502
		case vhostAllowAnyDynamicDNS:
			c.Cluster = "AllowAnyDynamicDNSCluster"
		}
	}
	c.Why = why + "; the call goes to " + c.Cluster
	return c
}

// reach is a call that reaches its service through virtual host vh.
func (t *tracer) reach(c Call, vh VirtualHost, sp svcPort) Call {
	c.VirtualHost, c.VirtualService, c.Reached = vh.Name, vh.VirtualService, true
	if vh.VirtualService == "" {
		c.Cluster = sp.cluster
		// Through an HTTP_PROXY port, which routes every port, a Host without a port names
		// port 80's virtual host, or another port's where the service has no port 80.
		if i := strings.LastIndexByte(vh.Name, ':'); i > 0 && vh.Name[i+1:] != strconv.Itoa(sp.num) {
			if n, err := strconv.Atoi(vh.Name[i+1:]); err == nil {
				c.Cluster = outboundName(n, "", vh.Service)
			}
		}
	}
	return c
}

// callNames are the names an application in the proxy's namespace can call a service by: a
// ServiceEntry's host; a Kubernetes Service's FQDN, and the shorter names the cluster's DNS
// search path resolves (name.namespace.svc, name.namespace, and name in its own namespace).
// The FQDN comes first.
func (t *tracer) callNames(svc *service) []string {
	out := []string{svc.host}
	if !svc.k8s {
		return out
	}
	suffix := "." + svc.ns + ".svc." + t.p.ix.domain
	name, ok := strings.CutSuffix(svc.host, suffix)
	if !ok {
		return out
	}
	out = append(out, name+"."+svc.ns+".svc", name+"."+svc.ns)
	if svc.ns == t.rb.proxy.Namespace {
		out = append(out, name)
	}
	return out
}

// tcp follows a TCP call through a listener's filter chains (R58, R62).
func (t *tracer) tcp(c Call, lst *Listener, sp svcPort, dial string) Call {
	return t.tcpChain(c, lst, sp, t.chain(lst, sp, c.Host, dial, false))
}

// chain is the filter chain of a listener that Envoy picks for a call: a chain whose CIDR holds
// the dialled address beats one without; then, for TLS, one whose SNI is the host; then, for
// plaintext HTTP, one that matches its ALPN; of the best, the first. nil when none matches.
func (t *tracer) chain(lst *Listener, sp svcPort, host, dial string, http bool) *ldsChain {
	tls := sp.proto == istioconfig.HTTPS || sp.proto == istioconfig.TLS
	var best *ldsChain
	bestScore := [3]int{-1, -1, -1}
	for i := range lst.chains {
		ch := &lst.chains[i]
		score := [3]int{}
		if ch.alpn {
			if !http || tls {
				continue // matches the plaintext HTTP ALPNs, which this call has not
			}
			score[2] = 1
		}
		for _, part := range strings.Split(ch.match, ";") {
			kind, v, _ := strings.Cut(part, ":")
			switch kind {
			case "cidr":
				score[0] = cidrScore(v, dial)
			case "sni", "tls":
				score[1] = -1
				if tls && v == host {
					score[1] = 1
				}
			}
		}
		if score[0] < 0 || score[1] < 0 {
			continue
		}
		if best == nil || slices.Compare(score[:], bestScore[:]) > 0 {
			best, bestScore = ch, score
		}
	}
	return best
}

// tcpChain is a call through filter chain ch of the listener: a TCP chain proxies to its
// service's cluster; an HTTP chain parses the bytes as HTTP; none closes the connection.
func (t *tracer) tcpChain(c Call, lst *Listener, sp svcPort, ch *ldsChain) Call {
	switch {
	case ch == nil:
		c.Cluster, c.Step = t.fallthroughCluster(), StepFilterChain
		c.Why = fmt.Sprintf("no filter chain of listener %s matches the call, so its default chain sends it to %s", lst.Name, c.Cluster)
	case ch.rds != "":
		c.Route, c.Step = ch.rds, StepFilterChain
		c.Why = fmt.Sprintf("listener %s has only an HTTP chain for the call (route %s), which parses its bytes as HTTP", lst.Name, ch.rds)
	case ch.host == c.Host && ch.vs != "":
		c.VirtualService, c.Reached = ch.vs, true // its TCP or TLS route decides the cluster
	case ch.host == c.Host:
		c.Cluster, c.Reached = sp.cluster, true
	case ch.vs != "":
		c.VirtualService, c.Step = ch.vs, StepFilterChain
		c.Why = fmt.Sprintf("listener %s sends TCP to the routes of VirtualService %s for %s, whose filter chain matches every connection on it", lst.Name, ch.vs, ch.host)
	default:
		c.Cluster, c.Step = outboundName(sp.num, "", ch.host), StepFilterChain
		c.Why = fmt.Sprintf("listener %s sends TCP to %s, whose filter chain matches every connection on it", lst.Name, ch.host)
	}
	return c
}

// cidrScore is how well a chain's CIDR matches the dialled address: 1 plus its prefix length
// when it holds it (the longest wins), -1 when it does not.
func cidrScore(cidr, dial string) int {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return -1
	}
	if dial == cidr {
		return 1 + pfx.Bits()
	}
	if a, err := netip.ParseAddr(dial); err == nil && pfx.Contains(a) {
		return 1 + pfx.Bits()
	}
	return -1
}

// SidecarCalls are the calls the Sidecar in effect for the proxy names one by one (R62): each
// exact host of its egress listeners that the proxy imports, on the listener's port (0, every
// port, for a listener without one). The default scope names none.
func (p *Predictor) SidecarCalls(proxy Proxy) []HostPort {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.SidecarCalls(proxy)
	}
	sc := p.ix.sidecarFor(proxy)
	if sc == nil {
		return nil
	}
	scope := p.scope(sc, proxy.Namespace)
	var out []HostPort
	seen := map[HostPort]bool{}
	for _, l := range scope.egress {
		port := int(l.cfg.GetPort().GetNumber())
		if port != 0 && istioconfig.ParseProtocol(l.cfg.GetPort().GetProtocol()) == istioconfig.HTTPProxy {
			continue // calls go through the explicit proxy, not to the host's address
		}
		for _, h := range l.cfg.GetHosts() {
			_, host, ok := strings.Cut(h, "/")
			if !ok || host == "*" || istioconfig.IsWildcard(host) || strings.HasPrefix(h, "~") {
				continue
			}
			// Only a service the listener imports (on a port's listener, one with the port) is
			// called; an alias is called through the host it names, imported with it.
			i := slices.IndexFunc(l.services, func(s *scoped) bool { return s.svc.host == host })
			if i < 0 || l.services[i].svc.res == resAlias || !slices.ContainsFunc(l.services[i].ports, func(sp svcPort) bool {
				return sp.proto != istioconfig.UDP && (port == 0 || sp.num == port)
			}) {
				continue
			}
			if hp := (HostPort{Host: host, Port: port}); !seen[hp] {
				seen[hp] = true
				out = append(out, hp)
			}
		}
	}
	return out
}
