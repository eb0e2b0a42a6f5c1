package review

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// Tree reviews a change between two trees of manifests: every workload of either, as the diff
// command shows it. Only one workload's review is held at a time, so that memory does not grow
// with the mesh. Not safe for concurrent use.
type Tree struct {
	base, head *predict.Predictor
	ev         *traffic.Evidence
	route      *Routability
	idx        outboundIndex
}

// NewTree reviews the change from base to head. With evidence (nil: none), each workload's
// observed calls are checked against head, whose inventory is headInv: the observed calls are
// the head tree's workloads' calls, to the head tree's hosts.
func NewTree(base, head *predict.Predictor, headInv *mesh.Inventory, ev *traffic.Evidence, opts Options) *Tree {
	t := &Tree{base: base, head: head, ev: ev}
	if ev != nil {
		t.route = NewRoutability(headInv, opts.Scope)
	}
	return t
}

// Change is one workload's review between the trees.
type Change struct {
	predict.WorkloadReview
	// Replicas is how many proxies the workload runs (in the head tree, when it holds it): the
	// change applies to each.
	Replicas census.Replicas
	// ClusterPatches name the EnvoyFilters whose cluster patches reach the workload in the head
	// tree (the base tree's when the head lacks it), which the prediction leaves out (R39).
	ClusterPatches []string
	// ListenerPatches name, likewise, the EnvoyFilters whose listener patches can add, remove or
	// rename the workload's listeners (R56).
	ListenerPatches []string
	// NotModelled is what istiod adds to the workload's proxies that meshscope does not predict
	// (R44, R45), as the head tree says.
	NotModelled []string
	// Sidecar is set when the workload runs a sidecar on one side only: it says which, and why
	// the other side runs none. Its proxies then gain or lose every cluster.
	Sidecar string
	// Cut are, with evidence, the workload's observed calls the head tree cuts, new ones first,
	// then the largest counts; nil without evidence or when none is cut.
	Cut []CutCall
	// Rerouted are, with evidence, the workload's observed calls that reach their host through a
	// VirtualService of another host which the head tree drops and the base tree keeps.
	Rerouted []ReroutedCall
	// Unreached are the calls the head tree's Sidecar names for the workload (its exact egress
	// hosts) that, followed through its listeners and routes, do not reach their service (R62),
	// and do under the base tree: the calls the change breaks.
	Unreached []predict.Call
}

