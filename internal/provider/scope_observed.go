package provider

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// callTarget is "host:port", or "host" when the port is unknown.
func callTarget(c traffic.Call) string {
	if c.Port != 0 {
		return c.Host + ":" + strconv.Itoa(c.Port)
	}
	return c.Host
}

// fixText words what lets a call through: "add" the element, or, when the compiler refuses
// that element in this namespace, why no scope of the namespace can route it.
func fixText(f review.Fix) string {
	switch {
	case f.Dependency.Service == "":
		return "add a ServiceEntry for the host to the mesh, then declare it as a dependency"
	case f.Refused != nil:
		return "no scope of this namespace can route it, " + f.Dependency.Element() + " is refused: " + f.Refusal()
	}
	return "add " + f.Dependency.Element()
}

// addObserved reports, per reviewed workload, the observed calls the scope would cut (a warning,
// or an error with observed_traffic = "error"), and the calls that leave the registry today.
// Each message lists at most limit calls, and counts them all.
func addObserved(diags *diag.Diagnostics, src *evidenceSource, window string, reviews []review.Workload, limit int) {
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
				line := fmt.Sprintf("  - %s: %s", callTarget(c.Call), c.Amount())
				if c.Passthrough {
					line += ", through PassthroughCluster today"
				}
				if c.Fix.Declarable() {
					adds++
				} else {
					refused++
				}
				lines = append(lines, line+"; "+fixText(c.Fix))
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
				diags.AddAttributeError(path.Root("dependencies"), review.CodeCutsObservedCalls.Summary(), detail)
			} else {
				diags.AddAttributeWarning(path.Root("dependencies"), review.CodeCutsObservedCalls.Summary(), detail)
			}
		}
		if len(o.Rerouted) > 0 {
			var lines []string
			for _, r := range firstN(o.Rerouted, limit) {
				lines = append(lines, fmt.Sprintf("  - %s: %s, which the VirtualService %s routes to from %s; %s",
					callTarget(r.Call), r.Amount(), r.VirtualService, r.From, fixText(r.Fix)))
			}
			if len(o.Rerouted) > limit {
				lines = append(lines, fmt.Sprintf("  - and %d more", len(o.Rerouted)-limit))
			}
			diags.AddAttributeWarning(path.Root("dependencies"), review.CodeReroutedHostNotImported.Summary(),
				fmt.Sprintf("Under this scope the workload %q would have no cluster for a host whose VirtualService routes to a "+
					"host it called over the last %s (%s):\n%s\nIstio's metrics name the host after routing, so these calls may "+
					"be calls to the VirtualService's host. Without that host the VirtualService is not imported, and its calls "+
					"lose their route: under ALLOW_ANY they pass through to the service's address, bypassing the VirtualService "+
					"and mTLS; under REGISTRY_ONLY they fail. Declare the VirtualService's host (which imports the VirtualService "+
					"and its destinations); if the workload calls only the destination directly, this warning can be ignored.",
					rv.Key, window, src.describe(), strings.Join(lines, "\n")))
		}
		if len(o.Outside) > 0 {
			var lines []string
			for _, c := range firstN(o.Outside, limit) {
				fix := fixText(c.Fix)
				how := "through PassthroughCluster"
				if c.Class == traffic.ClassBlackHole {
					how = "dropped into BlackHoleCluster (failing)"
				}
				if c.Host == "" {
					fix = namelessFix(c.Call)
				}
				lines = append(lines, fmt.Sprintf("  - %s: %s %s; %s", displayHost(c.Call), c.Amount(), how, fix))
			}
			if len(o.Outside) > limit {
				lines = append(lines, fmt.Sprintf("  - and %d more", len(o.Outside)-limit))
			}
			diags.AddAttributeWarning(path.Root("dependencies"), review.CodeCallsOutsideRegistry.Summary(),
				fmt.Sprintf("The workload %q called destinations the mesh registry does not hold over the last %s (%s):\n%s\n"+
					"Calls through PassthroughCluster bypass mTLS, routing and telemetry, and fail under REGISTRY_ONLY.",
					rv.Key, window, src.describe(), strings.Join(lines, "\n")))
		}
		if len(o.Unknown) > 0 {
			var hosts []string
			for _, c := range firstN(o.Unknown, limit) {
				hosts = append(hosts, fmt.Sprintf("%s (%s)", callTarget(c), c.Amount()))
			}
			diags.AddAttributeWarning(path.Root("dependencies"), review.CodeHostsNotInInventory.Summary(),
				fmt.Sprintf("The workload %q called %d service host(s) over the last %s that the inventory does not hold: %s. "+
					"Their calls are not checked. The inventory is likely incomplete: add the manifests of those services.",
					rv.Key, len(o.Unknown), window, strings.Join(hosts, ", ")))
		}
	}
}

// namelessFix is what to do about calls through PassthroughCluster that Istio could not name.
func namelessFix(c traffic.Call) string {
	fix := "find the destination in the proxy's access log: an external address needs a ServiceEntry, a service of the mesh a dependency"
	if len(c.Possibly) > 0 {
		fix = "possibly " + strings.Join(c.Possibly, " or ") + " (a hint, not evidence: its server counted as many " +
			"connections from a caller it could not name, as plaintext calls without mTLS look); " + fix
	}
	return fix
}

// displayHost names a call's host, or says that Istio could not.
func displayHost(c traffic.Call) string {
	if c.Host == "" {
		return "an address Istio could not name (a TCP connection)"
	}
	return callTarget(c)
}
