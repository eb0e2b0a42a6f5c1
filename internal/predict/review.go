package predict

import (
	"slices"
	"sort"
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
func Compare(before, after *Result) Delta {
	var b, a []Cluster
	if before != nil {
		b = before.Clusters
	}
	if after != nil {
		a = after.Clusters
	}
	d := Delta{Before: len(b), After: len(a)}
	bn, an := names(b), names(a)
	d.AddedClusters = minus(an, bn)
	d.RemovedClusters = minus(bn, an)
	bh, ah := hosts(b), hosts(a)
	d.AddedHosts = minus(ah, bh)
	d.RemovedHosts = minus(bh, ah)
	return d
}

func names(cs []Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	sort.Strings(out)
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

func minus(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

// Hosts returns the sorted service FQDNs the proxy has outbound clusters for.
func (r *Result) Hosts() []string { return hosts(r.Clusters) }

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
		for _, c := range r.Clusters {
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
	Risks []Risk `json:"risks"`
}

// Review predicts the workload under base and under head and compares them.
func Review(base, head *Predictor, w WorkloadProxy) WorkloadReview {
	before := base.Predict(w.Proxy())
	after := head.Predict(w.Proxy())
	d := Compare(before, after)
	rv := WorkloadReview{Namespace: w.Namespace, Workload: w.Kind + "/" + w.Name, Delta: d, Risks: []Risk{}}
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
