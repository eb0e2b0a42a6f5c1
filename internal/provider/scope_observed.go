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
		if len(o.Outside) > 0 {
			var lines []string
			for _, c := range firstN(o.Outside, limit) {
				fix := fixText(c.Fix)
				how := "through PassthroughCluster"
				if c.Class == traffic.ClassBlackHole {
					how = "dropped into BlackHoleCluster (failing)"
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

// displayHost names a call's host, or says that Istio could not.
func displayHost(c traffic.Call) string {
	if c.Host == "" {
		return "an address Istio could not name (a TCP connection)"
	}
	return callTarget(c)
}
