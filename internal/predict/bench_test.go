package predict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// genMesh builds a mesh of nsCount namespaces with svcPerNs services each (two
// ports per service), one Deployment per service, and, for every workload, a
// Sidecar importing 5 services drawn with a skew towards a few hub services.
func genMesh(nsCount, svcPerNs int) string {
	var b strings.Builder
	n := nsCount * svcPerNs
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%nsCount)
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Service
metadata: {name: svc-%d, namespace: %s}
spec: {selector: {app: app-%d}, ports: [{name: http, port: 80, targetPort: 8080}, {name: grpc, port: 9090}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%d, namespace: %s}
spec: {template: {metadata: {labels: {app: app-%d}}}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: app-%d, namespace: %s}
spec:
  workloadSelector: {labels: {app: app-%d}}
  egress: [{hosts: [`, i, ns, i, i, ns, i, i, ns, i)
		for k := 0; k < 5; k++ {
			// hubs: the first 10 services take half of the calls
			j := (i*7 + k*131) % n
			if k%2 == 0 {
				j = (i + k) % 10
			}
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", fmt.Sprintf("ns-%d/svc-%d.ns-%d.svc.cluster.local", j%nsCount, j, j%nsCount))
		}
		b.WriteString("]}]\n")
	}
	return b.String()
}

// BenchmarkPredict predicts 1,000 proxies of a 10,000-service mesh in 1,000 namespaces.
func BenchmarkPredict(b *testing.B) {
	inv := mesh.New()
	if err := inv.AddYAML("gen", []byte(genMesh(1000, 10))); err != nil {
		b.Fatal(err)
	}
	proxies := make([]Proxy, 0, 1000)
	for i := 0; i < 1000; i++ {
		j := i * 10
		proxies = append(proxies, Proxy{Namespace: fmt.Sprintf("ns-%d", j%1000), Labels: map[string]string{"app": fmt.Sprintf("app-%d", j)}})
	}
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, err := New(inv, Options{})
		if err != nil {
			b.Fatal(err)
		}
		total := 0
		for _, px := range proxies {
			total += len(p.Predict(px).Clusters)
		}
		if total == 0 {
			b.Fatal("no clusters predicted")
		}
	}
}

// BenchmarkRoutesUnscoped predicts the routes of one proxy without a Sidecar in a 10,000-service
// mesh: route 80 holds a virtual host for every service, the worst case of proxy-config route.
// BenchmarkListenersUnscoped is the same proxy's listeners, side by side.
func BenchmarkRoutesUnscoped(b *testing.B) {
	benchUnscoped(b, func(p *Predictor, px Proxy) int { return len(p.Routes(px)) })
}

func BenchmarkListenersUnscoped(b *testing.B) {
	benchUnscoped(b, func(p *Predictor, px Proxy) int { return len(p.Listeners(px)) })
}

func benchUnscoped(b *testing.B, run func(*Predictor, Proxy) int) {
	inv := mesh.New()
	if err := inv.AddYAML("gen", []byte(genMesh(1000, 10))); err != nil {
		b.Fatal(err)
	}
	inv = inv.WithoutSidecars(func(*mesh.Sidecar) bool { return true })
	p, err := New(inv, Options{})
	if err != nil {
		b.Fatal(err)
	}
	px := Proxy{Namespace: "ns-0", Labels: map[string]string{"app": "app-0"}}
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if run(p, px) == 0 {
			b.Fatal("nothing predicted")
		}
	}
}
