package adopt

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// NoteLimit is the most comment lines a scope lists for calls it does not plan, and the most
// workloads and dropped hosts a line names; the counts are always full.
const NoteLimit = 25

// build makes one group's scope and checks it with the compiler, as the provider will.
func (n *nsPlan) build(g *group) (Scope, bool) {
	ns := n.ns
	lead := g.members[0]
	s := Scope{Namespace: ns, Selector: g.selector}
	var calls []traffic.Call
	for _, m := range g.members {
		calls = append(calls, m.calls...)
		s.Workloads = append(s.Workloads, m.id())
	}
	s.Header = append(s.Header, fmt.Sprintf("%s: the calls observed over %s.", strings.Join(capped(s.Workloads, NoteLimit), ", "), n.ev.Span()))
	if len(g.members) > 1 {
		s.Header = append(s.Header, "One scope for these workloads: a selector that selects one of them selects the others too, and two scopes must never select one workload.")
	}
	base := lead.w.Name
	if g.adopt != nil {
		sc := g.adopt
		base = sc.Name
		s.Name = sc.Name
		s.Adopts = ns + "/" + sc.Name
		decl, _ := scope.Decompile(sc, n.opts.Scope, n.inv.Mesh.RootNamespace)
		s.Ingress, s.OutboundTrafficPolicy = decl.Ingress, decl.OutboundTrafficPolicy
		if n.opts.Import {
			s.Import = true
			s.Header = append(s.Header, fmt.Sprintf("Adopts the existing Sidecar %s/%s (%s): the import block takes it over, reading it from the cluster "+
				"(the provider's kubernetes block) or, offline, from the provider's manifests.", ns, sc.Name, sc.Source))
		} else {
			s.Header = append(s.Header, fmt.Sprintf("Adopts the existing Sidecar %s/%s (%s) under its name: drop its manifest from the provider's manifests, "+
				"or import it (id = %q).", ns, sc.Name, sc.Source, s.Adopts))
		}
		if dropped := review.Unobserved(calls, decl.Dependencies, ns, n.domain); len(dropped) > 0 {
			s.Header = append(s.Header, fmt.Sprintf("It imports today, and this scope drops (no calls over %s; keep any that serve rarer calls, such as a monthly job): %s.",
				n.ev.Span(), quoteList(dropped)))
		}
	} else {
		s.Name = n.sidecarName(g, lead)
		if fb := g.fallback; fb != nil {
			what := "namespace default"
			if fb.Namespace != ns {
				what = "mesh-wide default"
			}
			s.Header = append(s.Header, fmt.Sprintf("Takes precedence over the %s Sidecar %s/%s, which governs %s today.", what, fb.Namespace, fb.Name, them(len(g.members))))
		}
	}
	name := s.Name
	if name == "" {
		name = scope.DefaultName(s.Selector)
	}
	n.taken[name] = true
	if others := n.alsoSelected(g); len(others) > 0 {
		s.Header = append(s.Header, fmt.Sprintf("Also selects, without calls observed: %s.", quoteList(others)))
	}
	s.Resource = n.resourceName(ns, base)

	if !n.check(&s, calls) {
		return s, false
	}
	s.Notes = n.notes(g, s.Notes)
	return s, true
}

// notes says, for every call that is not a dependency, what it is and what to add for it.
func (n *nsPlan) notes(g *group, notes []string) []string {
	var lines []string
	for _, m := range g.members {
		prefix := ""
		if len(g.members) > 1 {
			prefix = m.w.Name + ": "
		}
		for _, c := range m.calls {
			if c.Dependency() != "" {
				continue
			}
			what := c.Describe(n.ev.Span())
			var line string
			switch c.Class {
			case traffic.ClassPassthrough:
				switch {
				case c.Host == "":
					line = fmt.Sprintf("%s went through PassthroughCluster. ", what)
					if len(c.Possibly) > 0 {
						line += fmt.Sprintf("Possibly %s: its server counted as many calls from a caller it could not name, as a plaintext call without mTLS looks; a hint, not evidence. ", strings.Join(c.Possibly, " or "))
					}
					line += "Find it in the proxy's access log: an external address needs a ServiceEntry; a service of the mesh needs to be declared, and an in-mesh Service called through PassthroughCluster was not in the caller's scope."
				case net.ParseIP(c.Host) != nil:
					line = fmt.Sprintf("%s went through PassthroughCluster: add a ServiceEntry whose addresses hold %s, with the host name it serves.", what, c.Host)
				default:
					line = fmt.Sprintf("%s went through PassthroughCluster: %s is not in the registry; add a ServiceEntry for it (mTLS origination, routing and telemetry; REGISTRY_ONLY would block it).", what, c.Host)
				}
			case traffic.ClassBlackHole:
				if dep := n.registryDependency(c); dep != "" {
					line = fmt.Sprintf("%s were dropped (BlackHoleCluster): %s is in the registry; if the workload needs it, add { service = %q }.", what, c.Host, dep)
				} else {
					line = fmt.Sprintf("%s were dropped (BlackHoleCluster): %s is not in the registry; if the workload needs it, add a ServiceEntry for it.", what, orUnnamed(c.Host))
				}
			case traffic.ClassUnknown:
				line = fmt.Sprintf("%s: the inventory does not hold %s; give its manifests with -f and run suggest again.", what, c.Host)
			default:
				continue
			}
			lines = append(lines, prefix+line)
		}
	}
	if len(lines) > NoteLimit {
		lines = append(lines[:NoteLimit], fmt.Sprintf("... and %d more calls not suggested.", len(lines)-NoteLimit))
	}
	return append(notes, lines...)
}

func orUnnamed(h string) string {
	if h == "" {
		return "the address"
	}
	return h
}

// registryDependency is the dependency that would import the host of a call the registry
// holds (a Kubernetes Service or a ServiceEntry host), or "".
func (p *Planner) registryDependency(c traffic.Call) string {
	if c.Service != "" {
		return c.Service
	}
	if p.registry[c.Host] {
		return c.Host
	}
	for _, w := range p.wildcard {
		if istioconfig.HostSubsetOf(c.Host, w) {
			return c.Host
		}
	}
	return ""
}

// capped is the first n of l, then how many more.
func capped(l []string, n int) []string {
	if len(l) > n {
		return append(slices.Clone(l[:n]), fmt.Sprintf("and %d more", len(l)-n))
	}
	return l
}

// quoteList joins at most NoteLimit names, then counts the rest.
func quoteList(l []string) string { return strings.Join(capped(l, NoteLimit), ", ") }

// sortedKeysOf is the keys of m, sorted.
func sortedKeysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
