package traffic

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

// Cut returns the calls to a service of the registry that a proxy with these outbound clusters
// would not route to that service: it has no outbound cluster for the host, or, when the call's
// port is known, none for that port. Under ALLOW_ANY such a call falls to PassthroughCluster and
// loses mTLS, routing and telemetry; under REGISTRY_ONLY it fails (BlackHoleCluster).
func Cut(calls []Call, outbound []predict.Cluster) []Call {
	var out []Call
	var ports map[string][]int
	for _, c := range calls {
		if !c.InRegistry() {
			continue
		}
		if ports == nil {
			ports = make(map[string][]int, len(outbound))
			for _, cl := range outbound {
				if cl.Direction == predict.Outbound {
					ports[cl.FQDN] = append(ports[cl.FQDN], cl.Port)
				}
			}
		}
		have, ok := ports[c.Host]
		if ok && c.Port != 0 {
			ok = false
			for _, p := range have {
				if p == c.Port {
					ok = true
					break
				}
			}
		}
		if !ok {
			out = append(out, c)
		}
	}
	return out
}

// Matches says whether a scope's dependency, as written ("name", "name.ns", the FQDN, a
// ServiceEntry host, "ns/*"), with its ports (none: every port), covers the call. namespace is
// the scope's namespace, domain the cluster's DNS suffix.
func (c Call) Matches(dependency string, ports []uint32, namespace, domain string) bool {
	if !c.InRegistry() {
		return false
	}
	if c.Port != 0 && len(ports) > 0 {
		found := false
		for _, p := range ports {
			if int(p) == c.Port {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	dep := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(dependency)), ".")
	if ns, rest, ok := strings.Cut(dep, "/"); ok && rest == "*" {
		// Sidecar egress "ns/*" imports every host of ns the workload can see: its Services and
		// the hosts of its ServiceEntries exported to the workload's namespace.
		return slices.Contains(c.Namespaces, ns)
	}
	if c.Class == ClassServiceEntry {
		return dep == c.Host || istioconfig.HostSubsetOf(dep, c.Host)
	}
	switch strings.Count(dep, ".") {
	case 0:
		return c.Service == dep+"."+namespace
	case 1:
		return c.Service == dep
	}
	return dep == c.Host || dep+"."+domain == c.Host
}

// Describe says what the call is, for a message: "1,204 requests over 7d to payments.pay.svc.cluster.local:8080 (http)".
func (c Call) Describe(window string) string {
	host := c.Host
	if host == "" {
		host = "an address Istio could not name"
	}
	if c.Port != 0 {
		host += ":" + strconv.Itoa(c.Port)
	}
	proto := ""
	if c.Protocol != "" {
		proto = " (" + c.Protocol + ")"
	}
	return fmt.Sprintf("%s over %s to %s%s", c.Amount(), window, host, proto)
}

// Amount is the call's count with its unit: "1 request", "1,204 requests", "3 connections".
func (c Call) Amount() string {
	if c.TCP {
		return Quantity(c.Count, "connection", "connections")
	}
	return Quantity(c.Count, "request", "requests")
}

// Quantity is a count of increase(), rounded as FormatCount rounds it, with the singular or
// plural noun: "1 request", "0 requests", "1,204 requests".
func Quantity(v float64, one, many string) string {
	s := FormatCount(v)
	if s == "1" {
		return "1 " + one
	}
	return s + " " + many
}

// FormatCount rounds a count from increase() (Prometheus extrapolates, so it is rarely whole)
// and groups its thousands: 1204.6 -> "1,205".
func FormatCount(v float64) string {
	n := int64(v + 0.5)
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
