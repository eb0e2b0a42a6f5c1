package testenv

import (
	"net/netip"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDecodeYAMLSeed(t *testing.T) {
	b, err := os.ReadFile("../../examples/seed/manifests/istio-system.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeYAML(string(b) + "\n---\n# only a comment\n")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{"Service/istio-system/istiod", "Service/istio-system/istio-ingressgateway"}
	if len(names) != len(want) || names[0] != want[0] || names[1] != want[1] {
		t.Errorf("decoded %v, want %v", names, want)
	}
	if _, err := decodeYAML("apiVersion: v1\nkind: Service\n"); err == nil {
		t.Error("an object without a name: no error")
	}
}

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
	}}}}
	for _, tc := range []struct {
		sp   corev1.ServicePort
		want int32
	}{
		{corev1.ServicePort{Port: 80}, 80},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9090)}, 9090},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("web")}, 8080},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolUDP}, 0},
		{corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("missing")}, 0},
	} {
		if got := targetPort(tc.sp, []*corev1.Pod{pod}); got != tc.want {
			t.Errorf("targetPort(%+v) = %d, want %d", tc.sp, got, tc.want)
		}
	}
}

func TestUniqueIP(t *testing.T) {
	prefix := netip.MustParsePrefix("10.128.0.0/9")
	for range 1000 {
		ip := netip.MustParseAddr(UniqueIP())
		if !prefix.Contains(ip) || ip.As4()[3] == 0 || ip.As4()[3] == 255 {
			t.Fatalf("UniqueIP() = %s, want a host address in %s", ip, prefix)
		}
	}
}
