package traffic

import (
	"cmp"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Class says what the destination of a call is.
type Class string

// The classes of destination.
const (
	// ClassService is a Kubernetes Service of the inventory.
	ClassService Class = "service"
	// ClassServiceEntry is a host of a ServiceEntry of the inventory.
	ClassServiceEntry Class = "service_entry"
	// ClassPassthrough is a host outside the registry that the client reached through
	// PassthroughCluster (ALLOW_ANY): no mTLS, no routing, no per-service telemetry.
	ClassPassthrough Class = "passthrough"
	// ClassBlackHole is a call the client's proxy dropped into BlackHoleCluster (REGISTRY_ONLY).
	ClassBlackHole Class = "blackhole"
	// ClassUnknown is a service cluster for a host the inventory does not hold: the
	// inventory is likely incomplete.
	ClassUnknown Class = "unknown"
)

// Call is what one workload called over the window: one destination host and port.
type Call struct {
	// Namespace and Workload name the calling workload as Istio does: the controller's name
	// (Deployment, StatefulSet, ...) or a bare Pod's own.
	Namespace, Workload string
	// Host is the destination: a Service FQDN or ServiceEntry host of the inventory, else the
	// host Istio recorded (the Host header of a passthrough call), or "" when Istio could not
	// tell (a TCP passthrough connection).
	Host string
	// Port is the service port when the metrics carry destination_port, else 0.
	Port int
	// Protocol is http, grpc or tcp (http and grpc joined as "grpc,http" when both were seen).
	Protocol string
	Class    Class
	// Passthrough says the client's proxy sent these calls through PassthroughCluster
	// today, so they bypass mTLS, routing and telemetry, even when Host is in the registry.
	Passthrough bool
	// Count is the number of requests (HTTP, gRPC) or of connections opened (TCP) over the window.
	Count float64
	// TCP says Count counts connections, not requests.
	TCP bool
	// Service is "name.namespace" for a Kubernetes Service.
	Service string
	// OnlyPort is the destination's port when it has exactly one (a single-port Service or
	// ServiceEntry), else 0: then a call whose port the metrics do not give still has a certain port.
	OnlyPort int
	// Namespaces are the namespaces whose config makes Host a host of the registry for the
	// caller: the Service's own, or those of the ServiceEntries of Host exported to the
	// caller's namespace. A scope's "ns/*" imports the host when ns is one of them.
	Namespaces []string
	// Possibly are services of the registry that a call Istio could not name may have gone to:
	// their servers counted, over the same window and in the same unit, within 10% as many
	// calls from a caller they could not name (a plaintext TCP connection carries no peer metadata).
	// A hint only, never evidence: it is empty for every other call.
	Possibly []string
}

// Unit is what Count counts.
func (c Call) Unit() string {
	if c.TCP {
		return "connections"
	}
	return "requests"
}

// Dependency is the form a workload scope's dependency takes for this destination:
// "name.namespace" for a Kubernetes Service, the host for a ServiceEntry; "" otherwise.
func (c Call) Dependency() string {
	switch c.Class {
	case ClassService:
		return c.Service
	case ClassServiceEntry:
		return c.Host
	}
	return ""
}

// InRegistry says the destination is a service of the inventory.
func (c Call) InRegistry() bool { return c.Class == ClassService || c.Class == ClassServiceEntry }

// UnknownWorkload is a calling workload that the inventory does not hold.
type UnknownWorkload struct {
	Namespace, Workload string
	// Requests and Connections count its calls as the calls of a known workload are counted:
	// a call both proxies reported counts once.
	Requests, Connections float64
	Series                int
}

// Evidence is a snapshot resolved against an inventory: the calls of every workload.
type Evidence struct {
	// Source and Window are the snapshot's. Window is the window asked for; Span names the
	// span the counts really cover.
	Source, Window string
	// Coverage is how much of the window a live server holds (the snapshot's).
	Coverage Coverage
	// Series is the number of Istio series read, 0 when Prometheus held none in the window.
	Series int
	// UnknownWorkloads are the callers the inventory does not hold, sorted.
	UnknownWorkloads []UnknownWorkload
	// Unattributed counts series whose caller Istio could not name (source_workload="unknown":
	// a client without a sidecar or outside the mesh).
	Unattributed int

	calls map[string][]Call
	keys  []string
}

// Calls returns the calls of the workload named like Istio's source_workload, sorted by host,
// port and unit. The slice must not be changed.
func (e *Evidence) Calls(namespace, workload string) []Call {
	if e == nil {
		return nil
	}
	return e.calls[namespace+"/"+workload]
}

// Workloads returns "namespace/name" of every calling workload of the inventory, sorted.
func (e *Evidence) Workloads() []string { return e.keys }

// Empty says Prometheus held no Istio series in the window: no evidence, which is not the
// same as no traffic.
func (e *Evidence) Empty() bool { return e.Series == 0 }

// registry finds the inventory host of a destination.
type registry struct {
	domain   string
	services map[string]*mesh.Service // by FQDN
	// entries and wildcard are the ServiceEntry hosts, exact and "*.example.com", each mapped
	// to itself, for istioconfig.MostSpecificHostMatch.
	entries, wildcard map[string]string
	sePorts           map[string][]int // the port numbers of each ServiceEntry host
	seDefs            map[string][]*mesh.ServiceEntry
	inv               *mesh.Inventory
	// nsOf and seNsOf hold the answers of namespaces, by namespace and by host and caller.
	nsOf, seNsOf map[string][]string
}

func newRegistry(inv *mesh.Inventory, domain string) *registry {
	r := &registry{domain: domain, services: make(map[string]*mesh.Service, len(inv.Services)),
		entries: map[string]string{}, wildcard: map[string]string{}, sePorts: map[string][]int{},
		seDefs: map[string][]*mesh.ServiceEntry{}, inv: inv, nsOf: map[string][]string{}, seNsOf: map[string][]string{}}
	for _, s := range inv.Services {
		r.services[s.Name+"."+s.Namespace+".svc."+domain] = s
	}
	for _, se := range inv.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			for _, p := range se.Spec.GetPorts() {
				r.sePorts[h] = append(r.sePorts[h], int(p.GetNumber()))
			}
			r.seDefs[h] = append(r.seDefs[h], se)
			if istioconfig.IsWildcard(h) {
				r.wildcard[h] = h
			} else {
				r.entries[h] = h
			}
		}
	}
	return r
}

