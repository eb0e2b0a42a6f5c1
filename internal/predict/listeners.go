package predict

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The LDS listeners istiod pushes to a sidecar (R48-R55), as buildSidecarListeners builds
// them: one outbound listener per {bind, port} key of the egress listeners' services, the
// virtual listeners, and the inbound listeners a Sidecar's ingress binds.

// Listener is one LDS listener, a row of `istioctl proxy-config listener`.
type Listener struct {
	// Name is "<address>_<port>", or virtualOutbound / virtualInbound.
	Name string `json:"name"`
	// Address is the address the listener matches or binds. When the inventory does not say
	// it (a Service VIP the API server assigns on create, a pod IP), it names what it stands
	// for in angle brackets, "<reviews.bookinfo VIP>", and AddressKnown is false.
	Address      string `json:"address"`
	AddressKnown bool   `json:"address_known"`
	Port         int    `json:"port"`
	// Direction is outbound or inbound; "" for the virtual listeners.
	Direction string `json:"direction"`
	// Protocol is the listener protocol of the service that created it: HTTP, TCP or AUTO
	// (protocol detection).
	Protocol string `json:"protocol"`
	// Services are the hosts whose calls the listener takes, in the order istiod adds them.
	Services []string `json:"services,omitempty"`
	// Routes are the RDS route configurations its HTTP filter chains ask for, in chain order
	// (R58): "P" for the port's shared route, "HOST:P" for a sniffed service's own.
	Routes []string `json:"routes,omitempty"`
	// chains are its outbound filter chains, which the trace follows (R62).
	chains []ldsChain
}

// Listener protocols (istio networking.ListenerProtocol).
const (
	ListenerHTTP = "HTTP"
	ListenerTCP  = "TCP"
	ListenerAuto = "AUTO"

	virtualOutbound = "virtualOutbound"
	virtualInbound  = "virtualInbound"
	wildcardIPv4    = "0.0.0.0"
	localhostIPv4   = "127.0.0.1"
)

// listenerProtocol is R49: the listener protocol of a port protocol, "" for none (UDP).
// Istio: networking.ModelProtocolToListenerProtocol.
func listenerProtocol(proto string) string {
	switch proto {
	case istioconfig.HTTP, istioconfig.HTTP2, istioconfig.HTTPProxy, istioconfig.GRPC, istioconfig.GRPCWeb:
		return ListenerHTTP
	case istioconfig.TCP, istioconfig.HTTPS, istioconfig.TLS, istioconfig.Mongo, istioconfig.Redis, istioconfig.MySQL:
		return ListenerTCP
	case istioconfig.Unsupported:
		return ListenerAuto
	}
	return ""
}

// node is what istiod knows of a proxy that decides its listeners.
type node struct {
	interceptNone bool
	// ip is the pod IP, "" when the inventory does not say it.
	ip string
	// self is the workload the proxy runs in, nil when none of the inventory carries its labels.
	self *mesh.Workload
}

// reservedPorts are the ports a wildcard or HTTP outbound listener may not take (R52): the
// mesh's outbound and inbound capture ports, and the status and Prometheus ports a real
// pilot-agent reports in its metadata.
var reservedPorts = map[int]bool{15001: true, 15006: true, 15021: true, 15090: true}

