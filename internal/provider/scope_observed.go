package provider

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// observedReview is one reviewed workload checked against the calls it made.
type observedReview struct {
	// Cut are the calls to services of the registry that the workload would no longer route
	// to their service under the scope.
	Cut []traffic.Call
	// Unobserved are the declared dependencies, as written, that no call matched.
	Unobserved []string
	// Outside are calls that leave the registry today: through PassthroughCluster to a host
	// the registry does not hold, or into BlackHoleCluster. Unknown are calls to service
	// clusters of hosts the inventory lacks.
	Outside, Unknown []traffic.Call
}

// observeScope checks every reviewed workload against the evidence: the calls it made that the
// head prediction (the inventory with this scope's Sidecar) would cut, and the declared
// dependencies nothing called.
func observeScope(ev *traffic.Evidence, head *predict.Predictor, decl scope.Declaration, reviews []workloadReview, domain string) {
	for i := range reviews {
		rv := &reviews[i]
		calls := ev.Calls(rv.Proxy.Namespace, rv.Proxy.Name)
		o := &observedReview{Unobserved: []string{}}
		if len(calls) > 0 {
			o.Cut = traffic.Cut(calls, head.Outbound(rv.Proxy.Proxy()))
		}
		for _, c := range calls {
			switch c.Class {
			case traffic.ClassPassthrough, traffic.ClassBlackHole:
				o.Outside = append(o.Outside, c)
			case traffic.ClassUnknown:
				o.Unknown = append(o.Unknown, c)
			}
		}
		for _, d := range decl.Dependencies {
			seen := false
			for _, c := range calls {
				if c.Matches(d.Service, d.Ports, decl.Namespace, domain) {
					seen = true
					break
				}
			}
			if !seen {
				o.Unobserved = append(o.Unobserved, d.Service)
			}
		}
		rv.Observed = o
	}
}

// callTarget is "host:port", or "host" when the port is unknown.
func callTarget(c traffic.Call) string {
	if c.Port != 0 {
		return c.Host + ":" + strconv.Itoa(c.Port)
	}
	return c.Host
}

// callDependency is the dependency that lets the call through. With portLevel (every declared
// dependency lists ports), it lists the call's port when certain. false when the call has no
// dependency form (not a host of the registry).
func callDependency(c traffic.Call, portLevel bool) (scope.Dependency, bool) {
	deps := traffic.Dependencies([]traffic.Call{c})
	if len(deps) == 0 {
		return scope.Dependency{}, false
	}
	d := scope.Dependency{Service: deps[0].Service}
	if portLevel {
		d.Ports = deps[0].Ports
	}
	return d, true
}

// dependencyElement is a dependencies element in HCL.
func dependencyElement(d scope.Dependency) string {
	if len(d.Ports) == 0 {
		return fmt.Sprintf("{ service = %q }", d.Service)
	}
	ports := make([]string, len(d.Ports))
	for i, p := range d.Ports {
		ports[i] = strconv.Itoa(int(p))
	}
	return fmt.Sprintf("{ service = %q, ports = [%s] }", d.Service, strings.Join(ports, ", "))
}

// routableFunc answers whether a dependency can be declared in the scope's namespace at all:
// "" when it can, else the compiler's reason (a Service not exported to the namespace, a port it
// does not expose).
type routableFunc func(scope.Dependency) string

// fixFor is what lets a call in registry through: "add" the element, or, when the compiler
// refuses that element in this namespace, why no scope of the namespace can route it.
func fixFor(c traffic.Call, portLevel bool, routable routableFunc) string {
	d, ok := callDependency(c, portLevel)
	if !ok {
		return "add a ServiceEntry for the host to the mesh, then declare it as a dependency"
	}
	if why := routable(d); why != "" {
		return "no scope of this namespace can route it, " + dependencyElement(d) + " is refused: " + why
	}
	return "add " + dependencyElement(d)
}

