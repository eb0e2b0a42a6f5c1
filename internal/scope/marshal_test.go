package scope

import (
	"encoding/json"
	"testing"

	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"
)

// Marshal prints what sigs.k8s.io/yaml's JSONToYAML prints for the Sidecar's JSON, byte for
// byte: numbers stay integers (2000000, not 2e+06), label values that read as numbers, booleans or null stay quoted
// strings, keys sort naturally (port-10 after port-9).
func TestMarshal_asJSONToYAML(t *testing.T) {
	labels := map[string]string{"app": "x", "version": "2", "canary": "true", "none": "null", "hex": "0x1F", "exp": "1e3", "managed-by": "meshscope"}
	specs := []*networking.Sidecar{
		{},
		{
			WorkloadSelector: &networking.WorkloadSelector{Labels: labels},
			Egress: []*networking.IstioEgressListener{
				{Hosts: []string{"istio-system/*", "./foo.foo.svc.cluster.local"}, Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http-80"}},
				{Hosts: []string{"*/api.example.com"}, Port: &networking.SidecarPort{Number: 65535, Protocol: "TCP", Name: "tcp-65535"}},
				{Hosts: []string{"istio-system/*"}},
			},
			Ingress: []*networking.IstioIngressListener{
				{Port: &networking.SidecarPort{Number: 9, Protocol: "HTTP", Name: "port-9"}, DefaultEndpoint: "127.0.0.1:9"},
				{Port: &networking.SidecarPort{Number: 10, Protocol: "GRPC", Name: "port-10"}, DefaultEndpoint: "unix:///var/run/x.sock",
					// A number of seven digits, which a float prints with an exponent.
					ConnectionPool: &networking.ConnectionPoolSettings{Tcp: &networking.ConnectionPoolSettings_TCPSettings{MaxConnections: 2000000}}},
			},
			OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY},
		},
		{OutboundTrafficPolicy: &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_ALLOW_ANY}},
	}
	for i, spec := range specs {
		got, err := Marshal("name-1", "ns", labels, spec)
		if err != nil {
			t.Fatal(err)
		}
		// The way Marshal printed before: the JSON of the object, then JSONToYAML.
		specJSON, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var specMap map[string]any
		if err := json.Unmarshal(specJSON, &specMap); err != nil {
			t.Fatal(err)
		}
		if otp := spec.GetOutboundTrafficPolicy(); otp != nil {
			specMap["outboundTrafficPolicy"] = map[string]any{"mode": otp.GetMode().String()}
		}
		js, err := json.Marshal(map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
			"metadata": map[string]any{"name": "name-1", "namespace": "ns", "labels": labels},
			"spec":     specMap,
		})
		if err != nil {
			t.Fatal(err)
		}
		want, err := yaml.JSONToYAML(js)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("spec %d:\n%s\nJSONToYAML:\n%s", i, got, want)
		}
	}
}
