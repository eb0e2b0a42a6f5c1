package predict

import (
	"errors"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// FuzzLoadAndPredict feeds arbitrary YAML to the inventory loader and predicts
// every workload of whatever loads, with and without the inventory's Sidecars:
// bad input is a *mesh.DocumentError, never a panic, a prediction always holds
// the fixed clusters, and every route a listener asks for is predicted once.
func FuzzLoadAndPredict(f *testing.F) {
	f.Add(seedYAML(f))
	f.Add(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{port: {number: 80, protocol: HTTP, name: http}, hosts: ["./*", "~/*", "*/x.y"]}]
  ingress: [{port: {number: 80, protocol: HTTP, name: http}, defaultEndpoint: "127.0.0.1:80"}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d, namespace: foo}
spec: {host: "*.foo.svc.cluster.local", subsets: [{name: v1, labels: {v: "1"}}], exportTo: ["."]}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se, namespace: foo}
spec: {hosts: ["api.example.com"], ports: [{number: 443, name: https, protocol: TLS}], resolution: DNS, workloadSelector: {labels: {app: x}}}
`)
	f.Add("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: [{port: 0}]}}]\n")
	// ExternalName aliases that point at each other, and an HTTP_PROXY egress port (R59, R60).
	f.Add(`apiVersion: v1
kind: Service
metadata: {name: a, namespace: foo}
spec: {type: ExternalName, externalName: b.foo.svc.cluster.local, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: foo}
spec: {type: ExternalName, externalName: a.foo.svc.cluster.local, ports: [{name: http, port: 80}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{port: {number: 3128, protocol: HTTP_PROXY, name: proxy}, bind: 127.0.0.1, hosts: ["*/*"]}, {hosts: ["*/*"]}]
---
apiVersion: v1
kind: Service
metadata: {name: c, namespace: foo}
spec: {selector: {app: w}, ports: [{name: http, port: 3128}, {name: web, port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: w, namespace: foo}
spec: {template: {metadata: {labels: {app: w}}}}
`)
	f.Fuzz(func(t *testing.T, doc string) {
		inv := mesh.New()
		if err := inv.AddYAML("fuzz", []byte(doc)); err != nil {
			var de *mesh.DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("AddYAML error is %T, not a *mesh.DocumentError: %v", err, err)
			}
		}
		p, err := New(inv, Options{})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		bare := p.WithoutSidecars(func(*mesh.Sidecar) bool { return true })
		for _, w := range p.WorkloadProxies() {
			for _, pr := range []*Predictor{p, bare} {
				res := pr.Predict(w.Proxy())
				if len(res.Clusters) < 3 {
					t.Fatalf("%s/%s: %d clusters, fewer than the fixed three", w.Namespace, w.Name, len(res.Clusters))
				}
				_ = Review(bare, p, w)
				asked := map[string]bool{}
				for _, l := range pr.Listeners(w.Proxy()) {
					for _, r := range l.Routes {
						asked[r] = true
					}
				}
				routes := pr.Routes(w.Proxy())
				for _, r := range routes {
					if !asked[r.Name] {
						t.Fatalf("%s/%s: route %q that no listener asks for", w.Namespace, w.Name, r.Name)
					}
				}
				if len(routes) != len(asked) {
					t.Fatalf("%s/%s: %d routes for %d route names the listeners ask for", w.Namespace, w.Name, len(routes), len(asked))
				}
				checkCounts(t, pr, w)
				_ = pr.Endpoints(res)
			}
		}
	})
}
