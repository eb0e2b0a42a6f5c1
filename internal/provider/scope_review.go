package provider

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// workloadReview is one workload a scope selects, predicted under the inventory
// as it is and under the scope's Sidecar.
type workloadReview struct {
	predict.WorkloadReview
	// Key names the workload in the review attribute and in diagnostics:
	// "namespace/Kind/name".
	Key string
	// Governed is set when the scope's Sidecar is the one in effect for the
	// workload afterwards. A namespace default yields to selecting Sidecars.
	Governed bool
	// Proxy is the workload as a proxy.
	Proxy predict.WorkloadProxy
	// Observed is the workload's check against observed traffic; nil without evidence.
	Observed *observedReview
}

// reviewScope reviews every inventory workload the declaration selects: base
// predicts the inventory as it is, head the inventory with the scope's Sidecar
// (sidecarKey is its "namespace/name"). The result is sorted by namespace, then
// workload, and is a pure function of the two inventories.
func reviewScope(base, head *predict.Predictor, decl scope.Declaration, sidecarKey string) []workloadReview {
	var out []workloadReview
	for _, w := range head.WorkloadProxies() {
		if w.Namespace != decl.Namespace || !scope.Selects(decl.Selector, w.Labels) {
			continue
		}
		rv := predict.Review(base, head, w)
		sc := head.SidecarFor(w.Proxy())
		out = append(out, workloadReview{
			WorkloadReview: rv,
			Key:            rv.Namespace + "/" + rv.Workload,
			Governed:       sc != nil && sc.Key() == sidecarKey,
			Proxy:          w,
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Workload < out[j].Workload
	})
	return out
}

// expectedClusters is the CDS cluster count of the workloads the scope selects
// once its Sidecar applies: the largest over the workloads it governs, else the
// largest over those it selects, else (no selected workload in the inventory)
// the count of a pod with the selector labels.
func expectedClusters(head *predict.Predictor, decl scope.Declaration, reviews []workloadReview) int {
	if len(reviews) == 0 {
		labels := map[string]string{}
		for k, v := range decl.Selector {
			labels[k] = v
		}
		return len(head.Predict(predict.Proxy{Namespace: decl.Namespace, Labels: labels}).Clusters)
	}
	governed, largest := -1, 0
	for _, rv := range reviews {
		largest = max(largest, rv.After)
		if rv.Governed {
			governed = max(governed, rv.After)
		}
	}
	if governed >= 0 {
		return governed
	}
	return largest
}

// addRisks turns the risky tightenings of the review into warnings on
// dependencies. rootWarned says the compiler already warned that the scope
// imports nothing from the root namespace; the per-workload warning would only
// repeat it.
func addRisks(diags *diag.Diagnostics, reviews []workloadReview, rootWarned bool, domainSuffix string) {
	for _, rv := range reviews {
		for _, k := range rv.Risks {
			switch k.Kind {
			case predict.RiskVirtualServiceDestination:
				diags.AddAttributeWarning(path.Root("dependencies"),
					"Scope Drops Routed Host",
					fmt.Sprintf("Under this scope the workload %q loses its clusters for %q, but a VirtualService it keeps "+
						"in scope routes to that host (%s). Calls along that route would fail. Declare %q as a dependency "+
						"(with the ports the route uses), or change the VirtualService.",
						rv.Key, k.Host, k.Message, dependencyName(k.Host, domainSuffix)))
			case predict.RiskRootNamespace:
				if rootWarned {
					continue
				}
				diags.AddAttributeWarning(path.Root("dependencies"),
					"Root Namespace Not In Scope",
					fmt.Sprintf("Under this scope the workload %q keeps no cluster for a service of the mesh root namespace, "+
						"though it has some today (%s). Proxies reach istiod, telemetry and tracing through it. Check the "+
						"provider's system_hosts, or declare those services as dependencies.", rv.Key, k.Message))
			default:
				diags.AddAttributeWarning(path.Root("dependencies"), "Risky Scope Tightening",
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

// checkBudget reports an error on max_clusters for every workload the scope
// governs that would hold more clusters than the budget. With no selected
// workload in the inventory, the predicted count of a selected pod is checked.
func checkBudget(diags *diag.Diagnostics, budget types.Int64, reviews []workloadReview, expected int, decl scope.Declaration) {
	if budget.IsNull() || budget.IsUnknown() {
		return
	}
	limit := budget.ValueInt64()
	if len(reviews) == 0 {
		if int64(expected) > limit {
			diags.AddAttributeError(path.Root("max_clusters"),
				"Cluster Budget Exceeded",
				fmt.Sprintf("A pod labelled %s in namespace %q would hold %d Envoy clusters under this scope, over "+
					"max_clusters = %d. Narrow dependencies (list their ports to make the Sidecar port-level), or raise max_clusters.",
					formatSelector(decl.Selector), decl.Namespace, expected, limit))
		}
		return
	}
	for _, rv := range reviews {
		if !rv.Governed || int64(rv.After) <= limit {
			continue
		}
		diags.AddAttributeError(path.Root("max_clusters"),
			"Cluster Budget Exceeded",
			fmt.Sprintf("The workload %q would hold %d Envoy clusters under this scope (%d today), over max_clusters = %d. "+
				"Narrow dependencies (list their ports to make the Sidecar port-level), or raise max_clusters.",
				rv.Key, rv.After, rv.Before, limit))
	}
}
