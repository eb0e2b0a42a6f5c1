package predict

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Protocols as istio's pkg/config/protocol names them. Only UDP, and for
// DYNAMIC_DNS wildcard ServiceEntries HTTP/TLS/GRPC/HTTP2, change cluster names.
const (
	protoUDP         = "UDP"
	protoTCP         = "TCP"
	protoHTTP        = "HTTP"
	protoHTTP2       = "HTTP2"
	protoGRPC        = "GRPC"
	protoTLS         = "TLS"
	protoHTTPProxy   = "HTTP_PROXY"
	protoUnsupported = "UnsupportedProtocol"
)

var knownProtocols = map[string]string{
	"tcp": "TCP", "udp": "UDP", "grpc": "GRPC", "grpc-web": "GRPC-Web", "http": "HTTP", "http_proxy": "HTTP_PROXY",
	"http2": "HTTP2", "https": "HTTPS", "tls": "TLS", "mongo": "Mongo", "redis": "Redis", "mysql": "MySQL",
}

// parseProtocol mirrors istio pkg/config/protocol.Parse.
func parseProtocol(s string) string {
	if p, ok := knownProtocols[strings.ToLower(s)]; ok {
		return p
	}
	return protoUnsupported
}

var wellKnownTCPPorts = map[int32]bool{25: true, 53: true, 3306: true, 27017: true}

// convertKubeProtocol mirrors istio pkg/config/kube.ConvertProtocol (rule R2).
func convertKubeProtocol(port int32, name string, proto corev1.Protocol, appProtocol *string) string {
	if proto == corev1.ProtocolUDP {
		return protoUDP
	}
	if appProtocol != nil {
		name = *appProtocol
		switch name {
		case "kubernetes.io/h2c":
			return protoHTTP2
		case "kubernetes.io/ws":
			return protoHTTP
		case "kubernetes.io/wss":
			return "HTTPS"
		}
	}
	if strings.HasPrefix(strings.ToLower(name), "grpc-web") {
		return "GRPC-Web"
	}
	prefix := name
	if i := strings.Index(name, "-"); i >= 0 {
		prefix = name[:i]
	}
	p := parseProtocol(prefix)
	if p == protoUnsupported && wellKnownTCPPorts[port] {
		return protoTCP
	}
	return p
}

// isWild reports whether a host name starts with "*".
func isWild(h string) bool { return len(h) > 0 && h[0] == '*' }

// subsetOf mirrors istio pkg/config/host.Name.SubsetOf: h is covered by o.
func subsetOf(h, o string) bool {
	hw, ow := isWild(h), isWild(o)
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

// hostMatches mirrors istio pkg/config/host.Name.Matches (bidirectional overlap).
func hostMatches(h, o string) bool {
	hw, ow := isWild(h), isWild(o)
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

// resolveShortName mirrors istio model.ResolveShortnameToFQDN.
func resolveShortName(h, ns, domain string) string {
	if h == "" || h == "*" || isIPAddress(h) || strings.Contains(h, ".") {
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

func isIPAddress(s string) bool {
	// Short names never contain ':' or only digits and dots; a name without a dot
	// that parses as an IP can only be IPv6.
	return strings.Contains(s, ":")
}

// mostSpecificHostMatch mirrors istio model.MostSpecificHostMatch.
func mostSpecificHostMatch[V any](needle string, specific, wildcard map[string]V) (V, bool) {
	var zero V
	if isWild(needle) {
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
			if !found || moreSpecific(h, match) {
				match, val, found = h, v, true
			}
		}
	}
	return val, found
}

// moreSpecific mirrors istio host.MoreSpecific: a longer or non-wildcard name wins;
// ties are broken by string order so the result never depends on map order.
func moreSpecific(a, b string) bool {
	aw, bw := isWild(a), isWild(b)
	if aw != bw {
		return !aw
	}
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

// labelsSubsetOf reports whether every label of sel is in lbls (an empty sel matches everything).
func labelsSubsetOf(sel, lbls map[string]string) bool {
	for k, v := range sel {
		if got, ok := lbls[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// selectorMatches is Kubernetes' Service selector semantics: an empty selector matches nothing.
func selectorMatches(sel, lbls map[string]string) bool {
	return len(sel) > 0 && labelsSubsetOf(sel, lbls)
}
