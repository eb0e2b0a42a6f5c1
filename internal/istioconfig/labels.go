package istioconfig

// LabelsSubset reports whether every label of sel is in lbls with the same value: how a
// Sidecar, DestinationRule or ServiceEntry workloadSelector selects pods. An empty sel
// selects every pod. Istio: pkg/config/labels.Instance.SubsetOf.
func LabelsSubset(sel, lbls map[string]string) bool {
	for k, v := range sel {
		if got, ok := lbls[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SelectorMatches is a Kubernetes Service selector: like LabelsSubset, but an empty selector
// selects nothing (the Service has no endpoints of its own). Istio:
// pkg/config/labels.Instance.Match as the Kubernetes registry calls it.
func SelectorMatches(sel, lbls map[string]string) bool {
	return len(sel) > 0 && LabelsSubset(sel, lbls)
}
