package review

import (
	"cmp"
	"maps"
	"slices"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// Options are the settings of a review.
type Options struct {
	// DomainSuffix is the cluster's DNS suffix ("cluster.local").
	DomainSuffix string
	// Scope are the compiler's settings, with which a fix's dependency is checked.
	Scope scope.Options
}

// Reviewer reviews the scopes of one inventory. It is safe for concurrent use: Terraform plans
// several scopes at once.
type Reviewer struct {
	inv   *mesh.Inventory
	pred  *predict.Predictor
	opts  Options
	route *Routability
}

// NewReviewer reviews scopes against the inventory as it is, which pred predicts.
func NewReviewer(inv *mesh.Inventory, pred *predict.Predictor, opts Options) *Reviewer {
	return &Reviewer{inv: inv, pred: pred, opts: opts, route: NewRoutability(inv, opts.Scope)}
}

// Workload is one workload a scope selects, predicted under the inventory as it is and under
// the scope's Sidecar.
type Workload struct {
	predict.WorkloadReview
	// Key names the workload: "namespace/Kind/name".
	Key string
	// Governed is set when the scope's Sidecar is the one in effect for the workload
	// afterwards. A namespace default yields to selecting Sidecars.
	Governed bool
	// Proxy is the workload as a proxy.
	Proxy predict.WorkloadProxy
	// Observed is the workload's check against observed traffic; nil without evidence.
	Observed *Observed
	// ClusterPatches name the EnvoyFilters whose cluster patches reach the workload under the
	// scope, which the prediction leaves out (R39).
	ClusterPatches []string
	// ListenerPatches name the EnvoyFilters whose listener patches can add, remove or rename
	// the workload's listeners under the scope, which the listener counts leave out (R56).
	ListenerPatches []string
	// Unreached are the declared calls that, followed through the workload's listeners and
	// routes under the scope (R62), do not reach their service.
	Unreached []TracedCall
}

// TracedCall is a declared call followed from a workload.
type TracedCall struct {
	predict.Call
	// Dependency is the call's position in the declaration's dependencies.
	Dependency int
}

// Scope is the review of one scope.
type Scope struct {
	// Workloads are the workloads of the inventory the scope selects that run sidecars,
	// sorted by namespace, then workload.
	Workloads []Workload
	// NoSidecar are the workloads the scope selects that run no sidecar (census), sorted:
	// the Sidecar does nothing to them, and a gateway among them is an error.
	NoSidecar []*census.Workload
	// Assumed are the selected workloads counted as sidecars because their Namespace is not in
	// the inventory, so its injection labels are unknown (C4).
	Assumed []*census.Workload
	// NotModelled are, per selected workload ("namespace/Kind/name: ..."), what istiod adds to
	// its proxies that meshscope does not predict (R44, R45).
	NotModelled []string
	// VMs are the VM proxies (WorkloadEntries, WorkloadGroups) of the namespace the scope
	// selects: its Sidecar applies to them, but meshscope does not predict them (C11).
	VMs []*mesh.VMProxy
	// ExpectedClusters is the CDS cluster count of the selected workloads once the Sidecar
	// applies: the largest over the workloads it governs, else over those it selects, else
	// (no selected workload in the inventory) the count of a pod with the selector labels.
	ExpectedClusters int
}

// Scope reviews a compiled scope: every workload of the inventory the declaration selects,
// predicted as the inventory is (without a Sidecar of the scope's own name, which a live
// inventory holds once the scope is applied, so that the review does not change between apply
// and re-plan) and with the scope's Sidecar. With evidence, each workload is also checked
// against the calls it made. The result is a pure function of its inputs.
func (r *Reviewer) Scope(decl scope.Declaration, res *scope.Result, ev *traffic.Evidence) *Scope {
	own := res.Sidecar.Key()
	head := r.pred.WithSidecars(res.Sidecar)
	base := r.pred
	if slices.ContainsFunc(r.inv.Sidecars, func(sc *mesh.Sidecar) bool { return sc.Key() == own }) {
		base = r.pred.WithoutSidecars(func(sc *mesh.Sidecar) bool { return sc.Key() == own })
	}
	s := &Scope{Workloads: selected(base, head, decl, own)}
	for _, vm := range r.pred.Census().VMs() {
		if vm.Namespace == decl.Namespace && scope.Selects(decl.Selector, vm.ProxyLabels) {
			s.VMs = append(s.VMs, vm)
		}
	}
	for _, w := range r.pred.Census().In(decl.Namespace) {
		if !scope.Selects(decl.Selector, w.Labels) {
			continue
		}
		switch {
		case !w.RunsSidecar():
			s.NoSidecar = append(s.NoSidecar, w)
		case w.Reason == census.AssumedInjected:
			s.Assumed = append(s.Assumed, w)
		}
		for _, n := range w.NotModelled {
			s.NotModelled = append(s.NotModelled, w.Key()+": "+n)
		}
	}
	s.ExpectedClusters = expectedClusters(head, decl, s.Workloads)
	traceCalls(head, res.Calls, s.Workloads)
	if ev != nil {
		r.observe(ev, head, decl, s.Workloads)
	}
	return s
}

// selected reviews every workload of head the declaration selects, sorted.
func selected(base, head *predict.Predictor, decl scope.Declaration, sidecarKey string) []Workload {
	var out []Workload
	reviewer := predict.NewReviewer(base, head)
	for _, w := range head.WorkloadProxiesIn(decl.Namespace) {
		if !scope.Selects(decl.Selector, w.Labels) {
			continue
		}
		rv := reviewer.Review(w)
		sc := head.SidecarFor(w.Proxy())
		out = append(out, Workload{
			WorkloadReview:  rv,
			Key:             rv.Namespace + "/" + rv.Workload,
			Governed:        sc != nil && sc.Key() == sidecarKey,
			Proxy:           w,
			ClusterPatches:  head.ClusterPatches(w.Proxy()),
			ListenerPatches: head.ListenerPatches(w.Proxy()),
		})
	}
	slices.SortStableFunc(out, func(a, b Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Workload, b.Workload))
	})
	return out
}

