package predict

import (
	"slices"
	"sort"
	"sync"
)

// Delta is how one proxy's cluster list changes between two predictions.
type Delta struct {
	Before        int      `json:"before"`
	After         int      `json:"after"`
	AddedHosts    []string `json:"added_hosts"`
	RemovedHosts  []string `json:"removed_hosts"`
	AddedClusters []string `json:"added_clusters"`
	// RemovedClusters are the cluster names only the before list has.
	RemovedClusters []string `json:"removed_clusters"`
}

// Changed reports whether the cluster lists differ.
func (d Delta) Changed() bool { return len(d.AddedClusters)+len(d.RemovedClusters) > 0 }

// Compare returns the change from before to after. A nil result counts as no clusters.
func Compare(before, after *Result) Delta { return compare(before, after, nil) }

// compare is Compare, with the change between two shared outbound lists taken from memo when
// it holds it (and put there when it does not).
func compare(before, after *Result, memo *outboundMemo) Delta {
	if memo != nil && before != nil && after != nil && before.shared && after.shared {
		out := memo.get(before, after)
		d := Delta{Before: before.count(), After: after.count(), AddedHosts: out.AddedHosts, RemovedHosts: out.RemovedHosts}
		// The fixed and inbound clusters are a handful per proxy; their names never collide with
		// outbound ones, so the two changes merge into sorted lists.
		bn, an := names(before.rest), names(after.rest)
		d.AddedClusters = mergeSorted(out.AddedClusters, minus(an, bn))
		d.RemovedClusters = mergeSorted(out.RemovedClusters, minus(bn, an))
		return d
	}
	return compareLists(before, after)
}

func compareLists(before, after *Result) Delta {
	var b, a []Cluster
	if before != nil {
		b = before.merged()
	}
	if after != nil {
		a = after.merged()
	}
	bn, bh := names(b), hosts(b)
	an, ah := names(a), hosts(a)
	return delta(len(b), len(a), bn, an, bh, ah)
}

// delta is the change between two lists given their sorted names and hosts.
func delta(nb, na int, bn, an, bh, ah []string) Delta {
	return Delta{Before: nb, After: na,
		AddedClusters: minus(an, bn), RemovedClusters: minus(bn, an),
		AddedHosts: minus(ah, bh), RemovedHosts: minus(bh, ah)}
}

// listFacts are the sorted names and hosts of a shared outbound list: a review reads them for
// every workload compared with it, and a plan compares one list with many.
type listFacts struct {
	once         sync.Once
	names, hosts []string
}

func (f *listFacts) get(cs []Cluster) ([]string, []string) {
	f.once.Do(func() { f.names, f.hosts = names(cs), hosts(cs) })
	return f.names, f.hosts
}

// factsOf are the names and hosts of a Result's shared outbound list, from its facts when it
// has them.
func factsOf(r *Result) ([]string, []string) {
	if r.facts != nil {
		return r.facts.get(r.outbound)
	}
	return names(r.outbound), hosts(r.outbound)
}

// outboundMemo remembers the change between two shared outbound lists, by their identity. Its
// keys hold the lists, so it keeps at most memoSize of them: workloads come grouped by
// namespace, so the pairs a run needs next are the recent ones, and the predictors' own bounded
// caches can let the others go.
type outboundMemo struct {
	mu sync.Mutex
	m  map[outboundPair]Delta
}

const memoSize = 32

type outboundPair struct {
	before, after *Cluster
	nb, na        int
}

func (m *outboundMemo) get(b, a *Result) Delta {
	before, after := b.outbound, a.outbound
	k := outboundPair{first(before), first(after), len(before), len(after)}
	m.mu.Lock()
	d, ok := m.m[k]
	m.mu.Unlock()
	if ok {
		return d
	}
	bn, bh := factsOf(b)
	an, ah := factsOf(a)
	d = delta(len(before), len(after), bn, an, bh, ah)
	m.mu.Lock()
	if m.m == nil || len(m.m) >= memoSize {
		m.m = make(map[outboundPair]Delta, memoSize)
	}
	m.m[k] = d
	m.mu.Unlock()
	return d
}

func first(cs []Cluster) *Cluster {
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

// mergeSorted merges two sorted lists.
func mergeSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return out
}

func names(cs []Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	if !sort.StringsAreSorted(out) { // a Result's clusters are sorted by name already
		sort.Strings(out)
	}
	return out
}

