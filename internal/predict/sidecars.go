package predict

import (
	"cmp"
	"slices"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Sidecars as istiod orders and selects them (R13-R15).

// initSidecars orders the Sidecars (R13) and finds the root namespace's default (R14).
func (ix *index) initSidecars() {
	ix.sidecarsByNs = map[string][]*mesh.Sidecar{}
	scs := make([]*mesh.Sidecar, 0, len(ix.inv.Sidecars))
	for _, sc := range ix.inv.Sidecars {
		if ix.nsVisible(sc.Namespace) {
			scs = append(scs, sc)
		}
	}
	slices.SortStableFunc(scs, func(a, b *mesh.Sidecar) int { return compareMeta(&a.Meta, &b.Meta) })
	// Sidecars with a workloadSelector first, each group in creation order.
	slices.SortStableFunc(scs, func(a, b *mesh.Sidecar) int {
		return cmp.Compare(boolRank(a.Spec.GetWorkloadSelector() == nil), boolRank(b.Spec.GetWorkloadSelector() == nil))
	})
	for _, sc := range scs {
		ix.sidecarsByNs[sc.Namespace] = append(ix.sidecarsByNs[sc.Namespace], sc)
		// R14: the oldest selector-less Sidecar of the root namespace.
		if ix.rootSidecar == nil && sc.Namespace == ix.root && sc.Spec.GetWorkloadSelector() == nil {
			ix.rootSidecar = sc
		}
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sidecarFor mirrors PushContext.getSidecarScope selection (R15). nil means the default scope.
func (ix *index) sidecarFor(p Proxy) *mesh.Sidecar {
	for _, sc := range ix.sidecarsByNs[p.Namespace] {
		ws := sc.Spec.GetWorkloadSelector()
		if ws == nil {
			return sc
		}
		if istioconfig.LabelsSubset(ws.GetLabels(), p.Labels) {
			return sc
		}
	}
	return ix.rootSidecar
}
