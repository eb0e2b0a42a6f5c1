package adopt

import (
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// nsPlan is the planning of one namespace.
type nsPlan struct {
	*Planner
	ns string
	ix *nsWorkloads
	// nsInv is the inventory of the namespace (its Sidecars and workloads), for scope.Conflicts.
	nsInv *mesh.Inventory
	// taken are the Sidecar names taken in the namespace: every Sidecar of the inventory (a
	// scope of the same name would replace it), then each planned scope's.
	taken map[string]bool
	out   *Plan
}

func (n *nsPlan) warn(w Warning) { n.out.Warnings = append(n.out.Warnings, w) }

// member is a calling workload and its calls.
type member struct {
	w     *mesh.Workload
	idx   int // in the namespace's list
	calls []traffic.Call
}

func (m member) id() string { return m.w.Namespace + "/" + m.w.Kind + "/" + m.w.Name }

// group is the calling workloads one scope governs.
type group struct {
	members []member
	// selected are the workloads of the namespace the scope's selector selects.
	selected []int
	selector map[string]string
	adopt    *mesh.Sidecar
	// fallback is the Sidecar that governs the workloads today when it does not select them
	// (a namespace or mesh-wide default), which the scope takes precedence over.
	fallback *mesh.Sidecar
}

// Namespace plans the scopes of the calling workloads of one namespace, sorted by resource
// name.
func (p *Planner) Namespace(ns string) *Plan {
	workloads := p.byNs[ns]
	slices.SortStableFunc(workloads, func(a, b *mesh.Workload) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	n := &nsPlan{Planner: p, ns: ns, ix: newNSWorkloads(workloads), nsInv: mesh.New(), taken: map[string]bool{}, out: &Plan{}}
	n.nsInv.Workloads = workloads
	for _, sc := range p.inv.Sidecars {
		if sc.Namespace == ns {
			n.nsInv.Sidecars = append(n.nsInv.Sidecars, sc)
			n.taken[sc.Name] = true
		}
	}
	for _, g := range n.groups(workloads) {
		if s, ok := n.build(g); ok {
			n.out.Scopes = append(n.out.Scopes, s)
		} else {
			n.out.Skipped += len(g.members)
		}
	}
	slices.SortFunc(n.out.Scopes, func(a, b Scope) int { return strings.Compare(a.Resource, b.Resource) })
	return n.out
}

// groups sorts the calling workloads of the namespace into the groups one scope each governs:
// first those a Sidecar of the namespace selects today, one group per Sidecar (it is adopted),
// by its name; then the others (freshGroups).
func (n *nsPlan) groups(workloads []*mesh.Workload) []*group {
	adopted := map[*mesh.Sidecar]*group{}
	var fresh []member
	fallback := map[int]*mesh.Sidecar{}
	for i, w := range workloads {
		calls := n.ev.Calls(n.ns, w.Name)
		if len(calls) == 0 {
			continue
		}
		m := member{w: w, idx: i, calls: calls}
		gov := n.pred.SidecarFor(predict.Proxy{Namespace: n.ns, Labels: w.PodLabels})
		if gov != nil && gov.Namespace == n.ns && gov.Spec.GetWorkloadSelector() != nil {
			g := adopted[gov]
			if g == nil {
				g = &group{adopt: gov, selector: gov.Spec.GetWorkloadSelector().GetLabels()}
				g.selected = n.ix.selected(g.selector)
				adopted[gov] = g
			}
			g.members = append(g.members, m)
			continue
		}
		if len(w.PodLabels) == 0 {
			n.out.Skipped++
			n.warn(Warning{Kind: Unlabelled, Workloads: []string{m.id()}})
			continue
		}
		fallback[i] = gov
		fresh = append(fresh, m)
	}

	var groups []*group
	for _, g := range adopted {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.adopt.Name, b.adopt.Name) })
	return append(groups, n.freshGroups(fresh, fallback)...)
}

// freshGroups groups the calling workloads that no selecting Sidecar governs: each with the
// workloads a selector drawn from its labels cannot leave out. Two callers whose selections
// share a workload share a scope (two scopes must never select one workload), selected by the
// member whose selection covers the others'.
func (n *nsPlan) freshGroups(fresh []member, fallback map[int]*mesh.Sidecar) []*group {
	parent := make([]int, len(fresh))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	tight := make([][]int, len(fresh))
	owner := map[int]int{} // workload index -> the first caller whose selection holds it
	for i, m := range fresh {
		tight[i] = n.ix.selected(m.w.PodLabels)
		for _, w := range tight[i] {
			if j, ok := owner[w]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[w] = i
			}
		}
	}
	components := map[int][]int{}
	var roots []int
	for i := range fresh {
		r := find(i)
		if _, ok := components[r]; !ok {
			roots = append(roots, r)
		}
		components[r] = append(components[r], i)
	}
	slices.Sort(roots)
	var out []*group
	for _, r := range roots {
		comp := components[r]
		var union []int
		for _, i := range comp {
			union = append(union, tight[i]...)
		}
		slices.Sort(union)
		union = slices.Compact(union)
		// The member with the fewest labels whose own selection covers the union selects all.
		lead := -1
		for _, i := range comp {
			if len(tight[i]) == len(union) && (lead < 0 || len(fresh[i].w.PodLabels) < len(fresh[lead].w.PodLabels)) {
				lead = i
			}
		}
		g := &group{}
		for _, i := range comp {
			g.members = append(g.members, fresh[i])
		}
		if lead < 0 {
			var ids []string
			for _, m := range g.members {
				ids = append(ids, m.id())
			}
			n.out.Skipped += len(g.members)
			n.warn(Warning{Kind: Inseparable, Workloads: ids})
			continue
		}
		g.selected = union
		g.selector = n.ix.chooseSelector(fresh[lead].w.PodLabels, len(union))
		g.fallback = fallback[fresh[lead].idx]
		// The lead first: the scope is named after it.
		slices.SortStableFunc(g.members, func(a, b member) int {
			return boolRank(a.idx != fresh[lead].idx) - boolRank(b.idx != fresh[lead].idx)
		})
		out = append(out, g)
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// alsoSelected are the workloads the scope selects that made no calls it governs.
func (n *nsPlan) alsoSelected(g *group) []string {
	members := map[int]bool{}
	for _, m := range g.members {
		members[m.idx] = true
	}
	var out []string
	for _, i := range g.selected {
		if !members[i] {
			w := n.ix.list[i]
			out = append(out, w.Namespace+"/"+w.Kind+"/"+w.Name)
		}
	}
	return out
}
