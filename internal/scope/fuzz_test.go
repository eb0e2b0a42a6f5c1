package scope

import (
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// FuzzCompile compiles arbitrary declarations against the seed inventory. Bad
// input is a Problem, never a panic; a scope that compiles without errors
// yields a manifest that loads back as the same Sidecar and decompiles.
func FuzzCompile(f *testing.F) {
	inv := seedInventory(f)
	f.Add("test-app", "foo", "app", "test-app", "foo.foo", uint32(80), "bar/*", uint32(0), uint32(80), "HTTP", "127.0.0.1:80", "")
	f.Add("", "bar", "", "", "kube-dns.kube-system", uint32(53), "api.example.com", uint32(443), uint32(0), "", "", "REGISTRY_ONLY")
	f.Add("x", "nope", "k/v", "v", "*/*", uint32(70000), "~/*", uint32(1), uint32(8080), "TCP", "unix:///x", "ALLOW_ANY")
	f.Fuzz(func(t *testing.T, name, ns, selKey, selVal, dep1 string, port1 uint32, dep2 string, port2, ingressPort uint32, proto, endpoint, policy string) {
		d := Declaration{Name: name, Namespace: ns, OutboundTrafficPolicy: policy,
			Dependencies: []Dependency{{Service: dep1, Ports: []uint32{port1}}, {Service: dep2}}}
		if port2 != 0 {
			d.Dependencies[1].Ports = []uint32{port2}
		}
		if selKey != "" {
			d.Selector = map[string]string{selKey: selVal}
		}
		if ingressPort != 0 {
			d.Ingress = []Ingress{{Port: ingressPort, Protocol: proto, DefaultEndpoint: endpoint}}
		}
		res, problems := Compile(inv, d, Options{})
		for _, p := range problems {
			// Every problem carries a defined code, whose summary and level it reports.
			def, ok := problem.Lookup(p.Code)
			if !ok || def.Summary != p.Summary || (def.Level == problem.Warning) != p.Warning {
				t.Fatalf("problem %+v: its code %q is not defined as its summary and level (%+v)", p, p.Code, def)
			}
		}
		for _, p := range problems {
			if !p.Warning {
				return
			}
		}
		if res == nil || res.Sidecar == nil {
			t.Fatalf("no error and no Sidecar for %+v", d)
		}
		sc, err := mesh.ParseSidecar("manifest", []byte(res.Manifest))
		if err != nil {
			t.Fatalf("the manifest of %+v does not load: %v\n%s", d, err, res.Manifest)
		}
		if sc.Namespace != res.Sidecar.Namespace || sc.Name != res.Sidecar.Name {
			t.Fatalf("manifest names %s, compiled %s", sc.Key(), res.Sidecar.Key())
		}
		_, _ = Decompile(sc, Options{}, mesh.DefaultRootNamespace)
		_ = Conflicts(inv, res.Sidecar)
	})
}