// lookup finds a host of the registry, exactly as Istio names it in destination_service.
func (r *registry) lookup(host string) (string, Class, *mesh.Service) {
	if s, ok := r.services[host]; ok {
		return host, ClassService, s
	}
	if h, ok := istioconfig.MostSpecificHostMatch(host, r.entries, r.wildcard); ok {
		return h, ClassServiceEntry, nil
	}
	return host, ClassUnknown, nil
}

// resolveName finds the registry host a client meant by a Host header: "name", "name.ns",
// "name.ns.svc", the FQDN or a ServiceEntry host, with or without ":port".
func (r *registry) resolveName(raw, ns string) (host string, port int, class Class, svc *mesh.Service) {
	name := raw
	if h, p, err := net.SplitHostPort(raw); err == nil {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
			name, port = h, n
		}
	}
	candidates := []string{name}
	switch strings.Count(name, ".") {
	case 0:
		candidates = append(candidates, name+"."+ns+".svc."+r.domain)
	case 1:
		candidates = append(candidates, name+".svc."+r.domain)
	case 2:
		if strings.HasSuffix(name, ".svc") {
			candidates = append(candidates, name+"."+r.domain)
		}
	}
	for _, c := range candidates {
		if h, cl, s := r.lookup(c); cl != ClassUnknown {
			return h, port, cl, s
		}
	}
	return name, port, ClassUnknown, nil
}

// namespaces are the Call's Namespaces: the Service's namespace, or those of the ServiceEntries
// of host that Sidecar egress in the caller's namespace can import (visible to istiod, exported
// to the caller).
// The slices are shared: they must not be changed.
func (r *registry) namespaces(host string, class Class, s *mesh.Service, caller string) []string {
	switch {
	case class == ClassService && s != nil:
		ns, ok := r.nsOf[s.Namespace]
		if !ok {
			ns = []string{s.Namespace}
			r.nsOf[s.Namespace] = ns
		}
		return ns
	case class != ClassServiceEntry:
		return nil
	}
	key := host + "|" + caller
	if ns, ok := r.seNsOf[key]; ok {
		return ns
	}
	var out []string
	for _, se := range r.seDefs[host] {
		if r.inv.NamespaceVisible(se.Namespace) &&
			istioconfig.ExportedTo(istioconfig.EffectiveExportTo(se.Spec.GetExportTo(), r.inv.Mesh.DefaultServiceExportTo), se.Namespace, caller) &&
			!slices.Contains(out, se.Namespace) {
			out = append(out, se.Namespace)
		}
	}
	slices.Sort(out)
	r.seNsOf[key] = out
	return out
}

