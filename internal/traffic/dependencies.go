package traffic

import (
	"slices"
	"strings"
)

// Dependency is a dependency of a workload scope, in the form the resource takes, with the
// evidence behind it.
type Dependency struct {
	// Service is "name.namespace" for a Kubernetes Service, or a ServiceEntry host.
	Service string
	// Ports are the ports called, sorted; empty when any call's port is uncertain (and then
	// for every dependency, see Dependencies).
	Ports []uint32
	// Requests counts the HTTP and gRPC requests to it, TCP the TCP connections opened: never
	// added together.
	Requests float64
	TCP      float64
}

// Dependencies turns a workload's calls into the dependencies of its scope: every destination
// of the registry it called (passthrough calls to a registry host included, since the scope is
// what fixes them), sorted by service. A port is listed only when it is certain: the metrics
// carry destination_port, or the destination has a single port. When any dependency's port is
// uncertain, none lists ports: a dependency without ports among dependencies with ports widens
// the whole Sidecar to every port anyway, and the provider warns about exactly that.
func Dependencies(calls []Call) []Dependency {
	by := map[string]*Dependency{}
	portless := false
	for _, c := range calls {
		name := c.Dependency()
		if name == "" {
			continue
		}
		d := by[name]
		if d == nil {
			d = &Dependency{Service: name}
			by[name] = d
		}
		if c.TCP {
			d.TCP += c.Count
		} else {
			d.Requests += c.Count
		}
		port := c.Port
		if port == 0 {
			port = c.OnlyPort
		}
		if port == 0 {
			portless = true
			continue
		}
		if !slices.Contains(d.Ports, uint32(port)) {
			d.Ports = append(d.Ports, uint32(port))
		}
	}
	out := make([]Dependency, 0, len(by))
	for _, d := range by {
		if portless {
			d.Ports = nil
		}
		slices.Sort(d.Ports)
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Dependency) int { return strings.Compare(a.Service, b.Service) })
	return out
}

// CountPhrase says what a dependency's count is: "1,204 requests", "3 connections" or
// "1,204 requests and 3 connections", over the window.
func (d Dependency) CountPhrase(window string) string {
	return Amounts(d.Requests, d.TCP) + " over " + window
}
