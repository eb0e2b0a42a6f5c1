package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// CutCall is an observed call that the head tree's Sidecars would cut: the workload's proxy
// has no outbound cluster for its host (or, when the metrics give the port, for that port).
// Under ALLOW_ANY it falls to PassthroughCluster; under REGISTRY_ONLY it fails.
type CutCall struct {
	Host     string `json:"host"`
	Port     int    `json:"port,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Count is the number of requests or connections (Unit) over the window, rounded.
	Count int64  `json:"count"`
	Unit  string `json:"unit"`
	// Dependency is the element to declare for it: "name.namespace" or a ServiceEntry host.
	Dependency string `json:"dependency"`
	// New says the base tree routes the call (or has no such workload): this change cuts it.
	// Otherwise the call is cut today already.
	New bool `json:"new"`
	// Unroutable is the compiler's reason no scope of the workload's namespace can route the
	// call (a Service not exported there, say), so declaring Dependency does not mend it; "" when it does.
	Unroutable string `json:"unroutable,omitempty"`
}

// diffEvidence is the evidence diff checks the head tree against.
type diffEvidence struct {
	*traffic.Evidence
	route    *routability
	outbound outboundIndex
}

// outboundIndex finds the clusters of an outbound list by host, so that a call is checked
// against the few clusters of its host rather than a whole mesh's. It keeps the index of the
// last lists it saw: the predictor gives the proxies of one scope the same list, and the
// workloads come grouped by namespace.
type outboundIndex struct {
	m map[outboundKey]map[string][]int
}

type outboundKey struct {
	first *predict.Cluster
	n     int
}

const outboundIndexSize = 16

// cut is traffic.Cut(calls, outbound), given only the clusters of the calls' hosts.
func (x *outboundIndex) cut(calls []traffic.Call, outbound []predict.Cluster) []traffic.Call {
	if len(outbound) == 0 {
		return traffic.Cut(calls, nil)
	}
	k := outboundKey{&outbound[0], len(outbound)}
	byHost, ok := x.m[k]
	if !ok {
		byHost = map[string][]int{}
		for i, c := range outbound {
			byHost[c.FQDN] = append(byHost[c.FQDN], i)
		}
		if x.m == nil || len(x.m) >= outboundIndexSize {
			x.m = make(map[outboundKey]map[string][]int, outboundIndexSize)
		}
		x.m[k] = byHost
	}
	var relevant []predict.Cluster
	var hosts []string
	for _, c := range calls {
		if slices.Contains(hosts, c.Host) {
			continue
		}
		hosts = append(hosts, c.Host)
		for _, i := range byHost[c.Host] {
			relevant = append(relevant, outbound[i])
		}
	}
	return traffic.Cut(calls, relevant)
}

// CutRow is a workload whose cluster list does not change but whose observed calls the head
// tree cuts: an existing Sidecar cutting real traffic today.
type CutRow struct {
	Namespace        string    `json:"namespace"`
	Workload         string    `json:"workload"` // Kind/name
	ObservedCut      []CutCall `json:"observed_cut"`
	ObservedCutCount int       `json:"observed_cut_count"`
}

// observedCuts checks a workload's observed calls against the head tree's outbound clusters,
// and each cut one against the base tree's; inBase says the base tree holds the workload. The
// result is sorted: new cuts first, then the largest counts.
func observedCuts(ev *diffEvidence, base, head *predict.Predictor, w predict.WorkloadProxy, inBase bool) []CutCall {
	calls := ev.Calls(w.Namespace, w.Name)
	if len(calls) == 0 {
		return nil
	}
	cut := ev.outbound.cut(calls, head.Outbound(w.Proxy()))
	if len(cut) == 0 {
		return nil
	}
	cutBefore := map[string]bool{}
	if inBase {
		for _, c := range ev.outbound.cut(cut, base.Outbound(w.Proxy())) {
			cutBefore[callKey(c)] = true
		}
	}
	out := make([]CutCall, 0, len(cut))
	for _, c := range cut {
		out = append(out, CutCall{Host: c.Host, Port: c.Port, Protocol: c.Protocol, Count: int64(c.Count + 0.5), Unit: c.Unit(),
			Dependency: c.Dependency(), New: !inBase || !cutBefore[callKey(c)]})
	}
	for i, why := range ev.route.reasons(w.Namespace, out) {
		out[i].Unroutable = why
	}
	slices.SortStableFunc(out, func(a, b CutCall) int {
		return cmp.Or(boolRank(!a.New)-boolRank(!b.New), cmp.Compare(b.Count, a.Count), strings.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	return out
}

func callKey(c traffic.Call) string {
	return fmt.Sprintf("%s|%d|%t", c.Host, c.Port, c.TCP)
}

// cappedCuts caps a list at limit (0: no cap).
func cappedCuts(l []CutCall, limit int) []CutCall {
	if limit > 0 && len(l) > limit {
		return slices.Clone(l[:limit])
	}
	return l
}

func countNew(l []CutCall) int {
	n := 0
	for _, c := range l {
		if c.New {
			n++
		}
	}
	return n
}

// describeCut is "cart.shop.svc.cluster.local:80 (310 requests, new)".
func describeCut(c CutCall) string {
	host := c.Host
	if c.Port != 0 {
		host = fmt.Sprintf("%s:%d", host, c.Port)
	}
	extra := ""
	if c.New {
		extra = ", new"
	}
	if c.Unroutable != "" {
		extra += ", no scope can route it"
	}
	return fmt.Sprintf("%s (%s%s)", host, c.amount(), extra)
}

// amount is the count with its unit: "1 request", "35 requests".
func (c CutCall) amount() string {
	return traffic.Quantity(float64(c.Count), strings.TrimSuffix(c.Unit, "s"), c.Unit)
}

// cutList is the table cell of a list of cuts, capped, with the full count.
func cutList(l []CutCall, count int) string {
	if count == 0 {
		return "-"
	}
	parts := make([]string, len(l))
	for i, c := range l {
		parts[i] = describeCut(c)
	}
	out := strings.Join(parts, ", ")
	if more := count - len(l); more > 0 {
		out += fmt.Sprintf(" (+%d more)", more)
	}
	return out
}

// mdCut is one markdown line of a cut call.
func mdCut(ns, workload string, c CutCall, window string) string {
	host := "`" + c.Host + "`"
	if c.Port != 0 {
		host = fmt.Sprintf("`%s:%d`", c.Host, c.Port)
	}
	elem := fmt.Sprintf("{ service = %q }", c.Dependency)
	if c.Port != 0 {
		elem = fmt.Sprintf("{ service = %q, ports = [%d] }", c.Dependency, c.Port)
	}
	fix := fmt.Sprintf("declare `%s`", elem)
	if c.Unroutable != "" {
		fix = "no scope can route it: " + c.Unroutable
	}
	return fmt.Sprintf("`%s/%s`: %s over %s to %s; %s\n", ns, workload, c.amount(), window, host, fix)
}