// onlyPort is the destination's single port number, or 0 when it has none or several.
// UDP ports carry no sidecar traffic and do not count.
func (r *registry) onlyPort(host string, class Class, s *mesh.Service) int {
	var ports []int
	switch {
	case class == ClassService && s != nil:
		for _, p := range s.Spec.Ports {
			if p.Protocol != corev1.ProtocolUDP {
				ports = append(ports, int(p.Port))
			}
		}
	case class == ClassServiceEntry:
		ports = append(ports, r.sePorts[host]...)
	}
	slices.Sort(ports)
	if ports = slices.Compact(ports); len(ports) == 1 {
		return ports[0]
	}
	return 0
}

// servicePort maps the port a server's proxy saw (the target port) to the service port: the
// one service port whose numeric targetPort it is, else the service port of that number.
func servicePort(s *mesh.Service, target int) int {
	if s == nil || target == 0 {
		return target
	}
	found := 0
	for _, p := range s.Spec.Ports {
		if p.TargetPort.IntValue() == target {
			if found != 0 {
				found = -1
				continue
			}
			found = int(p.Port)
		}
	}
	if found > 0 {
		return found
	}
	for _, p := range s.Spec.Ports {
		if int(p.Port) == target {
			return target
		}
	}
	return 0
}

type callKey struct {
	workload string
	host     string
	port     int
	tcp      bool
	class    Class
}

// unitKey is a calling workload ("namespace/name") and a unit (TCP connections, or requests).
type unitKey struct {
	workload string
	tcp      bool
}

func (k callKey) unit() unitKey { return unitKey{k.workload, k.tcp} }

type callAcc struct {
	Call
	source, destination float64
	protocols           []string
	// sourceReported and destinationReported: a client proxy, or a server proxy, reported this call.
	sourceReported, destinationReported bool
}

// absorb adds o's reports to a's: the same calls, named with and without their port.
func (a *callAcc) absorb(o *callAcc) {
	a.source += o.source
	a.destination += o.destination
	a.sourceReported = a.sourceReported || o.sourceReported
	a.destinationReported = a.destinationReported || o.destinationReported
	a.Passthrough = a.Passthrough || o.Passthrough
	for _, p := range o.protocols {
		if !slices.Contains(a.protocols, p) {
			a.protocols = append(a.protocols, p)
		}
	}
}

func (a *callAcc) count() float64 { return max(a.source, a.destination) }

// ReporterSlack is how far two proxies' counts of the same calls may differ and still be the
// same calls: Prometheus extrapolates each series' increase() from its own scrapes, so the
// client's and the server's counts of one call rarely agree to the unit. A remainder within
// max(1, ReporterSlack × the count) is such a difference, not calls of their own.
const ReporterSlack = 0.02

// possiblySlack is how close a server's count of calls from a caller it could not name must be
// to a workload's passthrough calls without a host for the server to be named as a hint.
const possiblySlack = 0.1

// negligible says a remainder of what is left of whole is the reporters' disagreement.
func negligible(left, whole float64) bool { return left < 1 || left <= ReporterSlack*whole }

