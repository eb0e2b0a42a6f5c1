package review

import (
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// The review's problem codes (MS3xxx): what a surface reports about a reviewed workload.
var (
	CodeDropsRoutedHost = define("MS3001", problem.Warning, "Scope Drops Routed Host",
		"A workload loses its clusters for a host that a VirtualService it keeps in scope routes to: calls along that route would fail.")
	CodeRootNamespaceNotInScope = define("MS3002", problem.Warning, "Root Namespace Not In Scope",
		"A workload keeps no cluster for a service of the mesh root namespace, though it has some today.")
	CodeBudgetExceeded = define("MS3003", problem.Error, "Cluster Budget Exceeded",
		"A workload the scope governs would hold more CDS clusters than the scope's budget (max_clusters).")
	CodeCutsObservedCalls = define("MS3004", problem.Warning, "Scope Cuts Observed Calls",
		"A workload called destinations over the window that it would have no cluster for under the scope (an error when the surface is set to fail on it).")
	CodeCallsOutsideRegistry = define("MS3005", problem.Warning, "Observed Calls Outside The Registry",
		"A workload called destinations the mesh registry does not hold (through PassthroughCluster, or into BlackHoleCluster).")
	CodeHostsNotInInventory = define("MS3006", problem.Warning, "Observed Hosts Not In The Inventory",
		"A workload called service hosts the inventory does not hold, so those calls are not checked.")
	CodeRiskyTightening = define("MS3007", problem.Warning, "Risky Scope Tightening",
		"A tightening the mesh configuration points out as unsafe, of a kind without a code of its own.")
	CodeSelectsNoSidecar = define("MS3008", problem.Warning, "Scope Selects No Sidecar",
		"Every workload the scope selects runs no sidecar (not injected, ambient, host network, no replicas...): the Sidecar would configure nothing.")
	CodeEnvoyFilterNotModelled = define("MS3010", problem.Warning, "EnvoyFilter Patches Not Modelled",
		"EnvoyFilters patch the clusters of a reviewed workload in ways meshscope does not apply (MERGE, undecidable proxy matches), so its counts may differ from istiod's by those patches; CLUSTER ADD and REMOVE are applied.")
	CodeSelectedWithoutSidecar = define("MS3011", problem.Warning, "Selected Workloads Without Sidecar",
		"Some of the workloads the scope selects run no sidecar: they are left out of the review, and the Sidecar does nothing to them.")
	CodeProxyFeaturesNotModelled = define("MS3012", problem.Warning, "Proxy Features Not Modelled",
		"A reviewed workload's pods ask for something istiod adds clusters for that meshscope does not predict (HBONE listening, a credential socket).")
	CodeReroutedHostNotImported = define("MS3013", problem.Warning, "Rerouted Host Not Imported",
		"A workload's calls counted under a host reach it through a VirtualService of another host that the workload would have no cluster for. Istio's metrics name the host after routing, so the calls may be calls to the VirtualService's host: without it the VirtualService is not imported, and those calls lose their route.")
	CodeCallNotReached = define("MS3014", problem.Error, "Declared Call Not Reached",
		"A declared call, followed through the listeners and routes a workload would get under the scope, does not reach its service: the proxy does not import it, no listener takes its port, another service's filter chain takes its port, its HTTP routes are lost to a TCP listener, or its route has no virtual host for a name it may be called by.")
	CodeEndpointsNotInInventory = define("MS3015", problem.Warning, "Endpoints Not In The Inventory",
		"A workload's EDS cluster is a Kubernetes Service without a selector whose EndpointSlices the inventory does not hold: its endpoints are not predicted, and none are counted.")
	CodeSelectsGateway = define("MS3009", problem.Error, "Scope Selects A Gateway",
		"The scope selects a gateway. Sidecar resources do not apply to gateways, whose clusters follow other rules.")
)

func define(code problem.Code, level problem.Level, summary, meaning string) problem.Code {
	return problem.Define(code, level, "review", summary, meaning)
}

// RiskCode is the code of a risky tightening the predictor found.
func RiskCode(kind string) problem.Code {
	switch kind {
	case predict.RiskVirtualServiceDestination:
		return CodeDropsRoutedHost
	case predict.RiskRootNamespace:
		return CodeRootNamespaceNotInScope
	case RiskReroutedHostDropped:
		return CodeReroutedHostNotImported
	}
	return CodeRiskyTightening
}
