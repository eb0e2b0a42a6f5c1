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

// dependencyElement is the dependencies element that lets the call through, in HCL. With
// portLevel (every declared dependency lists ports), it lists the call's port when certain.
func dependencyElement(c traffic.Call, portLevel bool) string {
	deps := traffic.Dependencies([]traffic.Call{c})
	if len(deps) == 0 {
		return ""
	}
	d := deps[0]
	if !portLevel || len(d.Ports) == 0 {
		return fmt.Sprintf("{ service = %q }", d.Service)
	}
	ports := make([]string, len(d.Ports))
	for i, p := range d.Ports {
		ports[i] = strconv.Itoa(int(p))
	}
	return fmt.Sprintf("{ service = %q, ports = [%s] }", d.Service, strings.Join(ports, ", "))
}

// addObserved reports, per reviewed workload, the observed calls the scope would cut (a warning,
// or an error with observed_traffic = "error"), and the calls that leave the registry today.
// Each message lists at most limit calls, and counts them all.
func addObserved(diags *diag.Diagnostics, src *evidenceSource, window string, decl scope.Declaration, reviews []workloadReview, limit int) {
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
			for _, c := range firstN(o.Cut, limit) {
				line := fmt.Sprintf("  - %s: %s %s", callTarget(c), traffic.FormatCount(c.Count), c.Unit())
				if c.Passthrough {
					line += ", through PassthroughCluster today"
				}
				lines = append(lines, line+"; add "+dependencyElement(c, portLevel))
			}
			if len(o.Cut) > limit {
				lines = append(lines, fmt.Sprintf("  - and %d more", len(o.Cut)-limit))
			}
			detail := fmt.Sprintf("Under this scope the workload %q would have no cluster for %d destination(s) it called over "+
				"the last %s (%s):\n%s\nUnder ALLOW_ANY these calls would fall to PassthroughCluster and lose mTLS, routing and "+
				"telemetry; under REGISTRY_ONLY they would fail. Add the elements above to dependencies.",
				rv.Key, len(o.Cut), window, src.describe(), strings.Join(lines, "\n"))
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
					fix = "add " + dependencyElement(c, portLevel)
				}
				how := "through PassthroughCluster"
				if c.Class == traffic.ClassBlackHole {
					how = "dropped into BlackHoleCluster (failing)"
				}
				lines = append(lines, fmt.Sprintf("  - %s: %s %s %s; %s", displayHost(c), traffic.FormatCount(c.Count), c.Unit(), how, fix))
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
				hosts = append(hosts, fmt.Sprintf("%s (%s %s)", callTarget(c), traffic.FormatCount(c.Count), c.Unit()))
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
