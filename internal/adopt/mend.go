package adopt

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// mendable says whether a problem the compiler reports on a dependency is one the planner
// mends by leaving ports out of every dependency: a dependency that would widen the Sidecar
// to every port anyway (a port number also used by UDP), or a port the destination does not
// expose. It is the only place the planner tells one compiler problem from another.
func mendable(pb scope.Problem) bool {
	switch pb.Code {
	case scope.CodeDependencyWidensEveryPort, scope.CodePortNotExposed, scope.CodeNamespacePortNotExposed:
		return true
	}
	return false
}

// check compiles the scope as the provider will and mends what the compiler refuses: a
// dependency it cannot resolve or export to the namespace becomes a note with the compiler's
// reason; ports it cannot scope by (a port the destination does not expose, a number also used
// by UDP) are left out for every dependency. Other warnings are reported. A scope that still
// fails, or that selects a workload another Sidecar of the inventory selects, is not planned.
func (n *nsPlan) check(s *Scope, calls []traffic.Call) bool {
	res, warns, refused, ok := n.mend(s, calls)
	if !ok {
		return false
	}
	for _, pb := range warns {
		n.warn(Warning{Kind: CompilerWarning, Resource: s.Resource, Problem: &pb})
		s.Notes = append(s.Notes, fmt.Sprintf("Warning: %s: %s", pb.Summary, pb.Detail))
	}
	for _, pb := range scope.Conflicts(n.nsInv, res.Sidecar) {
		if s.Adopts == "" {
			n.warn(Warning{Kind: NotSuggested, Resource: s.Resource, Problem: &pb})
			return false
		}
		// An adopted Sidecar that overlaps another already does so in the mesh today.
		n.warn(Warning{Kind: AdoptedConflict, Resource: s.Resource, Problem: &pb})
		s.Notes = append(s.Notes, fmt.Sprintf("Warning: %s: %s", pb.Summary, pb.Detail))
	}
	for _, svc := range sortedKeysOf(refused) {
		pb := refused[svc]
		evidence := n.leftOutEvidence(svc, calls)
		n.warn(Warning{Kind: LeftOut, Resource: s.Resource, Dependency: svc, Evidence: evidence, Problem: &pb})
		if evidence != "" {
			evidence = " (" + evidence + ")"
		}
		s.Notes = append(s.Notes, fmt.Sprintf("%s%s is left out: %s: %s", svc, evidence, pb.Summary, pb.Detail))
	}
	return true
}

// mend compiles the scope's dependencies until the compiler accepts them, leaving out each
// dependency it refuses (refused, by dependency) and, once, every port (mendable). It returns
// the compiled scope and the compiler's warnings; when the compiler refuses the scope as a
// whole, it warns NotSuggested and returns false.
func (n *nsPlan) mend(s *Scope, calls []traffic.Call) (*scope.Result, []scope.Problem, map[string]scope.Problem, bool) {
	refused := map[string]scope.Problem{}
	portless := false
	for attempt := 0; ; attempt++ {
		s.Dependencies = n.dependencies(calls, refused, portless)
		decl := s.Declaration()
		res, problems := scope.Compile(n.compiling.Inventory(decl), decl, n.opts.Scope)
		retry := false
		var fatal, warns []scope.Problem
		for _, pb := range problems {
			dep := pb.Attribute == scope.AttrDependencies && pb.Index >= 0 && pb.Index < len(s.Dependencies)
			switch {
			case dep && !portless && mendable(pb):
				portless, retry = true, true
				s.Header = append(s.Header, fmt.Sprintf("No dependency lists ports, as the compiler would not scope %q by port: %s", s.Dependencies[pb.Index].Service, pb.Detail))
			case dep && !pb.Warning:
				refused[s.Dependencies[pb.Index].Service] = pb
				retry = true
			case pb.Warning:
				warns = append(warns, pb)
			default:
				fatal = append(fatal, pb)
			}
		}
		if len(fatal) > 0 || (res == nil && !retry) || attempt > len(calls)+2 {
			for _, pb := range fatal {
				n.warn(Warning{Kind: NotSuggested, Resource: s.Resource, Problem: &pb})
			}
			if len(fatal) == 0 {
				n.warn(Warning{Kind: NotSuggested, Resource: s.Resource})
			}
			return nil, nil, nil, false
		}
		if !retry {
			return res, warns, refused, true
		}
	}
}

// leftOutEvidence is the count of the calls to a dependency left out, and whether they go
// through PassthroughCluster today; "" when they are not one dependency.
func (n *nsPlan) leftOutEvidence(svc string, calls []traffic.Call) string {
	var of []traffic.Call
	for _, c := range calls {
		if c.Dependency() == svc {
			of = append(of, c)
		}
	}
	deps := traffic.Dependencies(of)
	if len(deps) != 1 {
		return ""
	}
	evidence := deps[0].CountPhrase(n.ev.Span())
	if slices.ContainsFunc(of, func(c traffic.Call) bool { return c.Passthrough }) {
		evidence += ", through PassthroughCluster today"
	}
	return evidence
}

// dependencies are the calls' dependencies, less those refused, each with its evidence.
func (n *nsPlan) dependencies(calls []traffic.Call, refused map[string]scope.Problem, portless bool) []Dependency {
	kept := calls
	if len(refused) > 0 {
		kept = nil
		for _, c := range calls {
			if _, ok := refused[c.Dependency()]; !ok {
				kept = append(kept, c)
			}
		}
	}
	passthrough := map[string]bool{}
	for _, c := range kept {
		if c.Passthrough && c.Dependency() != "" {
			passthrough[c.Dependency()] = true
		}
	}
	var out []Dependency
	at := map[string]int{} // the index in out of each dependency
	for _, d := range traffic.Dependencies(kept) {
		if portless {
			d.Ports = nil
		}
		evidence := d.CountPhrase(n.ev.Span())
		if passthrough[d.Service] {
			evidence += ", through PassthroughCluster today"
		}
		at[d.Service] = len(out)
		out = append(out, Dependency{Dependency: d, Evidence: evidence})
	}
	// Istio's metrics name the host after routing: a call to a VirtualService's host that routes
	// elsewhere is counted under the destination. Declaring the VirtualService's host imports the
	// VirtualService and its destinations; the destination stays declared, since the workload
	// may also call it directly.
	reroutes := n.pred.Reroutes(n.ns)
	n0 := len(out)
	for _, c := range kept {
		if !c.InRegistry() {
			continue
		}
		for _, r := range reroutes[c.Host] {
			svc := cmp.Or(r.FromService, r.From)
			if _, bad := refused[svc]; bad {
				continue
			}
			why := fmt.Sprintf("the VirtualService %s routes it to %s, under which Istio counts its calls", r.VirtualService, c.Dependency())
			if i, ok := at[svc]; ok {
				if !strings.Contains(out[i].Evidence, why) {
					out[i].Evidence += "; " + why
				}
				continue
			}
			if to := &out[at[c.Dependency()]]; !strings.Contains(to.Evidence, "possibly calls to") {
				to.Evidence += fmt.Sprintf(", possibly calls to %s that the VirtualService %s routes here", svc, r.VirtualService)
			}
			d := Dependency{Dependency: traffic.Dependency{Service: svc}, Evidence: why}
			if !portless {
				for _, p := range r.FromPorts {
					d.Ports = append(d.Ports, uint32(p))
				}
			}
			at[svc] = len(out)
			out = append(out, d)
		}
	}
	if len(out) > n0 {
		slices.SortFunc(out, func(a, b Dependency) int { return strings.Compare(a.Service, b.Service) })
	}
	return out
}
