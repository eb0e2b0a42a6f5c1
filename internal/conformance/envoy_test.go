package conformance

import (
	"net/netip"
	"slices"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxy "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
)

// An Envoy that follows a connection through the listeners and routes istiod generated, as a
// sidecar does: the conformance module's reference for meshscope's trace (R62).

// envoyConn is an application's connection as the sidecar sees it: its original destination,
// and what the listener filters find in its first bytes (TLS and its SNI, or plaintext HTTP and
// its Host header).
type envoyConn struct {
	addr string
	port int
	http bool
	host string // the Host header of an HTTP request
	tls  bool
	sni  string
}

// envoyPath is where Envoy sends a connection: the listener, the route configuration and
// virtual host of an HTTP request, and the cluster (PassthroughCluster and BlackHoleCluster as
// such, a direct response as BlackHoleCluster, weighted clusters joined by "+").
type envoyPath struct {
	Listener, Route, VirtualHost, Cluster string
}

type envoyConfig struct {
	listeners []*listener.Listener
	routes    map[string]*route.RouteConfiguration
}

func newEnvoyConfig(ls []*listener.Listener, rcs []*route.RouteConfiguration) *envoyConfig {
	c := &envoyConfig{listeners: ls, routes: map[string]*route.RouteConfiguration{}}
	for _, rc := range rcs {
		if _, ok := c.routes[rc.GetName()]; !ok {
			c.routes[rc.GetName()] = rc
		}
	}
	return c
}

// follow is the path of conn: virtualOutbound hands the connection to the listener bound to its
// original destination address and port, else to the one on 0.0.0.0 and its port, else keeps
// it; the listener picks a filter chain as Envoy's filter chain matching does, and the chain's
// HTTP connection manager or TCP proxy picks the cluster.
func (c *envoyConfig) follow(conn envoyConn) envoyPath {
	var exact, wild, virtual *listener.Listener
	for _, l := range c.listeners {
		sa := l.GetAddress().GetSocketAddress()
		switch {
		case l.GetName() == "virtualOutbound":
			virtual = l
		case int(sa.GetPortValue()) != conn.port || l.GetTrafficDirection() == core.TrafficDirection_INBOUND:
		case sa.GetAddress() == conn.addr && exact == nil:
			exact = l
		case sa.GetAddress() == "0.0.0.0" && wild == nil:
			wild = l
		}
	}
	l := cmpOr(exact, wild, virtual)
	if l == nil {
		return envoyPath{Cluster: "no listener"}
	}
	p := envoyPath{Listener: l.GetName()}
	fc := matchFilterChain(l, conn)
	if fc == nil {
		fc = l.GetDefaultFilterChain()
	}
	if fc == nil {
		p.Cluster = "no filter chain"
		return p
	}
	for _, f := range fc.GetFilters() {
		switch f.GetName() {
		case "envoy.filters.network.http_connection_manager":
			var m hcm.HttpConnectionManager
			if err := f.GetTypedConfig().UnmarshalTo(&m); err != nil {
				p.Cluster = "bad http_connection_manager: " + err.Error()
				return p
			}
			rc := m.GetRouteConfig()
			if name := m.GetRds().GetRouteConfigName(); name != "" {
				p.Route, rc = name, c.routes[name]
			}
			if !conn.http {
				p.Cluster = "http chain" // a TCP call's bytes parsed as HTTP
				return p
			}
			vh := matchVirtualHost(rc, conn.host)
			if vh == nil {
				p.Cluster = "no virtual host"
				return p
			}
			p.VirtualHost, p.Cluster = vh.GetName(), routeCluster(vh)
			return p
		case "envoy.filters.network.tcp_proxy":
			var tp tcpproxy.TcpProxy
			if err := f.GetTypedConfig().UnmarshalTo(&tp); err != nil {
				p.Cluster = "bad tcp_proxy: " + err.Error()
				return p
			}
			p.Cluster = tp.GetCluster()
			if w := tp.GetWeightedClusters(); w != nil {
				var names []string
				for _, wc := range w.GetClusters() {
					names = append(names, wc.GetName())
				}
				p.Cluster = strings.Join(names, "+")
			}
			return p
		}
	}
	p.Cluster = "no proxy filter"
	return p
}

func cmpOr(ls ...*listener.Listener) *listener.Listener {
	for _, l := range ls {
		if l != nil {
			return l
		}
	}
	return nil
}