// hosts returns the sorted service FQDNs with at least one outbound cluster.
func hosts(cs []Cluster) []string {
	var out []string
	for _, c := range cs {
		if c.Direction == Outbound {
			out = append(out, c.FQDN)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// minus returns the elements of a that b lacks, in a's order. Both are sorted (names and
// hosts sort them). A review compares a whole mesh's list with a scoped proxy's handful, so
// minus searches the longer list for each element of the shorter, and copies the runs of a
// between the matches: the cost is that of the short list's searches and one copy of the
// result, not a comparison per element of the long list.
func minus(a, b []string) []string {
	if len(b) > len(a) {
		// The other way round (what a scoped proxy gains): search b for each element of a.
		out := []string{}
		j := 0
		for _, x := range a {
			k, found := slices.BinarySearch(b[j:], x)
			j += k
			if !found {
				out = append(out, x)
			}
		}
		return out
	}
	// cut holds, for each element of b that a holds, its index in a (ascending).
	var cut []int
	i := 0
	for _, y := range b {
		j, found := slices.BinarySearch(a[i:], y)
		i += j
		for found && i < len(a) && a[i] == y { // a's equal elements all go
			cut = append(cut, i)
			i++
		}
		if i == len(a) {
			break
		}
	}
	out := make([]string, 0, len(a)-len(cut))
	prev := 0
	for _, k := range cut {
		out = append(out, a[prev:k]...)
		prev = k + 1
	}
	return append(out, a[prev:]...)
}

// Hosts returns the sorted service FQDNs the proxy has outbound clusters for.
func (r *Result) Hosts() []string { return hosts(r.outboundClusters()) }

// outboundClusters are the outbound clusters (and, for a Result built by hand, all of them:
// hosts and the root-namespace check look at outbound ones only).
func (r *Result) outboundClusters() []Cluster {
	if r.outbound != nil || r.Clusters == nil {
		return r.outbound
	}
	return r.Clusters
}

// merged returns Clusters, merging them first for a Result predicted without.
func (r *Result) merged() []Cluster {
	if r.Clusters == nil && (r.outbound != nil || r.rest != nil) {
		r.Clusters = mergeByName(r.outbound, r.rest)
	}
	return r.Clusters
}

// count is the number of CDS clusters, merged or not.
func (r *Result) count() int {
	if r.Clusters == nil {
		return len(r.outbound) + len(r.rest)
	}
	return len(r.Clusters)
}

// RoutedHosts returns the destination hosts of the VirtualServices (bound to the
// mesh gateway and visible to the proxy's namespace) whose hosts the proxy has
// clusters for. A scope that keeps such a VirtualService's host but lacks one of
// its destinations breaks a route the mesh config itself declares.
func (p *Predictor) RoutedHosts(r *Result) []string {
	ix := p.ix
	have := map[string]bool{}
	for _, h := range r.Hosts() {
		have[h] = true
	}
	var out []string
	ns := r.Proxy.Namespace
	lists := [][]*vsEntry{ix.vsPrivate[ns], ix.vsExported[ns], ix.vsPublic}
	for _, list := range lists {
		for _, e := range list {
			used := false
			for _, h := range e.hosts {
				if have[h] {
					used = true
					break
				}
			}
			if !used {
				continue
			}
			_, order := ix.destinations(e, ns)
			for _, h := range order {
				if _, ok := ix.byHostNs[h]; ok {
					out = append(out, h)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// RootNamespace returns the mesh root namespace of the inventory.
func (p *Predictor) RootNamespace() string { return p.ix.root }

// HasRootNamespaceHosts reports whether the proxy keeps a cluster for any service
// in the mesh root namespace (istiod and the telemetry and tracing services).
func (p *Predictor) HasRootNamespaceHosts(r *Result) bool {
	for _, s := range p.ix.services {
		if s.ns != p.ix.root {
			continue
		}
		for _, c := range r.outboundClusters() {
			if c.Direction == Outbound && c.FQDN == s.host {
				return true
			}
		}
	}
	return false
}

// RootNamespaceHasServices reports whether the root namespace holds any service at all.
func (p *Predictor) RootNamespaceHasServices() bool {
	for _, s := range p.ix.services {
		if s.ns == p.ix.root {
			return true
		}
	}
	return false
}

// Risk kinds.
const (
	RiskVirtualServiceDestination = "virtual_service_destination"
	RiskRootNamespace             = "root_namespace"
)

// Risk is a tightening that the mesh configuration itself says is unsafe.
type Risk struct {
	Kind    string `json:"kind"`
	Host    string `json:"host,omitempty"`
	Message string `json:"message"`
}

// WorkloadReview is one workload's predicted change between two inventories.
type WorkloadReview struct {
	Namespace string `json:"namespace"`
	// Workload is "Kind/name".
	Workload string `json:"workload"`
	Delta
	// ListenersBefore and ListenersAfter are the proxy's LDS listener counts (R48-R55).
	ListenersBefore int `json:"listeners_before"`
	ListenersAfter  int `json:"listeners_after"`
	// RoutesBefore and RoutesAfter count its RDS route configurations, VirtualHostsBefore and
	// VirtualHostsAfter their virtual hosts (R58-R61).
	RoutesBefore       int    `json:"routes_before"`
	RoutesAfter        int    `json:"routes_after"`
	VirtualHostsBefore int    `json:"virtual_hosts_before"`
	VirtualHostsAfter  int    `json:"virtual_hosts_after"`
	Risks              []Risk `json:"risks"`
}

// countBefore and countAfter fill the listener and route counts of one side.
func (rv *WorkloadReview) countBefore(p *Predictor, px Proxy) {
	rv.ListenersBefore = p.ListenerCount(px)
	rv.RoutesBefore, rv.VirtualHostsBefore = p.RouteCount(px)
}

func (rv *WorkloadReview) countAfter(p *Predictor, px Proxy) {
	rv.ListenersAfter = p.ListenerCount(px)
	rv.RoutesAfter, rv.VirtualHostsAfter = p.RouteCount(px)
}

// Review predicts the workload under base and under head and compares them.
func Review(base, head *Predictor, w WorkloadProxy) WorkloadReview {
	return NewReviewer(base, head).Review(w)
}

// Reviewer reviews many workloads between the same two predictors. Workloads whose scopes
// give them the same outbound clusters on each side share the comparison of those, which is
// most of the work on a mesh-wide change.
type Reviewer struct {
	base, head *Predictor
	memo       outboundMemo
}

// NewReviewer returns a Reviewer from base to head.
func NewReviewer(base, head *Predictor) *Reviewer { return &Reviewer{base: base, head: head} }

// Review is Review(base, head, w).
func (rv *Reviewer) Review(w WorkloadProxy) WorkloadReview {
	return review(rv.base, rv.head, w, &rv.memo)
}

// ReviewOneSide reviews a workload that runs a sidecar on one side only: in head only
// (starts), it had no cluster before; in base only, it has none after. Its proxies gain or lose
// every cluster.
func (rv *Reviewer) ReviewOneSide(w WorkloadProxy, starts bool) WorkloadReview {
	var before, after *Result
	out := WorkloadReview{Namespace: w.Namespace, Workload: w.Kind + "/" + w.Name, Risks: []Risk{}}
	if starts {
		after = rv.head.Predict(w.Proxy())
		out.countAfter(rv.head, w.Proxy())
	} else {
		before = rv.base.Predict(w.Proxy())
		out.countBefore(rv.base, w.Proxy())
	}
	out.Delta = compareLists(before, after)
	return out
}

func review(base, head *Predictor, w WorkloadProxy, memo *outboundMemo) WorkloadReview {
	// Shared outbound lists are compared through the memo, so they need no merged list.
	merge := memo == nil
	before := base.predict(w.Proxy(), merge)
	after := head.predict(w.Proxy(), merge)
	d := compare(before, after, memo)
	rv := WorkloadReview{Namespace: w.Namespace, Workload: w.Kind + "/" + w.Name, Delta: d, Risks: []Risk{}}
	rv.countBefore(base, w.Proxy())
	rv.countAfter(head, w.Proxy())
	if !d.Changed() {
		return rv
	}
	routed := map[string]bool{}
	for _, h := range head.RoutedHosts(after) {
		routed[h] = true
	}
	for _, h := range d.RemovedHosts {
		if routed[h] {
			rv.Risks = append(rv.Risks, Risk{Kind: RiskVirtualServiceDestination, Host: h,
				Message: "drops " + h + ", a destination of a VirtualService still in scope"})
		}
	}
	if head.RootNamespaceHasServices() && base.HasRootNamespaceHosts(before) && !head.HasRootNamespaceHosts(after) {
		rv.Risks = append(rv.Risks, Risk{Kind: RiskRootNamespace,
			Message: "no service of the root namespace \"" + head.RootNamespace() + "\" is left in scope: telemetry and tracing are at risk"})
	}
	return rv
}
