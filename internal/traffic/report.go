package traffic

import (
	"maps"
	"slices"
	"strings"
)

// ReportLimit is the most entries each list of a Report holds; its counts are always full.
const ReportLimit = 10

// UnknownHost is a service host the inventory does not hold that calling workloads of the
// inventory called.
type UnknownHost struct {
	Host string
	// Requests and Connections count the calls to it, Workloads the workloads that made them.
	Requests, Connections float64
	Workloads             int
}

// Report is what the evidence holds that the inventory does not: none of it is silently
// dropped, and every surface reports it (CodeUnknownCallers, CodeUnattributed, CodeUnknownHosts).
type Report struct {
	// Callers are the calling workloads the inventory does not hold, sorted, at most
	// ReportLimit of them; CallerCount counts them all.
	Callers     []UnknownWorkload
	CallerCount int
	// Unattributed counts the series whose caller Istio could not name, in every namespace.
	Unattributed int
	// Hosts are the service hosts the inventory does not hold, sorted, at most ReportLimit of
	// them; HostCount counts them all.
	Hosts     []UnknownHost
	HostCount int
}

// Unknowns reports the callers and hosts the evidence holds that the inventory does not.
// keep filters the namespaces of the calling workloads (nil: all).
func (e *Evidence) Unknowns(keep func(ns string) bool) Report {
	if keep == nil {
		keep = func(string) bool { return true }
	}
	r := Report{Unattributed: e.Unattributed}
	for _, u := range e.UnknownWorkloads {
		if keep(u.Namespace) {
			r.CallerCount++
			if len(r.Callers) < ReportLimit {
				r.Callers = append(r.Callers, u)
			}
		}
	}
	hosts := map[string]*UnknownHost{}
	for _, k := range e.keys {
		ns, name, _ := strings.Cut(k, "/")
		if !keep(ns) {
			continue
		}
		seen := map[string]bool{}
		for _, c := range e.Calls(ns, name) {
			if c.Class != ClassUnknown {
				continue
			}
			h := hosts[c.Host]
			if h == nil {
				h = &UnknownHost{Host: c.Host}
				hosts[c.Host] = h
			}
			if c.TCP {
				h.Connections += c.Count
			} else {
				h.Requests += c.Count
			}
			if !seen[c.Host] {
				seen[c.Host] = true
				h.Workloads++
			}
		}
	}
	r.HostCount = len(hosts)
	for _, host := range slices.Sorted(maps.Keys(hosts)) {
		if len(r.Hosts) == ReportLimit {
			break
		}
		r.Hosts = append(r.Hosts, *hosts[host])
	}
	return r
}

// Amounts says how many requests and connections there were, never adding one to the other:
// "2,110 requests", "100 connections", "2,110 requests and 100 connections".
func Amounts(requests, connections float64) string {
	var parts []string
	if requests > 0 || connections == 0 {
		parts = append(parts, Quantity(requests, "request", "requests"))
	}
	if connections > 0 {
		parts = append(parts, Quantity(connections, "connection", "connections"))
	}
	return strings.Join(parts, " and ")
}

// Amount is Amounts of the workload's calls.
func (u UnknownWorkload) Amount() string { return Amounts(u.Requests, u.Connections) }

// Amount is Amounts of the calls to the host.
func (h UnknownHost) Amount() string { return Amounts(h.Requests, h.Connections) }
