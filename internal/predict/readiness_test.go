package predict

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// R57's readiness: which Pods behind a Service are endpoints, and with which status. The live
// test (provider TestAccProxyClusters_randomLive) checks the same rules against Kubernetes'
// EndpointSlice controller and istiod; this pins each rule on its own.
func TestEndpointReadiness(t *testing.T) {
	pod := func(name, ip, labels, status string) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: a, labels: {%s}%s}\n"+
			"spec: {nodeName: node-1, containers: [{name: app, image: app}]}\nstatus: %s\n", name, labels,
			map[bool]string{true: ", deletionTimestamp: \"2026-01-01T00:00:00Z\""}[status == "terminating" || status == "terminating-ready"],
			map[string]string{
				"ready":             fmt.Sprintf("{phase: Running, podIP: %s, conditions: [{type: Ready, status: \"True\"}]}", ip),
				"not-ready":         fmt.Sprintf("{phase: Running, podIP: %s, conditions: [{type: Ready, status: \"False\"}]}", ip),
				"completed":         fmt.Sprintf("{phase: Succeeded, podIP: %s, conditions: [{type: Ready, status: \"False\"}]}", ip),
				"terminating":       fmt.Sprintf("{phase: Running, podIP: %s, conditions: [{type: Ready, status: \"False\"}]}", ip),
				"terminating-ready": fmt.Sprintf("{phase: Running, podIP: %s, conditions: [{type: Ready, status: \"True\"}]}", ip),
			}[status])
	}
	pods := pod("ready", "10.0.0.1", "app: web, version: v1", "ready") +
		pod("not-ready", "10.0.0.2", "app: web, version: v1", "not-ready") +
		pod("completed", "10.0.0.3", "app: web", "completed") +
		pod("terminating", "10.0.0.4", "app: web", "terminating") +
		pod("draining", "10.0.0.5", "app: web", "terminating-ready") +
		pod("labelled", "10.0.0.6", "app: web, istio.io/draining: \"yes\"", "ready") +
		pod("client", "10.0.0.9", "app: client", "ready")
	svc := func(spec, labels string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: a" + labels + "}\n" +
			"spec: {clusterIP: 10.96.0.1, selector: {app: web}, ports: [{name: tcp, port: 80}]" + spec + "}\n"
	}
	dr := func(policy string) string {
		return "---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: web, namespace: a}\n" +
			"spec: {host: web.a.svc.cluster.local, " + policy + "}\n"
	}
	const def, v1 = "outbound|80||web.a.svc.cluster.local", "outbound|80|v1|web.a.svc.cluster.local"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"not ready is unhealthy; completed and terminating have none; istio.io/draining is left out",
			svc("", "") + pods,
			[]string{def + " 10.0.0.1 HEALTHY", def + " 10.0.0.2 UNHEALTHY"}},
		{"publishNotReadyAddresses: every Pod not completed is ready",
			svc(", publishNotReadyAddresses: true", "") + pods,
			[]string{def + " 10.0.0.1 HEALTHY", def + " 10.0.0.2 HEALTHY", def + " 10.0.0.4 HEALTHY", def + " 10.0.0.5 HEALTHY"}},
		{"persistent sessions keep a ready Pod being deleted, and a labelled one, as draining",
			svc("", ", labels: {istio.io/persistent-session: cookie}") + pods,
			[]string{def + " 10.0.0.1 HEALTHY", def + " 10.0.0.2 UNHEALTHY", def + " 10.0.0.5 DRAINING", def + " 10.0.0.6 DRAINING"}},
		{"minHealthPercent leaves unhealthy endpoints out, of the subsets too",
			svc("", "") + pods + dr("trafficPolicy: {outlierDetection: {minHealthPercent: 50}}, subsets: [{name: v1, labels: {version: v1}}]"),
			[]string{def + " 10.0.0.1 HEALTHY", v1 + " 10.0.0.1 HEALTHY"}},
		{"a subset's own policy replaces the rule's outlier detection",
			svc("", "") + pods + dr("trafficPolicy: {outlierDetection: {minHealthPercent: 50}}, subsets: [{name: v1, labels: {version: v1}, trafficPolicy: {outlierDetection: {consecutive5xxErrors: 3}}}]"),
			[]string{def + " 10.0.0.1 HEALTHY", v1 + " 10.0.0.1 HEALTHY", v1 + " 10.0.0.2 UNHEALTHY"}},
		{"port-level settings replace the rule's policy for their port",
			svc("", "") + pods + dr("trafficPolicy: {outlierDetection: {minHealthPercent: 50}, portLevelSettings: [{port: {number: 80}, connectionPool: {tcp: {maxConnections: 5}}}]}"),
			[]string{def + " 10.0.0.1 HEALTHY", def + " 10.0.0.2 UNHEALTHY"}},
		{"a traffic distribution sends unhealthy endpoints whatever the rule says",
			svc(", trafficDistribution: PreferClose", "") + pods + dr("trafficPolicy: {outlierDetection: {minHealthPercent: 50}}"),
			[]string{def + " 10.0.0.1 HEALTHY", def + " 10.0.0.2 UNHEALTHY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := mesh.New()
			if err := inv.AddYAML("mesh", []byte(tc.yaml)); err != nil {
				t.Fatal(err)
			}
			p, err := New(inv, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := p.Predict(Proxy{Namespace: "a", Labels: map[string]string{"app": "client"}})
			var got []string
			for _, e := range p.Endpoints(res) {
				if e.Cluster == def || e.Cluster == v1 {
					got = append(got, e.Cluster+" "+e.Address+" "+e.Health)
				}
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("endpoints:\n got %q\nwant %q", got, want)
			}
			if n := p.EndpointCount(res); n != len(p.Endpoints(res)) {
				t.Errorf("EndpointCount = %d, Endpoints lists %d", n, len(p.Endpoints(res)))
			}
		})
	}
}
