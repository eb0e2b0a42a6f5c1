package predict

import (
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

const traceMesh = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: a}
spec: {clusterIP: 10.96.0.5, selector: {app: web}, ports: [{name: http, port: 80}, {name: tcp-db, port: 5432}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: x, namespace: a}
spec: {template: {metadata: {labels: {app: x}}}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: one, namespace: a, creationTimestamp: "2025-01-01T00:00:01Z"}
spec: {hosts: [one.ext], ports: [{number: 6379, name: tcp, protocol: TCP}], resolution: NONE, location: MESH_EXTERNAL}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: two, namespace: a, creationTimestamp: "2025-01-01T00:00:02Z"}
spec: {hosts: [two.ext], ports: [{number: 6379, name: tcp, protocol: TCP}], resolution: NONE, location: MESH_EXTERNAL}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: a}
spec:
  hosts: [web.a.svc.cluster.local]
  http: [{route: [{destination: {host: web.a.svc.cluster.local}}]}]
`

func tracePredictor(t *testing.T, extra ...string) *Predictor {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("mesh", []byte(strings.Join(append([]string{traceMesh}, extra...), "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTrace(t *testing.T) {
	x := Proxy{Namespace: "a", Labels: map[string]string{"app": "x"}}
	calls := tracePredictor(t).Trace(x, []HostPort{
		{Host: "web.a.svc.cluster.local"}, {Host: "one.ext", Port: 6379}, {Host: "two.ext", Port: 6379}, {Host: "nothere.ext", Port: 1},
	})
	want := []struct {
		listener, route, vs, cluster string
		reached                      bool
		step, why                    string
	}{
		// HTTP through route 80 and the VirtualService's virtual host, by every name a's DNS
		// resolves for web; TCP on the Service's VIP.
		{"0.0.0.0_80", "80", "a/web", "", true, "", ""},
		{"10.96.0.5_5432", "", "", "outbound|5432||web.a.svc.cluster.local", true, "", ""},
		// Two ServiceEntries without addresses share 0.0.0.0_6379: the first one's match-all
		// TCP chain takes every connection (R58), so calls to two.ext reach one.ext.
		{"0.0.0.0_6379", "", "", "outbound|6379||one.ext", true, "", ""},
		{"0.0.0.0_6379", "", "", "outbound|6379||one.ext", false, StepFilterChain, "sends TCP to one.ext"},
		{"virtualOutbound", "", "", "PassthroughCluster", false, StepImport, "imports no service nothere.ext"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.Listener != w.listener || c.Route != w.route || c.VirtualService != w.vs || c.Cluster != w.cluster ||
			c.Reached != w.reached || c.Step != w.step || !strings.Contains(c.Why, w.why) {
			t.Errorf("call %d to %s:%d: %+v, want %+v", i, c.Host, c.Port, c, w)
		}
	}
	// Under REGISTRY_ONLY a call no listener takes goes to BlackHoleCluster.
	strict := tracePredictor(t, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: a}
spec:
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
  egress: [{hosts: ["./one.ext"]}]
`)
	c := strict.Trace(x, []HostPort{{Host: "web.a.svc.cluster.local", Port: 80}})
	if len(c) != 1 || c[0].Reached || c[0].Cluster != "BlackHoleCluster" {
		t.Errorf("a call the Sidecar does not import under REGISTRY_ONLY: %+v", c)
	}
}

// The trace's HTTP steps: a call to an HTTP port whose listener is TCP reaches the cluster
// without its HTTP routes; a short name that DNS resolves for the service but whose domain
// another host's virtual host holds sends the call there.
func TestTraceHTTPSteps(t *testing.T) {
	x := Proxy{Namespace: "a", Labels: map[string]string{"app": "x"}}
	tcpPort := tracePredictor(t, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: a}
spec:
  egress: [{port: {number: 80, protocol: TCP, name: tcp}, hosts: ["./web.a.svc.cluster.local"]}, {hosts: ["./one.ext"]}]
`)
	c := tcpPort.Trace(x, []HostPort{{Host: "web.a.svc.cluster.local", Port: 80}})
	if len(c) != 1 || c[0].Reached || c[0].Step != StepHTTPRoutes || c[0].Listener != "10.96.0.5_80" ||
		c[0].Cluster != "outbound|80||web.a.svc.cluster.local" {
		t.Errorf("an HTTP port under a TCP port listener: %+v", c)
	}
	shadow := tracePredictor(t, `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: short, namespace: a}
spec: {hosts: [web.a], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}
`)
	c = shadow.Trace(x, []HostPort{{Host: "web.a.svc.cluster.local", Port: 80}})
	if len(c) != 1 || c[0].Reached || c[0].Step != StepVirtualHost || c[0].Name != "web.a" || c[0].VirtualHost != "web.a:80" {
		t.Errorf("a short name another host takes: %+v", c)
	}
}
