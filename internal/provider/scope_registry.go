package provider

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// scopeRegistry remembers the workload scopes planned through one configured
// provider instance, so that two scopes selecting the same workload are caught
// at plan time (like istioctl analyze IST0110 for Sidecars).
type scopeRegistry struct {
	mu sync.Mutex
	// byNamespace holds the planned scopes of each namespace, by name.
	byNamespace map[string]map[string]plannedScope
}

// plannedScope is one scope as planned.
type plannedScope struct {
	Name     string
	Selector map[string]string
	// Fingerprint identifies the declaration, so that planning the same scope
	// again is not taken for a second scope with the same name.
	Fingerprint string
}

// scopeClash is a conflict between a scope being planned and one planned before.
type scopeClash struct {
	Other plannedScope
	// SameName is set when both scopes compile to the same Sidecar name.
	SameName bool
	// Workload is "Kind name" of a workload both select, or "" when the selectors
	// overlap without an inventory workload (one is a subset of the other).
	Workload string
}

func newScopeRegistry() *scopeRegistry {
	return &scopeRegistry{byNamespace: map[string]map[string]plannedScope{}}
}

// claim records the scope and returns the scopes planned before it that select
// a workload it selects, sorted by name. Workloads come from inv.
func (r *scopeRegistry) claim(inv *mesh.Inventory, ns string, s plannedScope) []scopeClash {
	r.mu.Lock()
	defer r.mu.Unlock()

	scopes := r.byNamespace[ns]
	if scopes == nil {
		scopes = map[string]plannedScope{}
		r.byNamespace[ns] = scopes
	}
	var clashes []scopeClash
	for name, other := range scopes {
		if name == s.Name {
			if other.Fingerprint != s.Fingerprint {
				clashes = append(clashes, scopeClash{Other: other, SameName: true})
			}
			continue
		}
		if wl, overlap := selectorsOverlap(inv, ns, s.Selector, other.Selector); overlap {
			clashes = append(clashes, scopeClash{Other: other, Workload: wl})
		}
	}
	if _, taken := scopes[s.Name]; !taken {
		scopes[s.Name] = s
	}
	sort.Slice(clashes, func(i, j int) bool { return clashes[i].Other.Name < clashes[j].Other.Name })
	return clashes
}

// selectorsOverlap reports whether two Sidecar workload selectors of one namespace
// select a common workload. Two namespace defaults (empty selectors) always
// overlap; a namespace default never overlaps a selector, which takes precedence.
func selectorsOverlap(inv *mesh.Inventory, ns string, a, b map[string]string) (string, bool) {
	if len(a) == 0 || len(b) == 0 {
		return "", len(a) == 0 && len(b) == 0
	}
	// Contradicting selectors never select the same pod.
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return "", false
		}
	}
	if inv != nil {
		var hits []string
		for _, w := range inv.Workloads {
			if w.Namespace == ns && scope.Selects(a, w.PodLabels) && scope.Selects(b, w.PodLabels) {
				kind, name := census.Identity(w) // a listed Pod is named by its workload (C1)
				hits = append(hits, kind+" "+name)
			}
		}
		if len(hits) > 0 {
			sort.Strings(hits)
			return hits[0], true
		}
	}
	// Any pod the larger selector selects, the smaller one selects too.
	if scope.Selects(a, b) || scope.Selects(b, a) {
		return "", true
	}
	return "", false
}

// formatSelector renders a selector as k=v,k=v sorted, or "(none)".
func formatSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "(none: the namespace default)"
	}
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", k, sel[k])
	}
	return strings.Join(parts, ",")
}