// traceCalls follows every declared call from each workload the scope governs, under the
// scope, and keeps those that do not reach their service.
func traceCalls(head *predict.Predictor, calls []scope.Call, ws []Workload) {
	if len(calls) == 0 {
		return
	}
	var hps []predict.HostPort
	var deps []int
	for _, c := range calls {
		if len(c.Ports) == 0 {
			hps, deps = append(hps, predict.HostPort{Host: c.Host}), append(deps, c.Index)
		}
		for _, p := range c.Ports {
			hps, deps = append(hps, predict.HostPort{Host: c.Host, Port: int(p)}), append(deps, c.Index)
		}
	}
	for i := range ws {
		if !ws[i].Governed {
			continue
		}
		for _, c := range head.Trace(ws[i].Proxy.Proxy(), hps) {
			if !c.Reached {
				ws[i].Unreached = append(ws[i].Unreached, TracedCall{Call: c, Dependency: deps[c.Index]})
			}
		}
	}
}

func expectedClusters(head *predict.Predictor, decl scope.Declaration, ws []Workload) int {
	if len(ws) == 0 {
		return len(head.Predict(predict.Proxy{Namespace: decl.Namespace, Labels: maps.Clone(decl.Selector)}).Clusters)
	}
	governed, largest := -1, 0
	for _, w := range ws {
		largest = max(largest, w.After)
		if w.Governed {
			governed = max(governed, w.After)
		}
	}
	if governed >= 0 {
		return governed
	}
	return largest
}

// observe checks every reviewed workload against the evidence: the calls the head (the
// inventory with the scope's Sidecar) would cut, with their fixes, the declared dependencies
// nothing called, and the calls that leave the registry or go to hosts the inventory lacks.
func (r *Reviewer) observe(ev *traffic.Evidence, head *predict.Predictor, decl scope.Declaration, ws []Workload) {
	rule := noPorts
	if len(decl.Dependencies) > 0 && !slices.ContainsFunc(decl.Dependencies, func(d scope.Dependency) bool { return len(d.Ports) == 0 }) {
		rule = certainPort
	}
	var idx outboundIndex
	for i := range ws {
		w := &ws[i]
		calls := ev.Calls(w.Proxy.Namespace, w.Proxy.Name)
		reroutes := head.Reroutes(w.Proxy.Namespace)
		o := &Observed{Unobserved: Unobserved(WithReroutes(calls, reroutes), decl.Dependencies, decl.Namespace, r.opts.DomainSuffix)}
		if len(calls) > 0 {
			outbound := head.Outbound(w.Proxy.Proxy())
			for _, c := range idx.cut(calls, outbound) {
				o.Cut = append(o.Cut, CutCall{Call: c})
			}
			o.Rerouted = rerouted(calls, outbound, reroutes)
		}
		for _, c := range calls {
			switch c.Class {
			case traffic.ClassPassthrough, traffic.ClassBlackHole:
				o.Outside = append(o.Outside, CutCall{Call: c})
			case traffic.ClassUnknown:
				o.Unknown = append(o.Unknown, c)
			}
		}
		fixes(r.route, w.Proxy.Namespace, o.Cut, rule)
		fixes(r.route, w.Proxy.Namespace, o.Outside, rule)
		rerouteFixes(r.route, w.Proxy.Namespace, o.Rerouted, rule)
		w.Observed = o
	}
}

// Gateways are the gateways the scope selects.
func (s *Scope) Gateways() []*census.Workload {
	var out []*census.Workload
	for _, w := range s.NoSidecar {
		if w.Proxy == census.Gateway {
			out = append(out, w)
		}
	}
	return out
}

// SelectsOnlyNoSidecar reports whether the scope selects workloads of the inventory and none
// of them runs a sidecar: its Sidecar would configure nothing.
func (s *Scope) SelectsOnlyNoSidecar() bool { return len(s.Workloads) == 0 && len(s.NoSidecar) > 0 }

// OverBudget returns the workloads the scope governs that would hold more than limit clusters.
// With no selected workload in the inventory, overPod says whether a pod with the selector
// labels would.
func (s *Scope) OverBudget(limit int) (over []Workload, overPod bool) {
	if len(s.Workloads) == 0 {
		return nil, s.ExpectedClusters > limit
	}
	for _, w := range s.Workloads {
		if w.Governed && w.After > limit {
			over = append(over, w)
		}
	}
	return over, false
}