// addObserved reports, per reviewed workload, the observed calls the scope would cut (a warning,
// or an error with observed_traffic = "error"), and the calls that leave the registry today.
// Each message lists at most limit calls, and counts them all.
func addObserved(diags *diag.Diagnostics, src *evidenceSource, window string, decl scope.Declaration, reviews []workloadReview, limit int, routable routableFunc) {
	portLevel := len(decl.Dependencies) > 0
	for _, d := range decl.Dependencies {
		if len(d.Ports) == 0 {
			portLevel = false
		}
	}
	limit = max(limit, 1)
	for _, rv := range reviews {
		o := rv.Observed
		if o == nil {
			continue
		}
		if len(o.Cut) > 0 {
			var lines []string
			adds, refused := 0, 0
			for _, c := range firstN(o.Cut, limit) {
				line := fmt.Sprintf("  - %s: %s", callTarget(c), c.Amount())
				if c.Passthrough {
					line += ", through PassthroughCluster today"
				}
				fix := fixFor(c, portLevel, routable)
				if strings.HasPrefix(fix, "add ") {
					adds++
				} else {
					refused++
				}
				lines = append(lines, line+"; "+fix)
			}
			var advice []string
			if adds > 0 {
				advice = append(advice, "Add the elements above to dependencies.")
			}
			if refused > 0 {
				advice = append(advice, "Calls no scope can route need their Service exported to the namespace first.")
			}
			if len(o.Cut) > limit {
				lines = append(lines, fmt.Sprintf("  - and %d more", len(o.Cut)-limit))
			}
			detail := fmt.Sprintf("Under this scope the workload %q would have no cluster for %d destination(s) it called over "+
				"the last %s (%s):\n%s\nUnder ALLOW_ANY these calls would fall to PassthroughCluster and lose mTLS, routing and "+
				"telemetry; under REGISTRY_ONLY they would fail. %s",
				rv.Key, len(o.Cut), window, src.describe(), strings.Join(lines, "\n"), strings.Join(advice, " "))
			if src.mode == observedError {
				diags.AddAttributeError(path.Root("dependencies"), "Scope Cuts Observed Calls", detail)
			} else {
				diags.AddAttributeWarning(path.Root("dependencies"), "Scope Cuts Observed Calls", detail)
			}
		}
		if len(o.Outside) > 0 {
			var lines []string
			for _, c := range firstN(o.Outside, limit) {
				fix := "add a ServiceEntry for the host to the mesh, then declare it as a dependency"
				if c.InRegistry() {
					fix = fixFor(c, portLevel, routable)
				}
				how := "through PassthroughCluster"
				if c.Class == traffic.ClassBlackHole {
					how = "dropped into BlackHoleCluster (failing)"
				}
				lines = append(lines, fmt.Sprintf("  - %s: %s %s; %s", displayHost(c), c.Amount(), how, fix))
			}
			if len(o.Outside) > limit {
				lines = append(lines, fmt.Sprintf("  - and %d more", len(o.Outside)-limit))
			}
			diags.AddAttributeWarning(path.Root("dependencies"), "Observed Calls Outside The Registry",
				fmt.Sprintf("The workload %q called destinations the mesh registry does not hold over the last %s (%s):\n%s\n"+
					"Calls through PassthroughCluster bypass mTLS, routing and telemetry, and fail under REGISTRY_ONLY.",
					rv.Key, window, src.describe(), strings.Join(lines, "\n")))
		}
		if len(o.Unknown) > 0 {
			var hosts []string
			for _, c := range firstN(o.Unknown, limit) {
				hosts = append(hosts, fmt.Sprintf("%s (%s)", callTarget(c), c.Amount()))
			}
			diags.AddAttributeWarning(path.Root("dependencies"), "Observed Hosts Not In The Inventory",
				fmt.Sprintf("The workload %q called %d service host(s) over the last %s that the inventory does not hold: %s. "+
					"Their calls are not checked. The inventory is likely incomplete: add the manifests of those services.",
					rv.Key, len(o.Unknown), window, strings.Join(hosts, ", ")))
		}
	}
}

// displayHost names a call's host, or says that Istio could not.
func displayHost(c traffic.Call) string {
	if c.Host == "" {
		return "an address Istio could not name (a TCP connection)"
	}
	return callTarget(c)
}
