package review

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// Observed is one reviewed workload checked against the calls it made over the window.
type Observed struct {
	// Cut are the calls to services of the registry that the workload would no longer route to
	// their service: it would have no outbound cluster for the host (or, when the metrics give
	// the port, for that port). Under ALLOW_ANY they fall to PassthroughCluster; under
	// REGISTRY_ONLY they fail.
	Cut []CutCall
	// Unobserved are the declared dependencies, as written, that no call matched: candidates
	// to drop (a call rarer than the window is not seen). A tree review has none.
	Unobserved []string
	// Outside are the calls that leave the registry today: through PassthroughCluster, or into
	// BlackHoleCluster. Their host is not one of the registry, so their Fix has no Dependency:
	// a ServiceEntry must come first.
	Outside []CutCall
	// Unknown are the calls to service clusters of hosts the inventory lacks.
	Unknown []traffic.Call
	// Rerouted are the calls counted under a host that a VirtualService of another host, which
	// the workload would have no cluster for, routes to (the metrics name the host after routing).
	Rerouted []ReroutedCall
}

// ReroutedCall is an observed call to a host that a VirtualService of another host routes to,
// while the workload would have no cluster for that other host: the VirtualService is then not
// imported, and if the application called the other host, its calls lose their route.
type ReroutedCall struct {
	traffic.Call
	predict.Reroute
	// New says this change drops the VirtualService's host: the base has a cluster for it, or
	// has no such workload. A scope review leaves it false.
	New bool
	// Fix declares the VirtualService's host.
	Fix Fix
}

// rerouted returns the calls that reach their host through a VirtualService whose own host the
// proxy with these outbound clusters has no cluster for.
func rerouted(calls []traffic.Call, outbound []predict.Cluster, reroutes map[string][]predict.Reroute) []ReroutedCall {
	if len(reroutes) == 0 {
		return nil
	}
	var out []ReroutedCall
	var have map[string]bool
	for _, c := range calls {
		if !c.InRegistry() {
			continue
		}
		for _, r := range reroutes[c.Host] {
			if have == nil {
				have = make(map[string]bool, len(outbound))
				for _, cl := range outbound {
					if cl.Direction == predict.Outbound {
						have[cl.FQDN] = true
					}
				}
			}
			if !have[r.From] {
				out = append(out, ReroutedCall{Call: c, Reroute: r})
			}
		}
	}
	return out
}

// rerouteFixes sets the Fix of every rerouted call: declare the VirtualService's host, with its
// ports unless the rule lists none.
func rerouteFixes(route *Routability, ns string, calls []ReroutedCall, rule portRule) {
	var deps []scope.Dependency
	for i := range calls {
		r := calls[i].Reroute
		d := scope.Dependency{Service: cmp.Or(r.FromService, r.From)}
		if rule != noPorts {
			for _, p := range r.FromPorts {
				d.Ports = append(d.Ports, uint32(p))
			}
		}
		calls[i].Fix.Dependency = d
		deps = append(deps, d)
	}
	if len(deps) == 0 {
		return
	}
	for i, pb := range route.Refusals(ns, deps) {
		calls[i].Fix.Refused = pb
	}
}

// WithReroutes is calls and, for every call counted under a host that a VirtualService of
// another host routes to, a call to that other host with no port: the calls a dependency on the
// VirtualService's host may account for, since the metrics name the host after routing.
func WithReroutes(calls []traffic.Call, reroutes map[string][]predict.Reroute) []traffic.Call {
	var extra []traffic.Call
	for _, c := range calls {
		if !c.InRegistry() {
			continue
		}
		for _, r := range reroutes[c.Host] {
			from := traffic.Call{Namespace: c.Namespace, Workload: c.Workload, Host: r.From, Protocol: c.Protocol,
				Class: traffic.ClassServiceEntry, Count: c.Count, TCP: c.TCP, Service: r.FromService, Namespaces: r.FromNamespaces}
			if r.FromService != "" {
				from.Class = traffic.ClassService
			}
			extra = append(extra, from)
		}
	}
	if len(extra) == 0 {
		return calls
	}
	return append(slices.Clone(calls), extra...)
}

// CutCall is an observed call with what lets it through.
type CutCall struct {
	traffic.Call
	// New says this change cuts it: the base routes it, or has no such workload. A scope
	// review does not tell (every cut is reported as the scope's), and leaves it false.
	New bool
	Fix Fix
}

