package istioconfig

import "strings"

// Host names, as Istio's pkg/config/host compares them. A name that starts with "*" is a
// wildcard covering every name with the rest as its suffix ("*.example.com" covers
// "api.example.com"; "*" covers all).

// IsWildcard reports whether a host name starts with "*".
func IsWildcard(h string) bool { return len(h) > 0 && h[0] == '*' }

// HostSubsetOf reports whether every name h covers is covered by o: "a.example.com" and
// "*.b.example.com" are subsets of "*.example.com", "*.example.com" is not a subset of
// "a.example.com". Istio: pkg/config/host.Name.SubsetOf.
func HostSubsetOf(h, o string) bool {
	hw, ow := IsWildcard(h), IsWildcard(o)
	switch {
	case hw && ow:
		if len(h) < len(o) {
			return false
		}
		return strings.HasSuffix(h[1:], o[1:])
	case hw:
		return false
	case ow:
		return strings.HasSuffix(h, o[1:])
	}
	return h == o
}

// HostsOverlap reports whether some name is covered by both h and o (a subset either way).
// Istio: pkg/config/host.Name.Matches.
func HostsOverlap(h, o string) bool {
	hw, ow := IsWildcard(h), IsWildcard(o)
	switch {
	case hw && ow:
		if len(h) < len(o) {
			return strings.HasSuffix(o[1:], h[1:])
		}
		return strings.HasSuffix(h[1:], o[1:])
	case hw:
		return strings.HasSuffix(o, h[1:])
	case ow:
		return strings.HasSuffix(h, o[1:])
	}
	return h == o
}

// MoreSpecific reports whether host a is more specific than b: a non-wildcard beats a
// wildcard, then the longer name wins. Ties go by string order, so that a choice never
// depends on map order. Istio: pkg/config/host.MoreSpecific.
func MoreSpecific(a, b string) bool {
	aw, bw := IsWildcard(a), IsWildcard(b)
	if aw != bw {
		return !aw
	}
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

// MostSpecificHostMatch looks needle up among hosts split into exact and wildcard names: an
// exact entry first, else the most specific wildcard that covers needle. Istio:
// pilot/pkg/model.MostSpecificHostMatch.
func MostSpecificHostMatch[V any](needle string, specific, wildcard map[string]V) (V, bool) {
	var zero V
	if IsWildcard(needle) {
		if v, ok := wildcard[needle]; ok {
			return v, true
		}
		return mostSpecificWildcard(needle[1:], wildcard)
	}
	if v, ok := specific[needle]; ok {
		return v, true
	}
	if len(wildcard) == 0 {
		return zero, false
	}
	return mostSpecificWildcard(needle, wildcard)
}

func mostSpecificWildcard[V any](needle string, wildcard map[string]V) (V, bool) {
	var (
		match string
		val   V
		found bool
	)
	for h, v := range wildcard {
		if strings.HasSuffix(needle, h[1:]) {
			if !found || MoreSpecific(h, match) {
				match, val, found = h, v, true
			}
		}
	}
	return val, found
}

// ResolveShortName makes a short host of a config in namespace ns a Kubernetes FQDN:
// "reviews" in "bookinfo" is "reviews.bookinfo.svc.<domain>". A name with a dot, "*", an IP
// address and "" are kept. Istio: pilot/pkg/model.ResolveShortnameToFQDN.
func ResolveShortName(h, ns, domain string) string {
	if h == "" || h == "*" || isIPv6(h) || strings.Contains(h, ".") {
		return h
	}
	out := h
	if ns != "" {
		out += "." + ns
	}
	if domain != "" {
		out += ".svc." + domain
	}
	return out
}

// isIPv6 reports whether a name without a dot is an IP address: only an IPv6 one can be.
func isIPv6(s string) bool { return strings.Contains(s, ":") }

// EgressHost is a Sidecar egress host "namespace/dnsName", split (rule R17).
type EgressHost struct {
	// Namespace is the part before "/": a namespace, "." (the Sidecar's own) or "*" (any).
	// For an exclusion it is without its "~", and "*" for "~/...".
	Namespace string
	// Name is the DNS name after "/", possibly a wildcard.
	Name string
	// Excluded marks "~namespace/dnsName": the hosts it names are excluded, not imported.
	Excluded bool
}

// ParseEgressHost splits a Sidecar egress host. A host without exactly one "/" is not one
// (ok is false): Istio skips it. With exclusions (Version.EgressExclusions), a "~" before the
// namespace makes the host an exclusion; without, "~ns" is a namespace name that matches
// nothing. Istio: pilot/pkg/model/sidecar.go hostClassification.
func ParseEgressHost(h string, exclusions bool) (eh EgressHost, ok bool) {
	if strings.Count(h, "/") != 1 {
		return EgressHost{}, false
	}
	ns, name, _ := strings.Cut(h, "/")
	excluded := exclusions && strings.HasPrefix(ns, "~")
	if excluded {
		ns = strings.TrimPrefix(ns, "~")
		if ns == "" {
			ns = "*"
		}
	}
	return EgressHost{Namespace: ns, Name: name, Excluded: excluded}, true
}
