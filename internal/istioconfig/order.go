package istioconfig

import (
	"strings"
	"time"
)

// Creation is what istiod orders configs and services by: oldest first, then by name, then
// by namespace (rules R7, R13, R23, R33). Istio: pilot/pkg/model sortConfigByCreationTime
// and SortServicesByCreationTime.
type Creation struct {
	Created         time.Time
	Name, Namespace string
}

// CompareCreation is the creation-order comparator for slices.SortStableFunc.
func CompareCreation(a, b Creation) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Namespace, b.Namespace)
}