// Resolve maps the snapshot's series onto the inventory's workloads and hosts. domain is the
// cluster's DNS suffix. Both reporters are read: the client's proxy (reporter="source") says
// whether a call went through PassthroughCluster; the server's (reporter="destination") names
// the real service even then.
//
// One call counts once (the rule the adopting guide states):
//   - Per caller, host, port and unit, a call both proxies reported counts the larger of the two
//     counts, never their sum.
//   - A row without a port (one proxy's series has no destination_port, say because the
//     Telemetry that adds it applies only in the server's namespace) merges into the row of the
//     same host with a port when there is one such row. When there are several, it keeps only
//     what the other reporter's port rows do not already count.
//   - Requests (istio_requests_total) and connections (istio_tcp_connections_opened_total) are
//     never added together.
//   - A workload's passthrough connections to an address Istio could not name are explained by
//     the calls only the server named (the client's proxy could not); what they do not explain
//     stays, as its own entry.
func Resolve(snap *Snapshot, inv *mesh.Inventory, domain string) *Evidence {
	ev := &Evidence{Source: snap.Source, Window: snap.Window, Coverage: snap.Coverage, Series: len(snap.Series), calls: map[string][]Call{}}
	reg := newRegistry(inv, domain)
	// Istio's metrics name a workload as the census does (C1): a CronJob's pods by the CronJob.
	all := census.Take(inv).All()
	workloads := make(map[string]bool, len(all))
	for _, w := range all {
		workloads[w.Namespace+"/"+w.Name] = true
	}
	unknownSeries := map[string]int{}
	acc := map[callKey]*callAcc{}
	// Per workload and unit: does its own proxy report, and did it pass anything through?
	type flags struct{ sidecar, passthrough bool }
	seen := map[unitKey]*flags{}
	flag := func(k unitKey) *flags {
		f := seen[k]
		if f == nil {
			f = &flags{}
			seen[k] = f
		}
		return f
	}
	// Calls to services of the registry that their servers counted from a caller Istio could
	// not name, per host and unit: the hints of Possibly.
	type hostUnit struct {
		host string
		tcp  bool
	}
	unnamed := map[hostUnit]float64{}

	for _, s := range snap.Series {
		tcp := s.Metric == TCPConnectionsMetric
		if s.SourceWorkload == "" || s.SourceWorkload == "unknown" || s.SourceNamespace == "" || s.SourceNamespace == "unknown" {
			ev.Unattributed++
			if s.Reporter == "destination" {
				if host, class, _ := reg.lookup(s.DestinationService); class == ClassService || class == ClassServiceEntry {
					unnamed[hostUnit{host, tcp}] += s.Count
				}
			}
			continue
		}
		wk := s.SourceNamespace + "/" + s.SourceWorkload
		if !workloads[wk] {
			unknownSeries[wk]++
		}
		fromSource := s.Reporter != "destination"
		var (
			host        string
			port        = s.Port
			class       Class
			svc         *mesh.Service
			passthrough bool
		)
		switch s.DestinationServiceName {
		case PassthroughCluster:
			passthrough = true
			if s.DestinationService == "" || s.DestinationService == "unknown" {
				host, class = "", ClassPassthrough
				break
			}
			var p int
			host, p, class, svc = reg.resolveName(s.DestinationService, s.SourceNamespace)
			if port == 0 {
				port = p
			}
			if class == ClassUnknown {
				class = ClassPassthrough
			}
		case BlackHoleCluster:
			var p int
			host, p, _, svc = reg.resolveName(s.DestinationService, s.SourceNamespace)
			if port == 0 {
				port = p
			}
			class = ClassBlackHole
		default:
			host, class, svc = reg.lookup(s.DestinationService)
			if !fromSource {
				port = servicePort(svc, port)
			}
		}
		if fromSource {
			f := flag(unitKey{wk, tcp})
			f.sidecar = true
			f.passthrough = f.passthrough || passthrough
		}
		k := callKey{workload: wk, host: host, port: port, tcp: tcp, class: class}
		a := acc[k]
		if a == nil {
			a = &callAcc{Call: Call{Namespace: s.SourceNamespace, Workload: s.SourceWorkload, Host: host, Port: port, Class: class, TCP: tcp}}
			if svc != nil {
				a.Service = svc.Name + "." + svc.Namespace
			}
			if a.InRegistry() {
				a.OnlyPort = reg.onlyPort(host, class, svc)
				a.Namespaces = reg.namespaces(host, class, svc, s.SourceNamespace)
			}
			acc[k] = a
		}
		if fromSource {
			a.source += s.Count
			a.sourceReported = true
		} else {
			a.destination += s.Count
			a.destinationReported = true
		}
		a.Passthrough = a.Passthrough || passthrough
		if s.Protocol != "" && !slices.Contains(a.protocols, s.Protocol) {
			a.protocols = append(a.protocols, s.Protocol)
		}
	}

	mergePortless(acc)

	// A call only the server reported, from a workload whose own proxy reports and passed calls
	// of the same kind through PassthroughCluster, is one of those passthrough calls: the server
	// names the service the client's proxy could not. Those calls explain as many of the
	// workload's passthrough calls without a usable host (TCP's "unknown", an IP address); what
	// they do not explain stays.
	explained := map[unitKey]float64{}
	for k, a := range acc {
		key := k.unit()
		if f := seen[key]; !a.sourceReported && f != nil && f.sidecar && f.passthrough && a.InRegistry() {
			a.Passthrough = true
			explained[key] += a.count()
		}
	}
	var nameless []callKey
	for k, a := range acc {
		if a.Class == ClassPassthrough && (a.Host == "" || net.ParseIP(a.Host) != nil) {
			nameless = append(nameless, k)
		}
	}
	slices.SortFunc(nameless, func(x, y callKey) int {
		return cmp.Or(strings.Compare(x.workload, y.workload), compareBool(x.tcp, y.tcp), strings.Compare(x.host, y.host), cmp.Compare(x.port, y.port))
	})
	for _, k := range nameless {
		a := acc[k]
		key := k.unit()
		whole := a.source
		take := min(explained[key], a.source)
		explained[key] -= take
		a.source -= take
		if take > 0 && negligible(a.source, whole) {
			delete(acc, k)
			continue
		}
		// What the servers counted from callers they could not name, of the same order.
		for hu, n := range unnamed {
			if hu.tcp == a.TCP && math.Abs(n-a.source) <= possiblySlack*max(n, a.source) {
				a.Possibly = append(a.Possibly, hu.host)
			}
		}
		slices.Sort(a.Possibly)
	}

	unknown := map[string]*UnknownWorkload{}
	for _, a := range acc {
		c := a.Call
		c.Count = a.count()
		slices.Sort(a.protocols)
		c.Protocol = strings.Join(a.protocols, ",")
		k := c.Namespace + "/" + c.Workload
		if !workloads[k] {
			u := unknown[k]
			if u == nil {
				u = &UnknownWorkload{Namespace: c.Namespace, Workload: c.Workload, Series: unknownSeries[k]}
				unknown[k] = u
			}
			if c.TCP {
				u.Connections += c.Count
			} else {
				u.Requests += c.Count
			}
			continue
		}
		ev.calls[k] = append(ev.calls[k], c)
	}
	for k, calls := range ev.calls {
		slices.SortFunc(calls, compareCalls)
		ev.keys = append(ev.keys, k)
	}
	slices.Sort(ev.keys)
	for _, u := range unknown {
		ev.UnknownWorkloads = append(ev.UnknownWorkloads, *u)
	}
	slices.SortFunc(ev.UnknownWorkloads, func(a, b UnknownWorkload) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Workload, b.Workload))
	})
	return ev
}

