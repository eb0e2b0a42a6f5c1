package scope

import (
	"fmt"
	"sort"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Selects reports whether a Sidecar with the given selector applies to pods with lbls
// (a nil selector is the namespace default and matches every pod): istioconfig.LabelsSubset.
func Selects(sel, lbls map[string]string) bool { return istioconfig.LabelsSubset(sel, lbls) }

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

// takeOver says how a scope takes over an existing Sidecar: import reads it from the cluster it
// lives in or from the manifests; a scope also replaces the inventory's Sidecar of its own name.
func takeOver(other *mesh.Sidecar) string {
	offline := fmt.Sprintf("give this scope the Sidecar's name (name = %q): a scope replaces the inventory's Sidecar of the same namespace and name, so meshscope then manages it", other.Name)
	if strings.HasPrefix(other.Source, "cluster:") {
		return fmt.Sprintf("take it over: import it (an import block with id = \"%s/%s\", or terraform import), which reads it from the cluster and turns it into declarations; or %s.", other.Namespace, other.Name, offline)
	}
	return fmt.Sprintf("take it over offline: %s, and drop its manifest from the provider's manifests; or import it (an import block with id = \"%s/%s\"), which reads it from the manifests and turns it into declarations.", offline, other.Namespace, other.Name)
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
			probs = append(probs, Problem{Attribute: AttrWorkloadSelector, Index: -1, Code: CodeConflictingDefault, Summary: CodeConflictingDefault.Summary(),
				Detail: fmt.Sprintf("Namespace %q already has the selector-less Sidecar %q (%s). Istio applies only the oldest selector-less Sidecar in a namespace. Set workload_selector, or %s", sc.Namespace, other.Name, other.Source, takeOver(other))})
		case mine != nil && theirs != nil:
			for _, w := range inv.Workloads {
				if w.Namespace == sc.Namespace && Selects(mine.GetLabels(), w.PodLabels) && Selects(theirs.GetLabels(), w.PodLabels) {
					kind, name := census.Identity(w) // a listed Pod is named by its workload (C1)
					probs = append(probs, Problem{Attribute: AttrWorkloadSelector, Index: -1, Code: CodeConflictingSelection, Summary: CodeConflictingSelection.Summary(),
						Detail: fmt.Sprintf("Workload %s/%s (%s) is selected both by this scope and by the existing Sidecar %q (%s). Istio applies only the oldest matching Sidecar (istioctl analyze IST0110). Narrow workload_selector, or %s", w.Namespace, name, kind, other.Name, other.Source, takeOver(other))})
					break
				}
			}
		}
	}
	return probs
}
