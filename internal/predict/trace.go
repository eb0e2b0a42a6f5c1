package predict

import (
	"fmt"
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
	// Why says how a call that is not reached goes astray.
	Why string `json:"why,omitempty"`
	// Index is the position in Trace's calls of the call this one follows.
	Index int `json:"-"`
}

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
			out = append(out, t.astray(Call{Host: c.Host, Port: c.Port, Index: idx}, "the proxy imports no service "+c.Host))
			continue
		}
		ports := s.ports
		if c.Port != 0 {
			i := slices.IndexFunc(ports, func(sp svcPort) bool { return sp.num == c.Port && sp.proto != istioconfig.UDP })
			if i < 0 {
				out = append(out, t.astray(Call{Host: c.Host, Port: c.Port, Index: idx}, fmt.Sprintf("the proxy imports no port %d of %s", c.Port, c.Host)))
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
	routes    map[string][]VirtualHost
	rb        *rdsBuilder
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

// astray is a call that leaves through virtualOutbound's fallback: PassthroughCluster under
// ALLOW_ANY, BlackHoleCluster under REGISTRY_ONLY.
func (t *tracer) astray(c Call, why string) Call {
	c.Cluster = "PassthroughCluster"
	if t.scope.outbound == "REGISTRY_ONLY" {
		c.Cluster = "BlackHoleCluster"
	}
	c.Why = why + "; the call goes to " + c.Cluster
	return c
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
		return t.astray(c, fmt.Sprintf("no listener takes port %d", sp.num))
	}
	c.Listener = lst.Name
	if !httpOrSniffed(sp.proto) {
		return t.tcp(c, lst, s.svc, sp)
	}
	own := c.Host + ":" + port
	route := ""
	switch {
	case slices.Contains(lst.Routes, own):
		route = own
	case slices.Contains(lst.Routes, port):
		route = port
	default:
		// No HTTP chain: the bytes go through the listener's TCP chain, without HTTP routing.
		return t.tcp(c, lst, s.svc, sp)
	}
	c.Route = route
	vhs, ok := t.routes[route]
	if !ok {
		vhs = t.rb.route(route)
		t.routes[route] = vhs
	}
	for _, vh := range vhs {
		if (route == own && len(vhs) == 1) || slices.Contains(vh.Domains, c.Host) {
			c.VirtualHost, c.VirtualService, c.Reached = vh.Name, vh.VirtualService, true
			if vh.VirtualService == "" {
				c.Cluster = sp.cluster
			}
			return c
		}
	}
	if route == own {
		// A sniffed service's own route has no catch-all: Envoy finds no route for an HTTP call.
		c.Why = fmt.Sprintf("route %s has no virtual host for %s (the egress listener of port %d does not import it), "+
			"so Envoy answers an HTTP call with 404; other protocols pass through the listener's TCP chain", route, c.Host, sp.num)
		return c
	}
	return t.astray(c, fmt.Sprintf("route %s has no virtual host for %s, so the call matches its catch-all", route, c.Host))
}

// tcp follows a call on a listener's TCP filter chains: a listener keyed by the service's own
// address, or a CIDR or SNI match, is the service's; on a shared key the first service's
// match-all chain takes every connection (R58).
func (t *tracer) tcp(c Call, lst *Listener, svc *service, sp svcPort) Call {
	ownMatch := sp.proto == istioconfig.HTTPS || sp.proto == istioconfig.TLS ||
		slices.ContainsFunc(svc.addrs, func(a string) bool { return strings.Contains(a, "/") })
	if len(lst.Services) > 0 && (lst.Services[0] == c.Host || ownMatch) && slices.Contains(lst.Services, c.Host) {
		c.Cluster, c.Reached = sp.cluster, true
		return c
	}
	if len(lst.Services) > 0 {
		c.Cluster = outboundName(sp.num, "", lst.Services[0])
		c.Why = fmt.Sprintf("listener %s sends TCP to %s, whose filter chain matches every connection on it", lst.Name, lst.Services[0])
		return c
	}
	return t.astray(c, fmt.Sprintf("listener %s holds no filter chain for %s", lst.Name, c.Host))
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
