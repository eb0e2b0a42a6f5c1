package census

import "github.com/meshscope/terraform-provider-meshscope/internal/problem"

// The census's problem codes (MS4xxx).
var (
	CodeRunsNoSidecar = problem.Define("MS4001", problem.Error, "census", "Proxy Runs No Sidecar",
		"The workload or pod asked about runs no Envoy sidecar (not injected, ambient, host network, a gateway, proxyless gRPC or no replicas), so no Sidecar resource configures it and no sidecar cluster list can be predicted for it.")
	CodeInjectionAssumed = problem.Define("MS4002", problem.Warning, "census", "Injection Assumed",
		"The inventory lacks the Namespace of a workload, so whether Istio injects it is not known; it is counted as a sidecar.")
)

// CodeVMsNotModelled: the inventory holds VM proxies (C11).
var CodeVMsNotModelled = problem.Define("MS4003", problem.Warning, "census", "VM Proxies Not Modelled",
	"The inventory holds WorkloadEntries or WorkloadGroups: VM proxies, sidecars whose clusters meshscope does not predict or review.")
