package predict

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestSharedScopes predicts the proxies of a mesh many times over, from several
// goroutines, with a budget that keeps evicting the shared sorted lists, and
// checks every result against a fresh Predictor's. A DestinationRule with a
// workloadSelector makes one namespace's outbound clusters depend on the proxy.
func TestSharedScopes(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		ns := fmt.Sprintf("ns%d", i%4)
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: svc%d, namespace: %s}
spec: {selector: {app: app%d}, ports: [{name: http, port: 80}, {name: grpc, port: 9090}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app%d, namespace: %s}
spec: {template: {metadata: {labels: {app: app%d}}}}
`, i, ns, i, i, ns, i)
	}
	b.WriteString(`---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pinned, namespace: ns1}
spec:
  host: svc0.ns0.svc.cluster.local
  workloadSelector: {matchLabels: {app: app1}}
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: narrow, namespace: ns2}
spec:
  workloadSelector: {labels: {app: app2}}
  egress: [{hosts: ["./*", "ns0/*"]}]
`)
	inv := mesh.New()
	if err := inv.AddYAML("gen", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	want := map[string][]Cluster{}
	var proxies []Proxy
	for i := 0; i < 40; i++ {
		px := Proxy{Namespace: fmt.Sprintf("ns%d", i%4), Labels: map[string]string{"app": fmt.Sprintf("app%d", i)}}
		proxies = append(proxies, px)
		fresh, err := New(inv, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want[px.Namespace+"/"+px.Labels["app"]] = fresh.Predict(px).Clusters
	}
	if slices.Equal(names(want["ns1/app1"]), names(want["ns1/app5"])) {
		t.Fatal("the workloadSelector DestinationRule made no difference: the test proves nothing")
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.budget = 100 // fewer clusters than one namespace's list: every new scope evicts
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 5; round++ {
				for i := range proxies {
					px := proxies[(i*7+g)%len(proxies)]
					got := p.Predict(px).Clusters
					got[0].Name = "changed by the caller" // results are the caller's to change
					if w := want[px.Namespace+"/"+px.Labels["app"]]; !slices.Equal(got[1:], w[1:]) {
						t.Errorf("%s/%s: got %v, want %v", px.Namespace, px.Labels["app"], names(got), names(w))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
