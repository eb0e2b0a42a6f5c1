package istioconfig

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestHosts(t *testing.T) {
	for _, tc := range []struct {
		h, o            string
		subset, overlap bool
	}{
		{"a.example.com", "a.example.com", true, true},
		{"a.example.com", "*.example.com", true, true},
		{"*.example.com", "a.example.com", false, true},
		{"*.a.example.com", "*.example.com", true, true},
		{"*.example.com", "*.a.example.com", false, true},
		{"*.example.com", "*", true, true},
		{"a.example.com", "b.example.com", false, false},
		{"*.example.com", "*.example.org", false, false},
	} {
		if got := HostSubsetOf(tc.h, tc.o); got != tc.subset {
			t.Errorf("HostSubsetOf(%q, %q) = %v, want %v", tc.h, tc.o, got, tc.subset)
		}
		if got := HostsOverlap(tc.h, tc.o); got != tc.overlap {
			t.Errorf("HostsOverlap(%q, %q) = %v, want %v", tc.h, tc.o, got, tc.overlap)
		}
	}
	wild := map[string]int{"*": 1, "*.example.com": 2, "*.a.example.com": 3}
	for needle, want := range map[string]int{"x.a.example.com": 3, "b.example.com": 2, "example.org": 1, "*.b.example.com": 2} {
		if got, _ := MostSpecificHostMatch(needle, map[string]int{}, wild); got != want {
			t.Errorf("MostSpecificHostMatch(%q) = %d, want %d", needle, got, want)
		}
	}
	for h, want := range map[string]string{"reviews": "reviews.bookinfo.svc.cluster.local", "reviews.other": "reviews.other", "*": "*", "::1": "::1"} {
		if got := ResolveShortName(h, "bookinfo", "cluster.local"); got != want {
			t.Errorf("ResolveShortName(%q) = %q, want %q", h, got, want)
		}
	}
}

func TestParseEgressHost(t *testing.T) {
	for _, tc := range []struct {
		in         string
		exclusions bool
		want       EgressHost
		ok         bool
	}{
		{"istio-system/*", true, EgressHost{"istio-system", "*", false}, true},
		{"./reviews.bookinfo.svc.cluster.local", true, EgressHost{".", "reviews.bookinfo.svc.cluster.local", false}, true},
		{"~bar/*", true, EgressHost{"bar", "*", true}, true},
		{"~/*", true, EgressHost{"*", "*", true}, true},
		{"~bar/*", false, EgressHost{"~bar", "*", false}, true},
		{"reviews", true, EgressHost{}, false},
		{"a/b/c", true, EgressHost{}, false},
	} {
		got, ok := ParseEgressHost(tc.in, tc.exclusions)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseEgressHost(%q, %v) = %+v, %v; want %+v, %v", tc.in, tc.exclusions, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLabels_EmptySelectorSemantics(t *testing.T) {
	pod := map[string]string{"app": "a", "version": "v1"}
	if !LabelsSubset(nil, pod) || SelectorMatches(nil, pod) {
		t.Error("an empty workloadSelector selects every pod; an empty Service selector none")
	}
	if !LabelsSubset(map[string]string{"app": "a"}, pod) || LabelsSubset(map[string]string{"app": "b"}, pod) {
		t.Error("LabelsSubset")
	}
}

func TestProtocols(t *testing.T) {
	want := []string{"HTTP", "HTTPS", "HTTP2", "GRPC", "GRPC-WEB", "TCP", "TLS", "MONGO", "MYSQL", "REDIS"}
	if got := SidecarListenerProtocols(); !slices.Equal(got, want) {
		t.Errorf("SidecarListenerProtocols() = %q, want %q", got, want)
	}
	for in, want := range map[string]string{"grpc-web": GRPCWeb, "MONGO": Mongo, "http_proxy": HTTPProxy, "thrift": Unsupported} {
		if got := ParseProtocol(in); got != want {
			t.Errorf("ParseProtocol(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"udp": "", "http_proxy": "", "grpc-web": "GRPC-WEB", "Mongo": "MONGO"} {
		if got := SidecarListenerProtocol(in); got != want {
			t.Errorf("SidecarListenerProtocol(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{"http": true, "HTTP2": true, "grpc": true, "GRPC-WEB": true, "https": false, "tcp": false, "": false, "UnsupportedProtocol": false} {
		if got := HTTPListener(in); got != want {
			t.Errorf("HTTPListener(%q) = %v, want %v", in, got, want)
		}
	}
	h2c := "kubernetes.io/h2c"
	for _, tc := range []struct {
		port  int32
		name  string
		proto corev1.Protocol
		app   *string
		want  string
	}{
		{80, "http-web", corev1.ProtocolTCP, nil, HTTP},
		{80, "grpc-web-x", corev1.ProtocolTCP, nil, GRPCWeb},
		{80, "http", corev1.ProtocolUDP, nil, UDP},
		{80, "web", corev1.ProtocolTCP, &h2c, HTTP2},
		{3306, "", corev1.ProtocolTCP, nil, TCP},
		{8080, "", corev1.ProtocolTCP, nil, Unsupported},
	} {
		if got := ConvertKubeProtocol(tc.port, tc.name, tc.proto, tc.app); got != tc.want {
			t.Errorf("ConvertKubeProtocol(%d, %q, %s) = %q, want %q", tc.port, tc.name, tc.proto, got, tc.want)
		}
	}
}

func TestVisibility(t *testing.T) {
	ann := map[string]string{ExportToAnnotation: "., bar ,bar"}
	exp := EffectiveExportTo(AnnotationExportTo(ann), nil)
	if !slices.Equal(exp, []string{".", "bar"}) {
		t.Fatalf("exportTo %q", exp)
	}
	for ns, want := range map[string]bool{"foo": true, "bar": true, "baz": false} {
		if got := ExportedTo(exp, "foo", ns); got != want {
			t.Errorf("ExportedTo(%q, foo, %q) = %v, want %v", exp, ns, got, want)
		}
	}
	if got := EffectiveExportTo(nil, nil); !slices.Equal(got, []string{"*"}) {
		t.Errorf("no exportTo and no mesh default: %q, want public", got)
	}
	if got := EffectiveExportTo(nil, []string{"."}); !slices.Equal(got, []string{"."}) {
		t.Errorf("mesh default not used: %q", got)
	}
	if ExportedTo(EffectiveExportTo(nil, []string{}), "foo", "foo") {
		t.Error("an empty (set) mesh default exports nowhere")
	}
}

func TestCompareCreation(t *testing.T) {
	t0 := time.Unix(0, 0)
	older := Creation{t0, "z", "z"}
	newer := Creation{t0.Add(time.Second), "a", "a"}
	if CompareCreation(older, newer) >= 0 || CompareCreation(Creation{t0, "a", "z"}, Creation{t0, "b", "a"}) >= 0 ||
		CompareCreation(Creation{t0, "a", "a"}, Creation{t0, "a", "b"}) >= 0 || CompareCreation(older, older) != 0 {
		t.Error("want creation time, then name, then namespace")
	}
}
