package predict

import (
	"slices"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

const (
	igw    = "istio-ingressgateway.istio-system.svc.cluster.local"
	istiod = "istiod.istio-system.svc.cluster.local"
	fooSvc = "foo.foo.svc.cluster.local"
	barSvc = "bar.bar.svc.cluster.local"
)

var (
	fixed     = []string{"BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster"}
	igwAll    = []string{"outbound|15012||" + igw, "outbound|15021||" + igw, "outbound|15443||" + igw, "outbound|443||" + igw, "outbound|80||" + igw}
	istiodAll = []string{"outbound|15010||" + istiod, "outbound|15012||" + istiod, "outbound|15014||" + istiod, "outbound|443||" + istiod}
	seedAll   = join(igwAll, istiodAll, []string{
		"outbound|80||" + barSvc, "outbound|80||default-http-backend.kube-system.svc.cluster.local", "outbound|80||" + fooSvc,
		"outbound|53||kube-dns.kube-system.svc.cluster.local", "outbound|443||kubernetes.default.svc.cluster.local",
		"outbound|443||metrics-server.kube-system.svc.cluster.local", "inbound|80||",
	}, fixed)
)

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	slices.Sort(out)
	return out
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// seedYAML is the seed mesh (internal/fixture).
func seedYAML(t testing.TB) string {
	t.Helper()
	return fixture.Seed
}

var appTestApp = map[string]string{"app": "test-app"}

func TestPredictGolden(t *testing.T) {
	seed := seedYAML(t)
	cases := []struct {
		name    string
		config  string // added to the seed
		version string
		ns      string
		labels  map[string]string
		want    []string
	}{
		{name: "R15.3 seed without Sidecar (19)", ns: "foo", labels: appTestApp, want: seedAll},
		{
			name: "R15.1 R42 seed Sidecar (13)", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: test-app, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  ingress: [{port: {number: 80, protocol: HTTP, name: http}, defaultEndpoint: "127.0.0.1:80"}]
  egress: [{hosts: ["istio-system/*"]}]`,
			want: join(igwAll, istiodAll, []string{"inbound|80||"}, fixed),
		},
		{
			name: "R15 Sidecar in foo never applies to bar", ns: "bar", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: test-app, namespace: foo}
spec:
  egress: [{hosts: ["istio-system/*"]}]`,
			want: seedAll,
		},
		{
			name: "R20 port listener trims services to the port", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1alpha3
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{port: {number: 80, protocol: HTTP, name: http}, hosts: ["istio-system/*", "./*"]}]`,
			want: join([]string{"outbound|80||" + igw, "outbound|80||" + fooSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R20 port 53 keeps kube-dns's first port, UDP, so no cluster", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1beta1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{port: {number: 53, protocol: TCP, name: tcp}, hosts: ["kube-system/*"]}]`,
			want: join([]string{"inbound|80||"}, fixed),
		},
		{
			name: "R22 ~/* imports nothing", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{hosts: ["~/*"]}]`,
			want: join([]string{"inbound|80||"}, fixed),
		},
		{
			name: "R17 exclusions on 1.31", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{hosts: ["*/*", "~kube-system/*", "~/kubernetes.default.svc.cluster.local"]}]`,
			want: without(seedAll, "outbound|80||default-http-backend.kube-system.svc.cluster.local",
				"outbound|53||kube-dns.kube-system.svc.cluster.local", "outbound|443||metrics-server.kube-system.svc.cluster.local",
				"outbound|443||kubernetes.default.svc.cluster.local"),
		},
		{
			name: "R17 exclusions are literal namespaces before 1.31", version: "1.30", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{hosts: ["*/*", "~kube-system/*"]}]`,
			want: seedAll,
		},
		{
			name: "R17 short names are literal, R18b exact path", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{hosts: ["foo/foo", "istio-system/istiod.istio-system.svc.cluster.local"]}]`,
			want: join(istiodAll, []string{"inbound|80||"}, fixed),
		},
		{
			name: "R10 exportTo . hides bar from foo", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: bar, namespace: bar, annotations: {networking.istio.io/exportTo: "."}}
spec: {selector: {app: test-app}, ports: [{name: http, port: 80}]}`,
			want: without(seedAll, "outbound|80||"+barSvc),
		},
		{
			name: "R10 exportTo foo hides bar from its own namespace", ns: "bar", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: bar, namespace: bar, annotations: {networking.istio.io/exportTo: "foo"}}
spec: {selector: {app: test-app}, ports: [{name: http, port: 80}]}`,
			want: without(seedAll, "outbound|80||"+barSvc),
		},
		{
			name: "R9 mesh defaultServiceExportTo .", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    defaultServiceExportTo: ["."]`,
			want: join([]string{"outbound|80||" + fooSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R34 R36 DR subsets from the service namespace", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-dr, namespace: bar}
spec:
  host: bar
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]`,
			want: join(seedAll, []string{"outbound|80|v1|" + barSvc, "outbound|80|v2|" + barSvc}),
		},
		{
			name: "R33 private DR only for its namespace", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-dr, namespace: bar}
