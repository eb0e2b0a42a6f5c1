package provider

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// addRisks turns the risky tightenings of the review into warnings on
// dependencies. rootWarned says the compiler already warned that the scope
// imports nothing from the root namespace; the per-workload warning would only
// repeat it.
func addRisks(diags *diag.Diagnostics, reviews []review.Workload, rootWarned bool, domainSuffix string) {
	for _, rv := range reviews {
		for _, k := range rv.Risks {
			switch review.RiskCode(k.Kind) {
			case review.CodeDropsRoutedHost:
				diags.AddAttributeWarning(path.Root("dependencies"),
					review.CodeDropsRoutedHost.Summary(),
					fmt.Sprintf("Under this scope the workload %q loses its clusters for %q, but a VirtualService it keeps "+
						"in scope routes to that host (%s). Calls along that route would fail. Declare %q as a dependency "+
						"(with the ports the route uses), or change the VirtualService.",
						rv.Key, k.Host, k.Message, dependencyName(k.Host, domainSuffix)))
			case review.CodeRootNamespaceNotInScope:
				if rootWarned {
					continue
				}
				diags.AddAttributeWarning(path.Root("dependencies"),
					review.CodeRootNamespaceNotInScope.Summary(),
					fmt.Sprintf("Under this scope the workload %q keeps no cluster for a service of the mesh root namespace, "+
						"though it has some today (%s). Proxies reach istiod, telemetry and tracing through it. Check the "+
						"provider's system_hosts, or declare those services as dependencies.", rv.Key, k.Message))
			default:
				diags.AddAttributeWarning(path.Root("dependencies"), review.CodeRiskyTightening.Summary(),
					fmt.Sprintf("Under this scope the workload %q: %s.", rv.Key, k.Message))
			}
		}
	}
}

// dependencyName turns a Kubernetes service FQDN into the "name.namespace" form
// a dependency is usually written in; other hosts are returned as they are.
func dependencyName(host, domainSuffix string) string {
	if name, ok := strings.CutSuffix(host, ".svc."+domainSuffix); ok {
		return name
	}
	return host
}

// checkBudget reports an error on max_clusters for every workload the scope governs that
// would hold more clusters than the budget. With no selected workload in the inventory, the
// predicted count of a selected pod is checked.
func checkBudget(diags *diag.Diagnostics, budget types.Int64, s *review.Scope, decl scope.Declaration) {
	if budget.IsNull() || budget.IsUnknown() {
		return
	}
	limit := budget.ValueInt64()
	over, overPod := s.OverBudget(int(min(limit, math.MaxInt32)))
	if overPod {
		diags.AddAttributeError(path.Root("max_clusters"),
			review.CodeBudgetExceeded.Summary(),
			fmt.Sprintf("A pod labelled %s in namespace %q would hold %d Envoy clusters under this scope, over "+
				"max_clusters = %d. Narrow dependencies (list their ports to make the Sidecar port-level), or raise max_clusters.",
				formatSelector(decl.Selector), decl.Namespace, s.ExpectedClusters, limit))
	}
	for _, rv := range over {
		diags.AddAttributeError(path.Root("max_clusters"),
			review.CodeBudgetExceeded.Summary(),
			fmt.Sprintf("The workload %q would hold %d Envoy clusters under this scope (%d today), over max_clusters = %d. "+
				"Narrow dependencies (list their ports to make the Sidecar port-level), or raise max_clusters.",
				rv.Key, rv.After, rv.Before, limit))
	}
}

// addUnreached refuses, on the dependency's element, each declared call that a governed workload
// would not get through to its service (R62), naming the step where it goes astray and the fix.
func addUnreached(diags *diag.Diagnostics, ws []review.Workload, deps []attr.Value) {
	for _, w := range ws {
		for _, c := range w.Unreached {
			p := path.Root("dependencies")
			if c.Dependency >= 0 && c.Dependency < len(deps) {
				p = p.AtSetValue(deps[c.Dependency])
			}
			diags.AddAttributeError(p, review.CodeCallNotReached.Summary(),
				fmt.Sprintf("Under this scope, a call from %q to %s port %d would not reach the service: at the %s step, %s. %s "+
					"Follow the call with `terraform-provider-meshscope proxy-config listener` and `route` for this workload.",
					w.Key, c.Host, c.Port, c.Step, c.Why, unreachedFix(c.Call)))
		}
	}
}

// unreachedFix is what to change for a call astray at its step.
func unreachedFix(c predict.Call) string {
	switch c.Step {
	case predict.StepImport:
		return "The scope's Sidecar does not import that service port: check that the service exposes the port over TCP " +
			"and is exported to this namespace."
	case predict.StepListener:
		return fmt.Sprintf("istiod builds no outbound listener on port %d for this proxy (15001, 15006, 15021 and 15090 are the "+
			"sidecar's own ports, where an HTTP service gets none): serve the service on another port.", c.Port)
	case predict.StepFilterChain:
		return "A ServiceEntry without addresses shares its TCP port's listener with every other service there, and the first one's " +
			"filter chain takes every connection: give the ServiceEntries addresses, or put them on ports of their own."
	case predict.StepHTTPRoutes:
		return fmt.Sprintf("Make port %d HTTP for every service on it: declare the protocol of the service's port (a port name "+
			"`http-...` or `appProtocol`), of the other services' on the port, and of any Sidecar egress listener on it.", c.Port)
	case predict.StepVirtualHost:
		return fmt.Sprintf("The name %s does not reach the service's virtual host: another service's host takes it, or no domain "+
			"has it. Call the service by its FQDN %s, or rename the host that takes the name.", c.Name, c.Host)
	}
	return ""
}

