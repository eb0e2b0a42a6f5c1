package scope

import (
	"reflect"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// indexExtra adds to the seed what a dependency can resolve to besides a plain Service: a
// Service not exported to bar, a UDP-only port, an ExternalName alias, ServiceEntries with a
// wildcard host and in another namespace.
const indexExtra = fixture.Ledger + `---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: pay}
spec:
  selector: {app: dns}
  ports: [{name: dns, port: 53, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: pay}
spec: {type: ExternalName, externalName: api.example.com}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: google, namespace: pay}
spec:
  hosts: ["*.googleapis.com"]
  ports: [{number: 443, name: https, protocol: TLS}]
  resolution: DNS
`

// TestIndexInventoryCompilesAsTheWhole pins the Index's promise: compiling a declaration
// against Index.Inventory gives what compiling it against the whole inventory gives, results
// and problems alike.
func TestIndexInventoryCompilesAsTheWhole(t *testing.T) {
	inv := seedInventory(t)
	if err := inv.AddYAML("extra", []byte(indexExtra)); err != nil {
		t.Fatal(err)
	}
	idx := NewIndex(inv)
	for _, tc := range []struct {
		name string
		d    Declaration
	}{
		{"service", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "foo.foo", Ports: []uint32{80}}}}},
		{"bare name", Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "foo"}}}},
		{"fqdn", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "foo.foo.svc.cluster.local"}}}},
		{"not exported", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "ledger.pay"}}}},
		{"udp only", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "dns.pay", Ports: []uint32{53}}}}},
		{"port not exposed", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "foo.foo", Ports: []uint32{81}}}}},
		{"external name", Declaration{Namespace: "bar", OutboundTrafficPolicy: "REGISTRY_ONLY", Dependencies: []Dependency{{Service: "ext.pay"}}}},
		{"wildcard service entry", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "storage.googleapis.com", Ports: []uint32{443}}}}},
		{"namespace", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "pay/*", Ports: []uint32{9999}}}}},
		{"namespace exposing the port", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "pay/*", Ports: []uint32{8080}}}}},
		{"namespace of Services only", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "kube-system/*"}}}},
		{"namespace of Services only, with ports", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "kube-system/*", Ports: []uint32{53, 9999}}}}},
		{"unknown namespace dependency", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "ghost/*"}}}},
		{"unknown", Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "nope.pay"}, {Service: "foo.foo"}}}},
		{"unknown namespace", Declaration{Namespace: "ghost", Dependencies: []Dependency{{Service: "foo.foo"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, wp := Compile(inv, tc.d, Options{})
			slim, sp := Compile(idx.Inventory(tc.d), tc.d, Options{})
			if !reflect.DeepEqual(wp, sp) {
				t.Errorf("problems differ:\nwhole %+v\nslim  %+v", wp, sp)
			}
			if (whole == nil) != (slim == nil) || (whole != nil && whole.Manifest != slim.Manifest) {
				t.Errorf("results differ:\nwhole %+v\nslim  %+v", whole, slim)
			}
		})
	}
	// The slim inventory holds only what the declaration may name.
	slim := idx.Inventory(Declaration{Namespace: "bar", Dependencies: []Dependency{{Service: "foo.foo"}}})
	if len(slim.Services) != 1 || slim.Services[0].Name != "foo" {
		t.Errorf("slim inventory services: %v, want foo/foo only", serviceKeys(slim))
	}
}

func serviceKeys(inv *mesh.Inventory) []string {
	var out []string
	for _, s := range inv.Services {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	return out
}