// Fix is what lets an observed call through.
type Fix struct {
	// Dependency is the element to declare. Its Service is "" when the host is not in the
	// registry: a ServiceEntry must come first.
	Dependency scope.Dependency
	// Refused is the compiler's error for Dependency in the workload's namespace: no scope of
	// the namespace can route the call. nil when the compiler accepts it.
	Refused *scope.Problem
}

// Declarable says the fix is to declare Dependency.
func (f Fix) Declarable() bool { return f.Dependency.Service != "" && f.Refused == nil }

// Refusal is the compiler's reason, as "Summary: Detail", or "".
func (f Fix) Refusal() string {
	if f.Refused == nil {
		return ""
	}
	return f.Refused.Summary + ": " + f.Refused.Detail
}

// portRule says which port a fix's dependency lists for a call.
type portRule int

const (
	// noPorts lists none: the scope is not port-level, so a dependency with ports would widen nothing.
	noPorts portRule = iota
	// certainPort lists the call's port when it is certain: the metrics give it, or the
	// destination has one port (a scope whose dependencies all list ports).
	certainPort
	// metricPort lists the port the metrics give (a tree review, which has no declaration).
	metricPort
)

func dependencyFor(c traffic.Call, rule portRule) scope.Dependency {
	d := scope.Dependency{Service: c.Dependency()}
	if d.Service == "" {
		return d
	}
	port := 0
	switch rule {
	case certainPort:
		port = cmp.Or(c.Port, c.OnlyPort)
	case metricPort:
		port = c.Port
	}
	if port > 0 {
		d.Ports = []uint32{uint32(port)}
	}
	return d
}

// fixes sets the Fix of every call, asking the routability of the namespace once for all.
func fixes(route *Routability, ns string, calls []CutCall, rule portRule) {
	var deps []scope.Dependency
	var at []int
	for i := range calls {
		calls[i].Fix.Dependency = dependencyFor(calls[i].Call, rule)
		if calls[i].Fix.Dependency.Service != "" {
			deps = append(deps, calls[i].Fix.Dependency)
			at = append(at, i)
		}
	}
	if len(deps) == 0 {
		return
	}
	for j, pb := range route.Refusals(ns, deps) {
		calls[at[j]].Fix.Refused = pb
	}
}

// Unobserved returns the dependencies, as written, that none of the calls matches. namespace is
// the scope's namespace, domain the cluster's DNS suffix.
func Unobserved(calls []traffic.Call, deps []scope.Dependency, namespace, domain string) []string {
	out := []string{}
	for _, d := range deps {
		if !slices.ContainsFunc(calls, func(c traffic.Call) bool { return c.Matches(d.Service, d.Ports, namespace, domain) }) {
			out = append(out, d.Service)
		}
	}
	return out
}

// outboundIndex finds the clusters of an outbound list by host, so that a call is checked
// against the few clusters of its host rather than a whole mesh's. It keeps the index of the
// last lists it saw: the predictor gives the proxies of one scope the same list, and the
// workloads come grouped by namespace. Not safe for concurrent use.
type outboundIndex struct {
	m map[outboundKey]map[string][]int
}

type outboundKey struct {
	first *predict.Cluster
	n     int
}

const outboundIndexSize = 16

// cut is traffic.Cut(calls, outbound), given only the clusters of the calls' hosts.
func (x *outboundIndex) cut(calls []traffic.Call, outbound []predict.Cluster) []traffic.Call {
	if len(outbound) == 0 {
		return traffic.Cut(calls, nil)
	}
	k := outboundKey{&outbound[0], len(outbound)}
	byHost, ok := x.m[k]
	if !ok {
		byHost = map[string][]int{}
		for i, c := range outbound {
			byHost[c.FQDN] = append(byHost[c.FQDN], i)
		}
		if x.m == nil || len(x.m) >= outboundIndexSize {
			x.m = make(map[outboundKey]map[string][]int, outboundIndexSize)
		}
		x.m[k] = byHost
	}
	var relevant []predict.Cluster
	var hosts []string
	for _, c := range calls {
		if slices.Contains(hosts, c.Host) {
			continue
		}
		hosts = append(hosts, c.Host)
		for _, i := range byHost[c.Host] {
			relevant = append(relevant, outbound[i])
		}
	}
	return traffic.Cut(calls, relevant)
}

func callKey(c traffic.Call) string {
	return fmt.Sprintf("%s|%d|%t", c.Host, c.Port, c.TCP)
}