// mergePortless merges each row without a port into the rows of the same caller, host, unit
// and class that have one (Resolve's rule): into the one such row, or, when there are several,
// keeping only what the other reporter's port rows do not count.
func mergePortless(acc map[callKey]*callAcc) {
	type group struct {
		workload, host string
		tcp            bool
		class          Class
	}
	portless := map[group]callKey{}
	for k := range acc {
		if k.host != "" && k.port == 0 {
			portless[group{k.workload, k.host, k.tcp, k.class}] = k
		}
	}
	if len(portless) == 0 {
		return
	}
	rows := map[group][]callKey{}
	for k := range acc {
		if g := (group{k.workload, k.host, k.tcp, k.class}); k.port != 0 {
			if _, ok := portless[g]; ok {
				rows[g] = append(rows[g], k)
			}
		}
	}
	for g, pk := range portless {
		ports := rows[g]
		p := acc[pk]
		switch len(ports) {
		case 0:
			continue
		case 1:
			acc[ports[0]].absorb(p)
			delete(acc, pk)
			continue
		}
		// Several ports: what one reporter counted on ports, the other may have counted without.
		var onlySource, onlyDestination float64
		for _, k := range ports {
			r := acc[k]
			if !r.sourceReported {
				onlyDestination += r.destination
			}
			if !r.destinationReported {
				onlySource += r.source
			}
		}
		whole := p.count()
		p.source = max(0, p.source-onlyDestination)
		p.destination = max(0, p.destination-onlySource)
		if p.count() < whole && negligible(p.count(), whole) {
			delete(acc, pk)
		}
	}
}

func compareCalls(a, b Call) int {
	return cmp.Or(strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port),
		compareBool(a.TCP, b.TCP), strings.Compare(string(a.Class), string(b.Class)))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