// matchFilterChain is Envoy's filter chain matching on the criteria Istio's outbound chains
// use, in Envoy's order: destination port, destination IP (longest prefix), server name,
// transport protocol, application protocols. At each step the chains that name the
// connection's value win over those that name none; a chain that names another value is out.
func matchFilterChain(l *listener.Listener, conn envoyConn) *listener.FilterChain {
	cands := l.GetFilterChains()
	narrow := func(score func(m *listener.FilterChainMatch) int) {
		best, kept := -1, []*listener.FilterChain(nil)
		for _, fc := range cands {
			s := score(fc.GetFilterChainMatch())
			switch {
			case s < 0:
			case s > best:
				best, kept = s, []*listener.FilterChain{fc}
			case s == best:
				kept = append(kept, fc)
			}
		}
		cands = kept
	}
	addr, _ := netip.ParseAddr(conn.addr)
	narrow(func(m *listener.FilterChainMatch) int {
		switch {
		case m.GetDestinationPort() == nil:
			return 0
		case int(m.GetDestinationPort().GetValue()) == conn.port:
			return 1
		}
		return -1
	})
	narrow(func(m *listener.FilterChainMatch) int {
		if len(m.GetPrefixRanges()) == 0 {
			return 0
		}
		best := -1
		for _, r := range m.GetPrefixRanges() {
			a, err := netip.ParseAddr(r.GetAddressPrefix())
			if err != nil {
				continue
			}
			bits := int(r.GetPrefixLen().GetValue())
			if pfx, err := a.Prefix(bits); err == nil && addr.IsValid() && pfx.Contains(addr) {
				best = max(best, 1+bits)
			}
		}
		return best
	})
	narrow(func(m *listener.FilterChainMatch) int {
		switch {
		case len(m.GetServerNames()) == 0:
			return 0
		case conn.tls && slices.Contains(m.GetServerNames(), conn.sni):
			return 2
		case conn.tls && slices.ContainsFunc(m.GetServerNames(), func(n string) bool {
			return strings.HasPrefix(n, "*.") && strings.HasSuffix(conn.sni, n[1:])
		}):
			return 1
		}
		return -1
	})
	transport := "raw_buffer"
	if conn.tls {
		transport = "tls"
	}
	narrow(func(m *listener.FilterChainMatch) int {
		switch m.GetTransportProtocol() {
		case "":
			return 0
		case transport:
			return 1
		}
		return -1
	})
	narrow(func(m *listener.FilterChainMatch) int {
		switch {
		case len(m.GetApplicationProtocols()) == 0:
			return 0
		case conn.http && !conn.tls && slices.Contains(m.GetApplicationProtocols(), "http/1.1"):
			return 1
		}
		return -1
	})
	if len(cands) == 0 {
		return nil
	}
	return cands[0]
}

// matchVirtualHost is Envoy's virtual host selection: the domain equal to the Host header,
// else the longest suffix wildcard, else the longest prefix wildcard, else "*".
func matchVirtualHost(rc *route.RouteConfiguration, host string) *route.VirtualHost {
	host = strings.ToLower(host)
	var suffix, prefix, any *route.VirtualHost
	suffixLen, prefixLen := -1, -1
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			switch {
			case d == host:
				return vh
			case d == "*":
				if any == nil {
					any = vh
				}
			case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]) && len(d) > suffixLen:
				suffix, suffixLen = vh, len(d)
			case strings.HasSuffix(d, "*") && strings.HasPrefix(host, d[:len(d)-1]) && len(d) > prefixLen:
				prefix, prefixLen = vh, len(d)
			}
		}
	}
	switch {
	case suffix != nil:
		return suffix
	case prefix != nil:
		return prefix
	}
	return any
}

// routeCluster is the cluster of a virtual host's first route: a plain request to "/" with no
// header matches the first route of a virtual host istiod builds without a VirtualService,
// and of a catch-all.
func routeCluster(vh *route.VirtualHost) string {
	for _, r := range vh.GetRoutes() {
		if dr := r.GetDirectResponse(); dr != nil {
			return "BlackHoleCluster"
		}
		a := r.GetRoute()
		if a == nil {
			continue
		}
		if w := a.GetWeightedClusters(); w != nil {
			var names []string
			for _, wc := range w.GetClusters() {
				names = append(names, wc.GetName())
			}
			return strings.Join(names, "+")
		}
		return a.GetCluster()
	}
	return "no route"
}

// firstHost is an address inside a ServiceEntry address, which may be a CIDR.
func firstHost(a string) string {
	if p, err := netip.ParsePrefix(a); err == nil {
		return p.Addr().Next().String()
	}
	return a
}
