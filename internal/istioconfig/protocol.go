package istioconfig

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Istio's protocols, spelt as Istio's pkg/config/protocol spells them.
const (
	GRPC        = "GRPC"
	GRPCWeb     = "GRPC-Web"
	HTTP        = "HTTP"
	HTTPProxy   = "HTTP_PROXY"
	HTTP2       = "HTTP2"
	HTTPS       = "HTTPS"
	TCP         = "TCP"
	TLS         = "TLS"
	UDP         = "UDP"
	Mongo       = "Mongo"
	Redis       = "Redis"
	MySQL       = "MySQL"
	Unsupported = "UnsupportedProtocol"
)

// protocols is the one list of the protocols meshscope knows: Istio's, in the order the
// provider documents the listener protocols. listener marks those a Sidecar listener that
// meshscope writes may carry (UDP gets no cluster; HTTP_PROXY is for egress gateways' ports).
var protocols = []struct {
	name     string
	listener bool
}{
	{HTTP, true}, {HTTPS, true}, {HTTP2, true}, {GRPC, true}, {GRPCWeb, true}, {TCP, true}, {TLS, true},
	{Mongo, true}, {MySQL, true}, {Redis, true},
	{UDP, false}, {HTTPProxy, false},
}

var (
	byLowerName       = map[string]string{}
	listenerProtocols []string
)

func init() {
	for _, p := range protocols {
		byLowerName[strings.ToLower(p.name)] = p.name
		if p.listener {
			listenerProtocols = append(listenerProtocols, strings.ToUpper(p.name))
		}
	}
}

// ParseProtocol names a protocol in Istio's spelling, ignoring case; Unsupported for a name
// that is none. Istio: pkg/config/protocol.Parse.
func ParseProtocol(s string) string {
	if p, ok := byLowerName[strings.ToLower(s)]; ok {
		return p
	}
	return Unsupported
}

// SidecarListenerProtocols are the protocols a Sidecar listener that meshscope writes may
// carry, upper-cased as written in a Sidecar ("GRPC-WEB"), in the documented order. The
// caller may keep the slice; it is a copy.
func SidecarListenerProtocols() []string { return append([]string(nil), listenerProtocols...) }

// SidecarListenerProtocol returns p upper-cased when a Sidecar listener may carry it, else "".
func SidecarListenerProtocol(p string) string {
	up := strings.ToUpper(p)
	for _, l := range listenerProtocols {
		if l == up {
			return up
		}
	}
	return ""
}

// HTTPListener reports whether a listener of protocol p is an HTTP listener (HTTP, HTTP2,
// GRPC, GRPC-Web), ignoring case. Istio: pilot/pkg/networking.ModelProtocolToListenerProtocol.
func HTTPListener(p string) bool {
	switch ParseProtocol(p) {
	case HTTP, HTTP2, GRPC, GRPCWeb:
		return true
	}
	return false
}

// wellKnownTCPPorts are the ports whose unnamed Kubernetes ports Istio takes for TCP.
var wellKnownTCPPorts = map[int32]bool{25: true, 53: true, 3306: true, 27017: true}

// ConvertKubeProtocol is the protocol of a Kubernetes Service port (rule R2): UDP for a UDP
// port; else from the appProtocol, or from the port name's prefix before "-" ("http-web" is
// HTTP, "grpc-web..." GRPC-Web); an unnamed well-known TCP port is TCP, and anything else is
// Unsupported (sniffed). Istio: pkg/config/kube.ConvertProtocol.
func ConvertKubeProtocol(port int32, name string, proto corev1.Protocol, appProtocol *string) string {
	if proto == corev1.ProtocolUDP {
		return UDP
	}
	if appProtocol != nil {
		name = *appProtocol
		switch name {
		case "kubernetes.io/h2c":
			return HTTP2
		case "kubernetes.io/ws":
			return HTTP
		case "kubernetes.io/wss":
			return HTTPS
		}
	}
	if strings.HasPrefix(strings.ToLower(name), "grpc-web") {
		return GRPCWeb
	}
	prefix := name
	if i := strings.Index(name, "-"); i >= 0 {
		prefix = name[:i]
	}
	p := ParseProtocol(prefix)
	if p == Unsupported && wellKnownTCPPorts[port] {
		return TCP
	}
	return p
}