// Each calls fn with each workload of either tree whose cluster list changes, sorted by
// namespace, name and kind.
func (t *Tree) Each(fn func(Change) error) error {
	type key struct{ ns, kind, name string }
	type sides struct {
		first          predict.WorkloadProxy // reviewed on both sides, as before
		head           predict.WorkloadProxy
		inBase, inHead bool
	}
	seen := map[key]*sides{}
	var keys []key
	for i, p := range []*predict.Predictor{t.base, t.head} {
		for _, w := range p.WorkloadProxies() {
			k := key{w.Namespace, w.Kind, w.Name}
			s, ok := seen[k]
			if !ok {
				s = &sides{first: w}
				seen[k] = s
				keys = append(keys, k)
			}
			if i == 0 {
				s.inBase = true
			} else {
				s.inHead, s.head = true, w
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name), cmp.Compare(a.kind, b.kind))
	})
	reviewer := predict.NewReviewer(t.base, t.head)
	for _, k := range keys {
		s := seen[k]
		// A workload that runs a sidecar on one side only, and is on the other side a workload
		// that runs none, gains or loses its proxies with all their clusters.
		var oneSide *census.Workload
		switch {
		case s.inBase && !s.inHead:
			oneSide = t.head.Census().Lookup(k.ns, k.name)
		case s.inHead && !s.inBase:
			oneSide = t.base.Census().Lookup(k.ns, k.name)
		}
		if oneSide != nil && (oneSide.Kind != k.kind || oneSide.RunsSidecar()) {
			oneSide = nil
		}
		var rv predict.WorkloadReview
		var sidecar string
		switch {
		case oneSide != nil && s.inHead:
			rv, sidecar = reviewer.ReviewOneSide(s.head, true), "starts running a sidecar; before: "+oneSide.Why
		case oneSide != nil:
			rv, sidecar = reviewer.ReviewOneSide(s.first, false), "stops running a sidecar: "+oneSide.Why
			rv.Risks = append(rv.Risks, predict.Risk{Kind: RiskSidecarStops, Message: sidecar})
		default:
			rv = reviewer.Review(s.first)
		}
		if !rv.Changed() {
			continue
		}
		c := Change{WorkloadReview: rv, Replicas: s.first.Replicas, ClusterPatches: t.base.ClusterPatches(s.first.Proxy()),
			ListenerPatches: t.base.ListenerPatches(s.first.Proxy()), Sidecar: sidecar}
		if s.inHead {
			c.Replicas, c.ClusterPatches = s.head.Replicas, t.head.ClusterPatches(s.head.Proxy())
			c.ListenerPatches = t.head.ListenerPatches(s.head.Proxy())
			if w := t.head.Census().Lookup(k.ns, k.name); w != nil {
				c.NotModelled = w.NotModelled
			}
		}
		if s.inHead {
			var base *predict.WorkloadProxy
			if s.inBase {
				base = &s.first
			}
			c.Unreached = t.brokenCalls(s.head, base)
		}
		if t.ev != nil && s.inHead {
			c.Cut = t.cuts(s.head, s.inBase)
			c.Rerouted = t.rerouted(s.head, s.inBase)
			for _, r := range c.Rerouted {
				c.Risks = append(c.Risks, predict.Risk{Kind: RiskReroutedHostDropped, Host: r.From,
					Message: fmt.Sprintf("drops %s, whose VirtualService %s routes to %s, which it called (%s): the calls may be calls to %s, and lose their route; declare %s",
						r.From, r.VirtualService, r.To, r.Amount(), r.From, r.Fix.Dependency.Element())})
			}
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// brokenCalls are the calls the head tree's Sidecar names for a workload that do not reach
// their service under head, and do under base (or that base has no workload to make).
func (t *Tree) brokenCalls(head predict.WorkloadProxy, base *predict.WorkloadProxy) []predict.Call {
	var broken []predict.Call
	var again []predict.HostPort
	for _, call := range t.head.Trace(head.Proxy(), t.head.SidecarCalls(head.Proxy())) {
		if !call.Reached {
			broken = append(broken, call)
			again = append(again, predict.HostPort{Host: call.Host, Port: call.Port})
		}
	}
	if len(broken) == 0 || base == nil {
		return broken
	}
	before := t.base.Trace(base.Proxy(), again)
	return slices.DeleteFunc(broken, func(c predict.Call) bool {
		i := slices.IndexFunc(before, func(b predict.Call) bool { return b.Host == c.Host && b.Port == c.Port })
		return i >= 0 && !before[i].Reached
	})
}

// EachUnchangedCut calls fn with each workload of the head tree whose observed calls the head
// tree cuts and for which changed ("namespace/Kind/name") is false, in head's order. Its
// cluster list is the same on both sides, so every such call is cut today already. Without
// evidence it calls nothing.
func (t *Tree) EachUnchangedCut(changed func(key string) bool, fn func(Change) error) error {
	if t.ev == nil {
		return nil
	}
	for _, w := range t.head.WorkloadProxies() {
		id := w.Kind + "/" + w.Name
		if changed(w.Namespace+"/"+id) || len(t.ev.Calls(w.Namespace, w.Name)) == 0 {
			continue
		}
		cuts := t.cuts(w, true)
		if len(cuts) == 0 {
			continue
		}
		if err := fn(Change{WorkloadReview: predict.WorkloadReview{Namespace: w.Namespace, Workload: id}, Replicas: w.Replicas, Cut: cuts}); err != nil {
			return err
		}
	}
	return nil
}

// RiskReroutedHostDropped is the risk of a workload that loses its clusters for a host whose
// VirtualService routes to a host it called: the metrics name the host after routing, so the
// calls may be calls to the dropped host, and lose their route.
const RiskReroutedHostDropped = "rerouted_host_dropped"

// RiskSidecarStops is the risk of a workload that stops running a sidecar: its traffic leaves
// the mesh (no mTLS, no policy, no telemetry).
const RiskSidecarStops = "sidecar_stops"

// VersionNotes say which Istio release the head tree's proxies are predicted with (C12).
func (t *Tree) VersionNotes() []string { return t.head.VersionNotes() }

// Census is the head tree's census: which of its workloads run sidecars, and why the others
// run none.
func (t *Tree) Census() *census.Census { return t.head.Census() }

// cuts checks a workload's observed calls against the head tree's outbound clusters, and each
// cut one against the base tree's; inBase says the base tree holds the workload.
func (t *Tree) cuts(w predict.WorkloadProxy, inBase bool) []CutCall {
	calls := t.ev.Calls(w.Namespace, w.Name)
	if len(calls) == 0 {
		return nil
	}
	cut := t.idx.cut(calls, t.head.Outbound(w.Proxy()))
	if len(cut) == 0 {
		return nil
	}
	cutBefore := map[string]bool{}
	if inBase {
		for _, c := range t.idx.cut(cut, t.base.Outbound(w.Proxy())) {
			cutBefore[callKey(c)] = true
		}
	}
	out := make([]CutCall, 0, len(cut))
	for _, c := range cut {
		out = append(out, CutCall{Call: c, New: !inBase || !cutBefore[callKey(c)]})
	}
	fixes(t.route, w.Namespace, out, metricPort)
	slices.SortStableFunc(out, func(a, b CutCall) int {
		return cmp.Or(boolRank(!a.New)-boolRank(!b.New), cmp.Compare(int64(b.Count+0.5), int64(a.Count+0.5)),
			strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// rerouted are the workload's observed calls that reach their host through a VirtualService
// of another host the head tree has no cluster for, and the base tree (when it holds the
// workload) has: the ones this change drops.
func (t *Tree) rerouted(w predict.WorkloadProxy, inBase bool) []ReroutedCall {
	calls := t.ev.Calls(w.Namespace, w.Name)
	if len(calls) == 0 {
		return nil
	}
	reroutes := t.head.Reroutes(w.Namespace)
	out := rerouted(calls, t.head.Outbound(w.Proxy()), reroutes)
	if len(out) == 0 {
		return nil
	}
	if inBase {
		before := map[string]bool{}
		for _, r := range rerouted(calls, t.base.Outbound(w.Proxy()), t.base.Reroutes(w.Namespace)) {
			before[r.From+"|"+r.Host] = true
		}
		out = slices.DeleteFunc(out, func(r ReroutedCall) bool { return before[r.From+"|"+r.Host] })
	}
	for i := range out {
		out[i].New = true
	}
	rerouteFixes(t.route, w.Namespace, out, metricPort)
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
