package predict

import (
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The conformance module checks every route, virtual host and domain against Istio's own
// generator (TestRoutesRandom, TestRouteCasesMeshscope). These tests pin what only meshscope
// decides: how a domain istiod gives out in an order it does not fix is named.

const sharedAddressMesh = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pair, namespace: a}
spec:
  hosts: [one.ext, two.ext]
  addresses: [240.0.0.9]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.40.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: many, namespace: a}
spec:
  hosts: [many.ext]
  addresses: [240.0.1.1, 240.0.1.2]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: STATIC
  endpoints: [{address: 10.40.0.2}]
`

// routeDomains are the domains of a virtual host of route 80 for a proxy of namespace a.
func routeDomains(t *testing.T, yaml, vhost string) []string {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("mesh", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Routes(Proxy{Namespace: "a", Labels: map[string]string{"app": "x"}}) {
		for _, vh := range r.VirtualHosts {
			if r.Name == "80" && vh.Name == vhost {
				return vh.Domains
			}
		}
	}
	t.Fatalf("no virtual host %s on route 80", vhost)
	return nil
}

func TestRouteDomainsOfSharedAddresses(t *testing.T) {
	// Two hosts of one ServiceEntry share its address: the first default virtual host istiod
	// builds keeps it, in map order, so each may or may not have it.
	for _, h := range []string{"one.ext", "two.ext"} {
		if got := routeDomains(t, sharedAddressMesh, h+":80"); !slices.Equal(got, []string{h, h + ".", "<240.0.0.9|none>"}) {
			t.Errorf("%s: domains %q, want the address as <240.0.0.9|none>", h, got)
		}
	}
	// One host, several addresses: one of them, which istiod does not fix.
	if got := routeDomains(t, sharedAddressMesh, "many.ext:80"); !slices.Equal(got, []string{"many.ext", "many.ext.", "<240.0.1.1|240.0.1.2>"}) {
		t.Errorf("many.ext: domains %q", got)
	}
	// A VirtualService's virtual host comes first and keeps the address; the other host has none.
	vs := sharedAddressMesh + `---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: two, namespace: a}
spec:
  hosts: [two.ext]
  http: [{route: [{destination: {host: two.ext}}]}]
`
	if got := routeDomains(t, vs, "two.ext:80"); !slices.Equal(got, []string{"two.ext", "two.ext.", "240.0.0.9"}) {
		t.Errorf("two.ext under its VirtualService: domains %q", got)
	}
	if got := routeDomains(t, vs, "one.ext:80"); strings.Contains(strings.Join(got, ","), "240.0.0.9") {
		t.Errorf("one.ext: domains %q keep the address the VirtualService's virtual host took", got)
	}
}
