package predict

import (
	"errors"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// FuzzLoadAndPredict feeds arbitrary YAML to the inventory loader and predicts
// every workload of whatever loads, with and without the inventory's Sidecars:
// bad input is a *mesh.DocumentError, never a panic, and a prediction always
// holds the fixed clusters.
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
			}
		}
	})
}