// addNoSidecar reports the selected workloads that run no sidecar: a gateway a selector picks
// out is an error (a namespace default leaves gateways alone, as istiod does); a scope all of
// whose workloads run none gets a warning, since its Sidecar would configure nothing.
func addNoSidecar(diags *diag.Diagnostics, s *review.Scope, decl scope.Declaration) {
	if len(decl.Selector) > 0 {
		for _, w := range s.Gateways() {
			diags.AddAttributeError(path.Root("workload_selector"), review.CodeSelectsGateway.Summary(),
				fmt.Sprintf("The selector %s selects %q, which runs a gateway: %s. Istio applies Sidecar resources to sidecars "+
					"only, so this scope cannot narrow it. Narrow workload_selector so that it selects no gateway.",
					formatSelector(decl.Selector), w.Key(), w.Why))
		}
	}
	for _, w := range s.Workloads {
		if len(w.ClusterPatches) > 0 {
			diags.AddAttributeWarning(path.Root("workload_selector"), review.CodeEnvoyFilterNotModelled.Summary(),
				fmt.Sprintf("EnvoyFilters patch the clusters of %q in ways meshscope does not apply: %s. Its "+
					"before, after and expected_clusters may differ from istiod's by what they add, remove or change.",
					w.Key, strings.Join(w.ClusterPatches, "; ")))
		}
		if len(w.ListenerPatches) > 0 {
			diags.AddAttributeWarning(path.Root("workload_selector"), review.CodeEnvoyFilterNotModelled.Summary(),
				fmt.Sprintf("EnvoyFilters patch the listeners of %q in ways meshscope does not apply: %s. Its "+
					"listeners_before and listeners_after may differ from istiod's by what they add, remove or rename.",
					w.Key, strings.Join(w.ListenerPatches, "; ")))
		}
	}
	if len(s.NotModelled) > 0 {
		diags.AddAttributeWarning(path.Root("workload_selector"), review.CodeProxyFeaturesNotModelled.Summary(),
			"The workloads this scope selects get clusters meshscope does not predict, so their before, after and "+
				"expected_clusters may be short of istiod's:\n  "+strings.Join(s.NotModelled, "\n  "))
	}
	if len(s.VMs) > 0 {
		var names []string
		for _, vm := range s.VMs {
			names = append(names, vm.Kind+" "+vm.Key())
		}
		diags.AddAttributeWarning(path.Root("workload_selector"), census.CodeVMsNotModelled.Summary(),
			fmt.Sprintf("This scope's Sidecar also applies to VM proxies, which meshscope does not predict or review: %s. "+
				"Their clusters change too; check them on the VMs (istioctl proxy-config cluster).", strings.Join(names, ", ")))
	}
	if len(s.Assumed) > 0 {
		diags.AddAttributeWarning(path.Root("namespace"), census.CodeInjectionAssumed.Summary(),
			fmt.Sprintf("The inventory does not hold Namespace %q, so whether Istio injects its workloads is not known: "+
				"the %d workload(s) this scope selects are reviewed as sidecars. Add the Namespace's manifest (with its "+
				"istio-injection or istio.io/rev label) to the provider's manifests.", decl.Namespace, len(s.Assumed)))
	}
	if len(s.NoSidecar) > 0 && len(s.Workloads) > 0 && !diags.HasError() {
		diags.AddAttributeWarning(path.Root("workload_selector"), review.CodeSelectedWithoutSidecar.Summary(),
			fmt.Sprintf("%d of the workloads this scope selects run no sidecar, so they are left out of review and "+
				"expected_clusters:\n%s", len(s.NoSidecar), noSidecarLines(s.NoSidecar)))
	}
	if !s.SelectsOnlyNoSidecar() || diags.HasError() {
		return
	}
	diags.AddAttributeWarning(path.Root("workload_selector"), review.CodeSelectsNoSidecar.Summary(),
		fmt.Sprintf("This scope selects no workload that runs a sidecar, so its Sidecar would configure nothing and "+
			"expected_clusters is what a new injected pod with these labels would hold. The workloads it selects:\n%s",
			noSidecarLines(s.NoSidecar)))
}

// noSidecarLines lists up to noSidecarListed workloads without a sidecar, with why.
func noSidecarLines(ws []*census.Workload) string {
	var lines []string
	for i, w := range ws {
		if i == noSidecarListed {
			lines = append(lines, fmt.Sprintf("  ... and %d more", len(ws)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("  %s: %s", w.Key(), w.Why))
	}
	return strings.Join(lines, "\n")
}

// noSidecarListed is how many workloads without a sidecar a warning names.
const noSidecarListed = 5
