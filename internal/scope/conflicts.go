package scope

import (
	"fmt"
	"sort"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Selects reports whether a Sidecar with the given selector applies to pods with lbls
// (a nil selector is the namespace default and matches every pod).
func Selects(sel, lbls map[string]string) bool {
	for k, v := range sel {
		if got, ok := lbls[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SelectedWorkloads lists the workloads of a namespace that a selector selects.
func SelectedWorkloads(inv *mesh.Inventory, ns string, sel map[string]string) []*mesh.Workload {
	var out []*mesh.Workload
	for _, w := range inv.Workloads {
		if w.Namespace == ns && Selects(sel, w.PodLabels) {
			out = append(out, w)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Conflicts reports Sidecars of the inventory (other than one with the same
// namespace and name) that compete with sc for the same workloads, like istioctl
// analyze IST0111/IST0110: two selector-less Sidecars in one namespace, or two
// selector Sidecars that select the same workload.
func Conflicts(inv *mesh.Inventory, sc *mesh.Sidecar) []Problem {
	var probs []Problem
	mine := sc.Spec.GetWorkloadSelector()
	for _, other := range inv.Sidecars {
		if other.Namespace != sc.Namespace || other.Name == sc.Name {
			continue
		}
		theirs := other.Spec.GetWorkloadSelector()
		switch {
		case mine == nil && theirs == nil:
			probs = append(probs, Problem{Attribute: AttrWorkloadSelector, Index: -1, Summary: "Conflicting Namespace Default Sidecar",
				Detail: fmt.Sprintf("Namespace %q already has the selector-less Sidecar %q (%s). Istio applies only the oldest selector-less Sidecar in a namespace. Set workload_selector, or import and manage %q instead.", sc.Namespace, other.Name, other.Source, other.Name)})
		case mine != nil && theirs != nil:
			for _, w := range inv.Workloads {
				if w.Namespace == sc.Namespace && Selects(mine.GetLabels(), w.PodLabels) && Selects(theirs.GetLabels(), w.PodLabels) {
					probs = append(probs, Problem{Attribute: AttrWorkloadSelector, Index: -1, Summary: "Conflicting Sidecar Selection",
						Detail: fmt.Sprintf("Workload %s/%s (%s) is selected both by this scope and by the existing Sidecar %q (%s). Istio applies only the oldest matching Sidecar (istioctl analyze IST0110). Narrow workload_selector, or import and manage %q instead.", w.Namespace, w.Name, w.Kind, other.Name, other.Source, other.Name)})
					break
				}
			}
		}
	}
	return probs
}