// Listeners returns the LDS listeners istiod pushes to the proxy, sorted by name (a name can
// repeat: istiod does not de-duplicate an inbound listener bound where an outbound one is).
func (p *Predictor) Listeners(proxy Proxy) []Listener {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.Listeners(proxy)
	}
	ix := p.ix
	sc := ix.sidecarFor(proxy)
	scope := p.scope(sc, proxy.Namespace)
	b := &ldsBuilder{ix: ix, n: ix.nodeOf(proxy), byKey: map[string]*Listener{}, entries: map[string]*ldsEntry{},
		labels: proxy.Labels, proxyNS: proxy.Namespace}
	for _, l := range scope.egress {
		b.egress(l)
	}
	out := make([]Listener, 0, len(b.order)+2)
	for _, k := range b.order {
		l := *b.byKey[k]
		if e := b.entries[k]; e != nil {
			l.Routes, l.chains = e.routes(), e.chains
		}
		out = append(out, l)
	}
	// R48: the virtual listeners, unless the proxy captures no traffic.
	if !b.n.interceptNone {
		out = append(out,
			Listener{Name: virtualOutbound, Address: wildcardIPv4, AddressKnown: true, Port: 15001, Protocol: ListenerTCP},
			Listener{Name: virtualInbound, Address: wildcardIPv4, AddressKnown: true, Port: 15006, Protocol: ListenerTCP})
	}
	out = append(out, b.inbound(sc)...)
	slices.SortStableFunc(out, func(a, b Listener) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// ListenerCount is len(Listeners(proxy)). The outbound listeners are computed once per scope
// and interception mode, with the pods each endpoint listener is for, so a review of many
// proxies of one scope pays for them once.
func (p *Predictor) ListenerCount(proxy Proxy) int {
	if s := p.siblings[proxy.Version]; s != nil {
		return s.ListenerCount(proxy)
	}
	ix := p.ix
	sc := ix.sidecarFor(proxy)
	scope := p.scope(sc, proxy.Namespace)
	n := ix.nodeOf(proxy)
	sum := scope.ldsSummary(ix, n.interceptNone)
	count := sum.plain
	for _, owners := range sum.podKeys {
		if slices.ContainsFunc(owners, func(o *ldsOwner) bool { return !o.self(n) }) {
			count++
		}
	}
	if !n.interceptNone {
		count += 2 // virtualOutbound, virtualInbound
	}
	b := &ldsBuilder{ix: ix, n: n}
	return count + len(b.inbound(sc))
}

// ldsKey is what a scope's count keeps of one outbound key: whether a service makes it, else
// the pods whose endpoints do.
type ldsKey struct {
	plain  bool
	owners []*ldsOwner
}

// ldsCount is a scope's outbound listeners for one interception mode: those some service
// makes, counted, and those only pods' endpoints make, with their pods.
type ldsCount struct {
	plain   int
	podKeys [][]*ldsOwner
	// routes are the route names the plain keys' listeners ask for; podRoutes those of each
	// of podKeys.
	routes    []string
	podRoutes [][]string
}

// ldsSummary is the scope's ldsCount for the interception mode. Scopes of one fingerprint
// (the default scopes of a mesh's namespaces, say) import the same services and
// VirtualServices through the same egress listeners, and share it.
func (sc *sidecarScope) ldsSummary(ix *index, interceptNone bool) *ldsCount {
	i := 0
	if interceptNone {
		i = 1
	}
	sc.ldsMu.Lock()
	defer sc.ldsMu.Unlock()
	if c := sc.lds[i]; c != nil {
		return c
	}
	c := ix.ldsCounts.get(sc.fingerprint()+strconv.Itoa(i), func() *ldsCount { return sc.countListeners(ix, interceptNone) })
	sc.lds[i] = c
	return c
}

// countListeners builds the scope's outbound listeners for the interception mode, as any of
// its proxies gets them before it leaves its own endpoints out, and counts them.
func (sc *sidecarScope) countListeners(ix *index, interceptNone bool) *ldsCount {
	b := &ldsBuilder{ix: ix, n: node{interceptNone: interceptNone}, all: true, keys: map[string]*ldsKey{}, entries: map[string]*ldsEntry{}}
	for _, l := range sc.egress {
		b.egress(l)
	}
	c := &ldsCount{}
	for _, name := range b.order {
		if k := b.keys[name]; k.plain {
			c.plain++
			c.routes = append(c.routes, b.entries[name].routes()...)
		} else {
			c.podKeys = append(c.podKeys, k.owners)
			c.podRoutes = append(c.podRoutes, b.entries[name].routes())
		}
	}
	return c
}

// ldsCountCache holds the ldsCounts of an index and of the copies withInventory makes, which
// differ in Sidecars only, by fingerprint and interception mode. Each is computed once, while
// other keys are computed beside it.
type ldsCountCache struct {
	mu sync.Mutex
	m  map[string]*ldsCountOnce
}

type ldsCountOnce struct {
	once sync.Once
	c    *ldsCount
}

func (c *ldsCountCache) get(key string, build func() *ldsCount) *ldsCount {
	c.mu.Lock()
	e := c.m[key]
	if e == nil {
		if c.m == nil {
			c.m = map[string]*ldsCountOnce{}
		}
		e = &ldsCountOnce{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.c = build() })
	return e.c
}

// nodeOf is the proxy's node metadata that listeners read: the interception mode the injector
// takes from the pod's annotation, and the pod IP.
func (ix *index) nodeOf(proxy Proxy) node {
	w := ix.podOf(proxy)
	if w == nil {
		return node{}
	}
	return node{
		interceptNone: w.PodAnnotations["sidecar.istio.io/interceptionMode"] == "NONE",
		ip:            w.PodIP,
		self:          w,
	}
}

type ldsBuilder struct {
	ix    *index
	n     node
	byKey map[string]*Listener
	order []string
	// all keeps the proxy's own endpoints and records, per key, the pods whose endpoints made
	// it (nil for a service): a scope's listeners, before any proxy leaves its own out.
	all  bool
	keys map[string]*ldsKey
	// hosts are the {key, host} pairs of byKey's Services.
	hosts map[[2]string]bool
	// entries are istiod's listener map entries by key, with their filter chains (R58).
	entries map[string]*ldsEntry
	// cur is the egress listener being built.
	cur *listener
	// labels and proxyNS are the proxy's, which VirtualServices' TCP matches read.
	labels  map[string]string
	proxyNS string
}

// egress builds the outbound listeners of one egress listener (R50, R51): istiod's
// buildSidecarOutboundListeners.
func (b *ldsBuilder) egress(l *listener) {
	e := l.cfg
	b.cur = l
	if e.GetPort() == nil {
		// R58: a catch-all egress listener adds nothing to the keys a port's listener made.
		for _, en := range b.entries {
			en.locked = true
		}
	}
	// R53: bind and capture mode.
	bindToPort := b.n.interceptNone || e.GetCaptureMode() == networking.CaptureMode_NONE || strings.HasPrefix(e.GetBind(), "unix://")
	bind := e.GetBind()
	if bind == "" && bindToPort {
		bind = localhostIPv4
	}
	if n := int(e.GetPort().GetNumber()); n != 0 {
		proto := istioconfig.ParseProtocol(e.GetPort().GetProtocol())
		if !b.canBind(bind, n, proto) {
			return
		}
		for _, s := range l.services {
			b.service(l, s.svc, n, proto, bind)
		}
		return
	}
	for _, s := range l.services {
		for _, p := range s.ports {
			if !b.canBind(bind, p.num, p.proto) {
				continue
			}
			// R51: a headless TCP or detected port has one listener per endpoint.
			if bind == "" && s.svc.res == resPassthrough && s.svc.passthroughAddress() &&
				(listenerProtocol(p.proto) == ListenerTCP || p.proto == istioconfig.Unsupported) {
				eps, normal := b.endpoints(s.svc, p)
				if normal {
					b.service(l, s.svc, p.num, p.proto, bind)
					continue
				}
				for _, ep := range eps {
					b.addOwned(s.svc, ep.addr, ep.known, p.num, p.proto, "", ep.own)
				}
				continue
			}
			b.service(l, s.svc, p.num, p.proto, bind)
		}
	}
}

// canBind is R52: istiod's CanBindToPort for a sidecar whose pilot-agent reports the status and
// Prometheus ports, as every injected one does. The privileged-port check of unprivileged pods
// is not modelled.
func (b *ldsBuilder) canBind(bind string, port int, proto string) bool {
	if bind != "" && bind != wildcardIPv4 {
		return true
	}
	if bind == "" && listenerProtocol(proto) != ListenerHTTP {
		return true
	}
	return !reservedPorts[port]
}

// service is R50: buildSidecarOutboundListener's key for one service and port.
func (b *ldsBuilder) service(l *listener, s *service, port int, proto, bind string) {
	// R27 for listeners: an alias (ExternalName) has none.
	if s.res == resAlias {
		return
	}
	lp := listenerProtocol(proto)
	if lp == "" {
		return
	}
	if bind != "" {
		b.add(s, bind, true, port, proto, "")
		return
	}
	if lp == ListenerHTTP {
		b.add(s, wildcardIPv4, true, port, proto, "")
		return
	}
	for _, a := range b.addresses(l, s) {
		cidr := ""
		if a.known && strings.Contains(a.addr, "/") {
			cidr, a = a.addr, endpoint{addr: wildcardIPv4, known: true}
		}
		b.add(s, a.addr, a.known, port, proto, cidr)
	}
}

type endpoint struct {
	addr  string
	known bool
	// own is set for a pod's endpoint: the pod a proxy leaves out when it is its own (R51).
	own *ldsOwner
}

// ldsOwner is the pod an endpoint listener is for: by its IP, or as replica idx of n of a
// workload whose pods the inventory does not hold.
type ldsOwner struct {
	ip     string
	w      *mesh.Workload
	idx, n int
}

// self reports whether the endpoint is the proxy's own pod (for a workload's replicas, the last
// one stands for it).
func (o *ldsOwner) self(n node) bool {
	if o.ip != "" {
		return o.ip == n.ip
	}
	return o.w != nil && o.w == n.self && o.idx == o.n
}

// passthroughAddress reports whether the service's address for a proxy is the wildcard: a
// headless Service, or a ServiceEntry without addresses.
func (s *service) passthroughAddress() bool {
	if s.k8s {
		return s.vip == "None" || s.vip == ""
	}
	return len(s.addrs) == 0
}

// addresses is R50's GetAddressForProxy: a Kubernetes Service's cluster IP, or its placeholder
// when the manifest does not carry it; each address of a ServiceEntry (from Istio 1.31, through
// the exact-host index, one of them that istiod picks arbitrarily: "<a|b>"); else the wildcard.
func (b *ldsBuilder) addresses(l *listener, s *service) []endpoint {
	if as := ownAddresses(s, l.allExact && b.ix.ver.ExactHostIndexOneAddress()); len(as) > 0 {
		return as
	}
	return []endpoint{{addr: wildcardIPv4, known: true}}
}

// ownAddresses are the addresses a service is called at: a Kubernetes Service's cluster IP (a
// placeholder when the inventory lacks it), a ServiceEntry's addresses. None for a headless
// Service, an ExternalName Service or a ServiceEntry without addresses. oneOfMany names several
// addresses as one placeholder, "<a|b>": istiod keeps one service per address for the host and
// which one depends on the order its registry lists them in, which it does not fix.
func ownAddresses(s *service, oneOfMany bool) []endpoint {
	if s.k8s {
		switch {
		case s.vip == "None", s.vip == "" && (s.res == resDNSLB || s.res == resAlias):
			return nil
		case s.vip == "":
			return []endpoint{{addr: "<" + s.attrName + "." + s.ns + " VIP>", known: false}}
		}
		return []endpoint{{addr: s.vip, known: true}}
	}
	if oneOfMany && len(s.addrs) > 1 {
		return []endpoint{{addr: "<" + strings.Join(s.addrs, "|") + ">", known: false}}
	}
	out := make([]endpoint, len(s.addrs))
	for i, a := range s.addrs {
		out[i] = endpoint{addr: a, known: true}
	}
	return out
}

// endpoints are R51's instances of a passthrough service's port: the ready, not-ready and
// terminating pods a headless Service selects, as Kubernetes' EndpointSlice controller lists them
// (completed ones are not), the addresses of the EndpointSlices of one without selector, or the ready pods a ServiceEntry's workloadSelector selects that are
// not being deleted. The proxy's own address is left out. normal is set
// for a ServiceEntry without workloadSelector, which gets the service's own listener instead.
func (b *ldsBuilder) endpoints(s *service, p svcPort) (eps []endpoint, normal bool) {
	if !s.k8s && len(s.selector) == 0 {
		return nil, true // validation gives a NONE ServiceEntry no endpoints of its own
	}
	if s.k8s && len(s.selector) == 0 {
		// A Service without selector: the addresses of its EndpointSlices, whatever their health.
		for _, e := range b.ix.sliceEndpoints(s, p.name) {
			own := &ldsOwner{ip: e.Address}
			if !b.all && own.self(b.n) {
				continue
			}
			eps = append(eps, endpoint{addr: e.Address, known: true, own: own})
		}
		return eps, false
	}
	pods, controllers := b.ix.selected(s.ns, s.selector)
	if s.k8s {
		lacksPort := func(w *mesh.Workload) bool { return !b.ix.hasTargetPort(s, p, w) }
		pods, controllers = slices.DeleteFunc(pods, lacksPort), slices.DeleteFunc(controllers, lacksPort)
	}
	if len(pods) > 0 {
		for _, w := range pods {
			if w.PodIP == "" || w.Terminal() || (!s.k8s && (w.NotReady || w.Terminating)) {
				continue
			}
			own := &ldsOwner{ip: w.PodIP}
			if !b.all && own.self(b.n) {
				continue
			}
			eps = append(eps, endpoint{addr: w.PodIP, known: true, own: own})
		}
		return eps, false
	}
	for _, w := range controllers {
		n := 1
		if w.Replicas != nil {
			n = int(*w.Replicas)
		}
		for i := 1; i <= n; i++ {
			own := &ldsOwner{w: w, idx: i, n: n}
			if !b.all && own.self(b.n) {
				continue // the proxy's own pod
			}
			eps = append(eps, endpoint{addr: "<" + w.Name + "." + w.Namespace + " pod " + strconv.Itoa(i) + " IP>", own: own})
		}
	}
	return eps, false
}

// hasTargetPort reports whether the workload's pods are instances of the Service port number
// for istiod: its index holds, under the number, the endpoints of every Service port with it
// (UDP ones too), each on the target port resolved for the pod.
func (ix *index) hasTargetPort(s *service, p svcPort, w *mesh.Workload) bool {
	for _, sp := range ix.kubePorts(s) {
		if int(sp.Port) == p.num {
			if _, ok := resolveTargetPort(sp, w); ok {
				return true
			}
		}
	}
	return false
}

// kubePorts are the ports of a Kubernetes service's Service object.
func (ix *index) kubePorts(s *service) []corev1.ServicePort {
	if ks := ix.kubeService(s); ks != nil {
		return ks.Spec.Ports
	}
	return nil
}

// kubeService is the Kubernetes Service a service comes from, nil for a ServiceEntry's.
func (ix *index) kubeService(s *service) *mesh.Service {
	for _, ks := range ix.kubeByNs[s.ns] {
		if ks.Name == s.objName {
			return ks
		}
	}
	return nil
}

// add records a {bind, port} key (R54: a key that exists keeps its name whatever conflicts
// on it; only its filter chains change).
// cidr is the service's CIDR address when it listens on the wildcard with a CIDR match.
func (b *ldsBuilder) add(s *service, addr string, known bool, port int, proto, cidr string) {
	b.addOwned(s, addr, known, port, proto, cidr, nil)
}

// addOwned is add for an endpoint listener of a pod (own), or of a service (own nil).
func (b *ldsBuilder) addOwned(s *service, addr string, known bool, port int, proto, cidr string, own *ldsOwner) {
	host := s.host
	name := addr + "_" + strconv.Itoa(port)
	if b.all {
		// A scope's count: the keys and whose endpoints made them, not their services.
		k := b.keys[name]
		if k == nil {
			k = &ldsKey{}
			b.keys[name] = k
			b.order = append(b.order, name)
		}
		if own == nil {
			k.plain = true
		} else if !k.plain {
			k.owners = append(k.owners, own)
		}
		b.chains(s, name, addr, port, proto, cidr) // the routes the key's listener asks for
		return
	}
	b.chains(s, name, addr, port, proto, cidr)
	// Thousands of services can share 0.0.0.0_80: a set, not a scan of Services.
	k := [2]string{name, host}
	if b.hosts[k] {
		return
	}
	if b.hosts == nil {
		b.hosts = map[[2]string]bool{}
	}
	b.hosts[k] = true
	if l, ok := b.byKey[name]; ok {
		l.Services = append(l.Services, host)
		return
	}
	b.byKey[name] = &Listener{Name: name, Address: addr, AddressKnown: known, Port: port, Direction: Outbound,
		Protocol: listenerProtocol(proto), Services: []string{host}}
	b.order = append(b.order, name)
}

// inbound is R55: the listeners a Sidecar's ingress binds (capture mode NONE, or DEFAULT on a
// proxy that captures nothing), bound to the ingress bind, else the pod IP.
func (b *ldsBuilder) inbound(sc *mesh.Sidecar) []Listener {
	var out []Listener
	for _, in := range sc.GetSpecIngress() {
		bindToPort := false
		switch in.GetCaptureMode() {
		case networking.CaptureMode_NONE:
			bindToPort = true
		case networking.CaptureMode_DEFAULT:
			bindToPort = b.n.interceptNone
		}
		if !bindToPort {
			continue
		}
		addr, known := in.GetBind(), true
		if addr == "" {
			addr = b.n.ip
			if addr == "" {
				addr, known = "<"+b.podName()+" IP>", false
			}
		}
		port := int(in.GetPort().GetNumber())
		out = append(out, Listener{Name: addr + "_" + strconv.Itoa(port), Address: addr, AddressKnown: known, Port: port,
			Direction: Inbound, Protocol: listenerProtocol(istioconfig.ParseProtocol(in.GetPort().GetProtocol()))})
	}
	return out
}

// podName names the proxy's pod for a placeholder.
func (b *ldsBuilder) podName() string {
	if b.n.self != nil {
		return b.n.self.Name + "." + b.n.self.Namespace + " pod"
	}
	return "pod"
}
