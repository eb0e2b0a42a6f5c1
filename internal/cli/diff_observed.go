package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/review"
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

	fix review.Fix
}

// CutRow is a workload whose cluster list does not change but whose observed calls the head
// tree cuts: an existing Sidecar cutting real traffic today.
type CutRow struct {
	Namespace        string    `json:"namespace"`
	Workload         string    `json:"workload"` // Kind/name
	ObservedCut      []CutCall `json:"observed_cut"`
	ObservedCutCount int       `json:"observed_cut_count"`
}

// cutCalls turns the review's cut calls into the rows of the document.
func cutCalls(cuts []review.CutCall) []CutCall {
	out := make([]CutCall, len(cuts))
	for i, c := range cuts {
		out[i] = CutCall{Host: c.Host, Port: c.Port, Protocol: c.Protocol, Count: int64(c.Count + 0.5), Unit: c.Unit(),
			Dependency: c.Fix.Dependency.Service, New: c.New, Unroutable: c.Fix.Refusal(), fix: c.Fix}
	}
	return out
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
	if !c.fix.Declarable() {
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
	fix := fmt.Sprintf("declare `%s`", c.fix.Dependency.Element())
	if !c.fix.Declarable() {
		fix = "no scope can route it: " + c.Unroutable
	}
	return fmt.Sprintf("`%s/%s`: %s over %s to %s; %s\n", ns, workload, c.amount(), window, host, fix)
}
