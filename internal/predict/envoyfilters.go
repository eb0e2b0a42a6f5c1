package predict

import (
	"fmt"
	"slices"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// ClusterPatches names the EnvoyFilters that reach a sidecar proxy with a patch of its clusters
// (R39), as "namespace/name (ADD, REMOVE)", sorted. The predictor does not apply them, so a
// surface must say that the proxy's prediction leaves them out. An EnvoyFilter reaches a proxy
// from the root namespace or the proxy's own, when its workloadSelector selects the proxy's
// labels (one with targetRefs is counted as reaching it: meshscope does not resolve them), and
// a CLUSTER patch whose context is not GATEWAY.
func (p *Predictor) ClusterPatches(proxy Proxy) []string {
	var out []string
	for _, ef := range p.ix.inv.EnvoyFilters {
		if ef.Namespace != p.ix.root && ef.Namespace != proxy.Namespace {
			continue
		}
		if sel := ef.Spec.GetWorkloadSelector(); sel != nil && len(ef.Spec.GetTargetRefs()) == 0 &&
			!istioconfig.LabelsSubset(sel.GetLabels(), proxy.Labels) {
			continue
		}
		var ops []string
		for _, cp := range ef.Spec.GetConfigPatches() {
			if cp.GetApplyTo() != networking.EnvoyFilter_CLUSTER || cp.GetMatch().GetContext() == networking.EnvoyFilter_GATEWAY {
				continue
			}
			if op := cp.GetPatch().GetOperation().String(); !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			out = append(out, fmt.Sprintf("%s (%s)", ef.Key(), strings.Join(ops, ", ")))
		}
	}
	slices.Sort(out)
	return out
}