spec:
  host: bar
  exportTo: ["."]
  subsets: [{name: v1, labels: {version: v1}}]`,
			want: seedAll,
		},
		{
			name: "R35 a non-matching selector DR shadows the service namespace DR", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-dr, namespace: bar}
spec:
  host: bar
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shadow, namespace: foo}
spec:
  host: bar.bar.svc.cluster.local
  workloadSelector: {matchLabels: {app: other}}
  subsets: [{name: x}]`,
			want: seedAll,
		},
		{
			name: "R35 a matching selector DR applies", ns: "foo", labels: map[string]string{"app": "other"},
			config: `
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shadow, namespace: foo}
spec:
  host: bar.bar.svc.cluster.local
  workloadSelector: {matchLabels: {app: other}}
  subsets: [{name: x}]`,
			want: join(without(seedAll, "inbound|80||"), []string{"outbound|80|x|" + barSvc}),
		},
		{
			name: "R3 R4 R29 R31 ServiceEntries", ns: "bar", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-api, namespace: foo}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, protocol: TLS, name: tls}, {number: 8080, protocol: HTTP, name: http}, {number: 5353, protocol: UDP, name: udp}]
  resolution: DNS
  location: MESH_EXTERNAL
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-wiki, namespace: foo}
spec:
  hosts: ["*.wikipedia.org"]
  ports: [{number: 443, protocol: TLS, name: tls}]
  resolution: NONE
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-sel, namespace: foo}
spec:
  hosts: [db.internal]
  ports: [{number: 5432, protocol: TCP, name: tcp}]
  resolution: DNS
  workloadSelector: {labels: {app: db}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: foo}
spec:
  host: api.example.com
  subsets: [{name: a, labels: {x: "y"}}, {name: b}]`,
			want: join(seedAll, []string{"outbound|443||api.example.com", "outbound|8080||api.example.com",
				"outbound|443|b|api.example.com", "outbound|8080|b|api.example.com", "outbound|443||*.wikipedia.org"}),
		},
		{
			name: "R19 ns/*.example.com imports the exact SE host, not the wildcard SE", ns: "bar", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-api, namespace: foo}
spec: {hosts: [api.example.com], ports: [{number: 443, protocol: TLS, name: tls}], resolution: DNS}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-wiki, namespace: foo}
spec: {hosts: ["*.wikipedia.org"], ports: [{number: 443, protocol: TLS, name: tls}], resolution: NONE}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bar}
spec:
  egress: [{hosts: ["foo/*.example.com"]}]`,
			want: join([]string{"outbound|443||api.example.com", "inbound|80||"}, fixed),
		},
		{
			name: "R25 Kubernetes service wins over a same-host SE", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: squat, namespace: foo}
spec: {hosts: [foo.foo.svc.cluster.local], ports: [{number: 80, name: http, protocol: HTTP}, {number: 9090, name: http2, protocol: HTTP}], resolution: STATIC}`,
			want: seedAll,
		},
		{
			name: "R27 R30 headless and ExternalName", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: db, namespace: foo}
spec: {clusterIP: None, ports: [{port: 5432, name: tcp}]}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec: {type: ExternalName, externalName: api.example.com, ports: [{port: 443, name: https}]}`,
			want: join(seedAll, []string{"outbound|5432||db.foo.svc.cluster.local"}),
		},
		{
			name: "R27 ExternalName is a STRICT_DNS cluster on 1.19", version: "1.19", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec: {type: ExternalName, externalName: api.example.com, ports: [{port: 443, name: https}]}`,
			want: join(without(seedAll, "InboundPassthroughCluster"), []string{"InboundPassthroughClusterIpv4", "outbound|443||ext.foo.svc.cluster.local"}),
		},
		{
			// 1.20 had the alias behind ENABLE_EXTERNAL_NAME_ALIAS, off by default (1.20 upgrade notes); 1.21 turned it on.
			name: "R27 ExternalName is still a STRICT_DNS cluster on 1.20", version: "1.20", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec: {type: ExternalName, externalName: api.example.com, ports: [{port: 443, name: https}]}`,
			want: join(without(seedAll, "InboundPassthroughCluster"), []string{"InboundPassthroughClusterIpv4", "outbound|443||ext.foo.svc.cluster.local"}),
		},
		{
			name: "R27 ExternalName is an alias with no cluster from 1.21", version: "1.21", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec: {type: ExternalName, externalName: api.example.com, ports: [{port: 443, name: https}]}`,
			want: join(without(seedAll, "InboundPassthroughCluster"), []string{"InboundPassthroughClusterIpv4"}),
		},
		{
			name: "R14 R15.2 root Sidecar with ./* is the proxy's namespace", ns: "bar", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: istio-system}
spec:
  egress: [{hosts: ["./*", "istio-system/*"]}]`,
			want: join(igwAll, istiodAll, []string{"outbound|80||" + barSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R15 selector Sidecar beats namespace default", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: ns-default, namespace: foo, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  egress: [{hosts: ["*/*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: test-app, namespace: foo, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  workloadSelector: {labels: {app: test-app}}
  egress: [{hosts: ["./*"]}]`,
			want: join([]string{"outbound|80||" + fooSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R23 R24 VirtualService destinations are imported", ns: "foo", labels: appTestApp,
			config: `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress: [{hosts: ["./*"]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: split, namespace: foo}
spec:
  hosts: [foo.foo.svc.cluster.local]
  http:
  - route:
    - {destination: {host: foo}, weight: 90}
    - {destination: {host: bar.bar.svc.cluster.local}, weight: 10}`,
			want: join([]string{"outbound|80||" + fooSvc, "outbound|80||" + barSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R6 discoverySelectors", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    discoverySelectors:
    - matchLabels: {istio-discovery: enabled}
---
apiVersion: v1
kind: Namespace
metadata: {name: foo, labels: {istio-discovery: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: bar, labels: {istio-discovery: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: istio-system, labels: {istio-discovery: enabled}}`,
			want: join(igwAll, istiodAll, []string{"outbound|80||" + fooSvc, "outbound|80||" + barSvc, "inbound|80||"}, fixed),
		},
		{
			name: "R38 ALLOW_ANY_DYNAMIC_DNS adds its cluster", ns: "foo", labels: appTestApp,
			config: `
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    outboundTrafficPolicy: {mode: ALLOW_ANY_DYNAMIC_DNS}`,
			want: join(seedAll, []string{"AllowAnyDynamicDNSCluster"}),
		},
		{
			name: "R41 a pod no Service selects has no inbound cluster", ns: "foo", labels: map[string]string{"app": "lonely"},
			want: without(seedAll, "inbound|80||"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := mesh.New()
			if err := inv.AddYAML("seed", []byte(seed)); err != nil {
				t.Fatal(err)
			}
			if tc.config != "" {
				if err := inv.AddYAML("case", []byte(tc.config)); err != nil {
					t.Fatal(err)
				}
			}
			p, err := New(inv, Options{IstioVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			proxy := Proxy{Namespace: tc.ns, Labels: tc.labels}
			got := p.Predict(proxy).Names()
			if !slices.Equal(got, tc.want) {
				t.Errorf("clusters differ\n only got:  %v\n only want: %v", setMinus(got, tc.want), setMinus(tc.want, got))
			}
			// A Predictor derived by swapping the Sidecars predicts what New does.
			bare := p.WithoutSidecars(func(*mesh.Sidecar) bool { return true })
			fresh, err := New(inv.WithoutSidecars(func(*mesh.Sidecar) bool { return true }), Options{IstioVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			derived := bare.WithSidecars(inv.Sidecars...)
			for _, w := range append(p.WorkloadProxies(), WorkloadProxy{Namespace: tc.ns, Labels: tc.labels}) {
				if d, n := derived.Predict(w.Proxy()).Names(), p.Predict(w.Proxy()).Names(); !slices.Equal(d, n) {
					t.Errorf("%s/%s: WithSidecars predicts %v, New %v", w.Namespace, w.Name, d, n)
				}
				if d, n := bare.Predict(w.Proxy()).Names(), fresh.Predict(w.Proxy()).Names(); !slices.Equal(d, n) {
					t.Errorf("%s/%s: WithoutSidecars predicts %v, New %v", w.Namespace, w.Name, d, n)
				}
			}
		})
	}
}

func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestSeedCountsAndIstioctlRows(t *testing.T) {
	inv := mesh.New()
	if err := inv.AddYAML("seed", []byte(seedYAML(t))); err != nil {
		t.Fatal(err)
	}
	p, err := New(inv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Predict(Proxy{Namespace: "foo", Labels: appTestApp})
	if len(r.Clusters) != 19 || r.Count(Outbound) != 15 || r.Count(Inbound) != 1 {
		t.Fatalf("seed foo: %d clusters (%d outbound, %d inbound), want 19 (15, 1)", len(r.Clusters), r.Count(Outbound), r.Count(Inbound))
	}
	rows := r.IstioctlRows()
	if len(rows) != 23 {
		t.Fatalf("istioctl rows = %d, want 23 (19 CDS + 4 bootstrap)", len(rows))
	}
	if rows[0].Name != "inbound|80||" || rows[1].Name != "BlackHoleCluster" {
		t.Errorf("istioctl order starts %q, %q; want inbound|80|| then BlackHoleCluster", rows[0].Name, rows[1].Name)
	}
	// A tracer in the mesh config adds the seed era's zipkin row: 24 rows.
	inv2 := inv.Clone()
	inv2.Mesh.Tracer = "zipkin"
	p2, _ := New(inv2, Options{IstioVersion: "1.22"})
	r2 := p2.Predict(Proxy{Namespace: "foo", Labels: appTestApp})
	if n := len(r2.IstioctlRows()); n != 24 || !slices.Contains(r2.Names(), "InboundPassthroughClusterIpv4") {
		t.Errorf("seed-era rows = %d (names %v), want 24 with InboundPassthroughClusterIpv4", n, r2.Names())
	}
}
