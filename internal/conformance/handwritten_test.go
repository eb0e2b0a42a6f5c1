package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// Hand-written cases: at least one per rule family of the rule catalogue
// (internal/predict/RULES.md). Most start from the seed
// inventory (testdata/seed/before.yaml) and add objects. `want` is what Istio
// itself generates (checked by TestHandWrittenIstio, so the harness and the
// catalogue are both pinned down); TestHandWritten compares the CLI with Istio.

const (
	igw     = "istio-ingressgateway.istio-system.svc.cluster.local"
	istiod  = "istiod.istio-system.svc.cluster.local"
	fooHost = "foo.foo.svc.cluster.local"
	barHost = "bar.bar.svc.cluster.local"
	kubeDNS = "kube-dns.kube-system.svc.cluster.local"
	metrics = "metrics-server.kube-system.svc.cluster.local"
	backend = "default-http-backend.kube-system.svc.cluster.local"
	kubeAPI = "kubernetes.default.svc.cluster.local"
)

func ob(port int, host string) string { return fmt.Sprintf("outbound|%d||%s", port, host) }
func obs(port int, subset, host string) string {
	return fmt.Sprintf("outbound|%d|%s|%s", port, subset, host)
}
func in(port int) string { return fmt.Sprintf("inbound|%d||", port) }

var fixed = []string{"BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster"}

var igw5 = []string{ob(15021, igw), ob(80, igw), ob(443, igw), ob(15012, igw), ob(15443, igw)}
var istiod4 = []string{ob(15010, istiod), ob(15012, istiod), ob(443, istiod), ob(15014, istiod)}
var kubeSystem3 = []string{ob(53, kubeDNS), ob(443, metrics), ob(80, backend)}
var seedOut15 = names(igw5, istiod4, kubeSystem3, []string{ob(80, fooHost), ob(80, barHost), ob(443, kubeAPI)})

// names concatenates and sorts groups of names.
func names(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	sort.Strings(out)
	return out
}

func without(list []string, drop ...string) []string {
	d := map[string]bool{}
	for _, x := range drop {
		d[x] = true
	}
	var out []string
	for _, x := range list {
		if !d[x] {
			out = append(out, x)
		}
	}
	return out
}

func L(name ...string) []string { return name }

var (
	pFoo      = Proxy{Namespace: "foo", Labels: map[string]string{"app": "test-app"}}
	pBar      = Proxy{Namespace: "bar", Labels: map[string]string{"app": "test-app"}}
	pFooOther = Proxy{Namespace: "foo", Labels: map[string]string{"app": "other"}}
	pRoot     = Proxy{Namespace: "istio-system", Labels: map[string]string{"app": "tools"}}
	pSel      = Proxy{Namespace: "foo", Labels: map[string]string{"app": "sel"}}
	pDNS      = Proxy{Namespace: "foo", Labels: map[string]string{"app": "dns"}}
	pMulti    = Proxy{Namespace: "foo", Labels: map[string]string{"app": "multi", "version": "v1"}}
)

// deployment renders a Deployment with one container port per entry of ports ("name:num[/UDP]").
func deployment(ns, name string, labels map[string]string, ports ...string) string {
	var lb strings.Builder
	for _, k := range sortedKeys(labels) {
		fmt.Fprintf(&lb, "        %s: %s\n", k, labels[k])
	}
	var pb strings.Builder
	for _, p := range ports {
		proto := "TCP"
		if strings.HasSuffix(p, "/UDP") {
			proto = "UDP"
			p = strings.TrimSuffix(p, "/UDP")
		}
		nm, num, _ := strings.Cut(p, ":")
		fmt.Fprintf(&pb, "        - name: %s\n          containerPort: %s\n          protocol: %s\n", nm, num, proto)
	}
	portsBlock := ""
	if len(ports) > 0 {
		portsBlock = "        ports:\n" + pb.String()
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: %s
spec:
  selector:
    matchLabels:
      app: %s
  template:
    metadata:
      labels:
%s    spec:
      containers:
      - name: app
        image: example
%s`, name, ns, labels["app"], lb.String(), portsBlock)
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func meshCM(mesh string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(mesh), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: istio\n  namespace: istio-system\ndata:\n  mesh: |\n" + b.String()
}

var otherFoo = deployment("foo", "other", map[string]string{"app": "other"}, "http:8080")
var toolsRoot = deployment("istio-system", "tools", map[string]string{"app": "tools"}, "http:8080")

type hwCase struct {
	name    string
	rules   string
	extra   []string            // YAML streams added after the seed (each a separate -f file)
	noSeed  bool                // do not start from the seed inventory
	seed    func(string) string // edits applied to the seed inventory text
	proxies []Proxy
	want    map[*Proxy][]string
}

func handWrittenCases() []hwCase {
	return []hwCase{
		// ---------------- exportTo / visibility ----------------
		{
			name: "ex7a-service-exportTo-dot", rules: "R9 R10 R12",
			seed:    annotateBar("."),
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(without(seedOut15, ob(80, barHost)), fixed, L(in(80))),
				&pBar: names(seedOut15, fixed, L(in(80))),
			},
		},
		{
			name: "ex7b-service-exportTo-other-namespace", rules: "R10",
			seed:    annotateBar("foo"),
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, fixed, L(in(80))),
				&pBar: names(without(seedOut15, ob(80, barHost)), fixed, L(in(80))),
			},
		},
		{
			name: "ex7c-mesh-defaultServiceExportTo-dot", rules: "R9",
			extra:   []string{meshCM(`defaultServiceExportTo: ["."]`)},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(L(ob(80, fooHost), in(80)), fixed),
				&pBar: names(L(ob(80, barHost), in(80)), fixed),
			},
		},
		{
			name: "exportTo-tilde-and-list-with-spaces", rules: "R9 R10",
			extra: []string{`apiVersion: v1
kind: Service
metadata:
  name: hidden
  namespace: foo
  annotations:
    networking.istio.io/exportTo: "~"
spec:
  selector: {app: nothing}
  ports:
  - {name: http, port: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: listed
  namespace: foo
  annotations:
    networking.istio.io/exportTo: "bar , istio-system"
spec:
  selector: {app: nothing}
  ports:
  - {name: http, port: 8081}
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, fixed, L(in(80))),
				&pBar: names(seedOut15, fixed, L(in(80), ob(8081, "listed.foo.svc.cluster.local"))),
			},
		},
		{
			name: "mesh-default-exportTo-for-dr-and-vs-and-se-exportTo", rules: "R9 R23 R33",
			extra: []string{meshCM(`defaultDestinationRuleExportTo: ["."]
defaultVirtualServiceExportTo: ["."]`), `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar, namespace: bar}
spec:
  host: bar
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*", "bar/*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: root-vs, namespace: istio-system}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: kubernetes.default.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: own-vs, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: metrics-server.kube-system.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: hidden, namespace: bar}
spec:
  hosts: ["hidden.example.com"]
  exportTo: ["~"]
  ports:
  - {number: 80, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: only-foo, namespace: bar}
spec:
  hosts: ["only-foo.example.com"]
  exportTo: ["foo"]
  ports:
  - {number: 80, protocol: HTTP, name: http}
  resolution: DNS
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(L(ob(80, fooHost), ob(80, barHost), ob(443, metrics), ob(80, "only-foo.example.com"), in(80)), fixed),
				&pBar: names(seedOut15, L(obs(80, "v1", barHost), in(80)), fixed),
			},
		},
		// ---------------- Sidecar selection precedence ----------------
		{
			name: "ex2-seed-sidecar-bar-unaffected", rules: "R15",
			extra:   []string{seedSidecar},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: seed13,
				&pBar: seed19,
			},
		},
		{
			name: "ex12-root-sidecar-and-overrides", rules: "R13 R14 R15",
			extra: []string{otherFoo, seedSidecar, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: istio-system
spec:
  egress:
  - hosts: ["./*", "istio-system/*"]
`},
			proxies: []Proxy{pFoo, pBar, pFooOther},
			want: map[*Proxy][]string{
				&pFoo:      seed13,
				&pBar:      names(igw5, istiod4, L(ob(80, barHost), in(80)), fixed),
				&pFooOther: names(igw5, istiod4, L(ob(80, fooHost)), fixed), // not selected by foo/foo: no inbound
			},
		},
		{
			name: "ex12-namespace-default-beats-root", rules: "R15",
			extra: []string{otherFoo, seedSidecar, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: istio-system
spec:
  egress:
  - hosts: ["./*", "istio-system/*"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: ns-default
  namespace: foo
spec:
  egress:
  - hosts: ["*/*"]
`},
			proxies: []Proxy{pFoo, pFooOther},
			want: map[*Proxy][]string{
				&pFoo:      seed13,
				&pFooOther: names(seedOut15, fixed),
			},
		},
		{
			name: "selector-sidecar-beats-older-namespace-wide-and-oldest-selector-wins", rules: "R13 R15",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: a-namespace-wide
  namespace: foo
  creationTimestamp: "2020-01-01T00:00:00Z"
spec:
  egress:
  - hosts: ["kube-system/*"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: z-selector-old
  namespace: foo
  creationTimestamp: "2021-01-01T00:00:00Z"
spec:
  workloadSelector:
    labels: {app: test-app}
  egress:
  - hosts: ["default/*"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: b-selector-new
  namespace: foo
  creationTimestamp: "2022-01-01T00:00:00Z"
spec:
  workloadSelector:
    labels: {app: test-app}
  egress:
  - hosts: ["istio-system/*"]
`, otherFoo},
			proxies: []Proxy{pFoo, pFooOther},
			want: map[*Proxy][]string{
				&pFoo:      names(L(ob(443, kubeAPI), in(80)), fixed),
				&pFooOther: names(kubeSystem3, fixed),
			},
		},
		{
			name: "sidecar-creation-tie-broken-by-name", rules: "R13",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: b
  namespace: foo
  creationTimestamp: "2021-01-01T00:00:00Z"
spec:
  egress:
  - hosts: ["kube-system/*"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: a
  namespace: foo
  creationTimestamp: "2021-01-01T00:00:00Z"
spec:
  egress:
  - hosts: ["default/*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(443, kubeAPI), in(80)), fixed)},
		},
		{
			name: "root-namespace-selector-sidecar-only-for-root-workloads", rules: "R14 R15",
			extra: []string{toolsRoot, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: tools-only
  namespace: istio-system
spec:
  workloadSelector:
    labels: {app: tools}
  egress:
  - hosts: ["./*"]
`},
			proxies: []Proxy{pFoo, pRoot},
			want: map[*Proxy][]string{
				&pFoo:  seed19,
				&pRoot: names(igw5, istiod4, fixed),
			},
		},
		{
			name: "custom-rootNamespace", rules: "R14",
			extra: []string{meshCM(`rootNamespace: istio-config`), `apiVersion: v1
kind: Namespace
metadata:
  name: istio-config
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: istio-config
spec:
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: istio-system
spec:
  egress:
  - hosts: ["kube-system/*"]
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(L(ob(80, fooHost), in(80)), fixed),
				&pBar: names(L(ob(80, barHost), in(80)), fixed),
			},
		},
		// ---------------- egress host syntax ----------------
		{
			name: "ex5a-exclude-everything", rules: "R17 R22",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["~/*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(in(80)), fixed)},
		},
		{
			name: "ex5b-exclusions", rules: "R17 R19",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["*/*", "~kube-system/*", "~/kubernetes.default.svc.cluster.local"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(without(seedOut15, append(kubeSystem3, ob(443, kubeAPI))...), L(in(80)), fixed)},
		},
		{
			name: "ex6-literal-names", rules: "R17 R18b",
			// The reference uses "foo/foo"; Istio's validation rejects dot-less names
			// ("short names (non FQDN) are not allowed"), so a dotted partial name is used.
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["foo/foo.foo", "istio-system/istiod.istio-system.svc.cluster.local"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(istiod4, L(in(80)), fixed)},
		},
		{
			name: "host-forms-star-ns-dot-and-wildcards", rules: "R17 R19",
			extra: []string{seAPI, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bar}
spec:
  egress:
  - hosts: ["*/metrics-server.kube-system.svc.cluster.local", "./bar.bar.svc.cluster.local", "foo/*.example.com", "default/*.svc.cluster.local"]
`},
			proxies: []Proxy{pBar},
			want: map[*Proxy][]string{&pBar: names(L(ob(443, metrics), ob(80, barHost), ob(443, kubeAPI), in(80),
				ob(443, "api.example.com"), ob(8080, "api.example.com")), fixed)},
		},
		{
			name: "exclusion-of-one-host-in-namespace", rules: "R17 R19",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["istio-system/*", "~istio-system/istiod.istio-system.svc.cluster.local"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(igw5, L(in(80)), fixed)},
		},
		// ---------------- egress port listeners ----------------
		{
			name: "ex4-port-scoped-listener", rules: "R20",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 80, protocol: HTTP, name: http}
    hosts: ["istio-system/*", "./*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(80, igw), ob(80, fooHost), in(80)), fixed)},
		},
		{
			name: "ex4-kube-dns-port-53-udp-first", rules: "R20",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 53, protocol: TCP, name: dns}
    hosts: ["kube-system/*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(in(80)), fixed)},
		},
		{
			name: "ex4-kube-dns-port-53-tcp-first", rules: "R20",
			seed: kubeDNSTCPFirst,
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 53, protocol: TCP, name: dns}
    hosts: ["kube-system/*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(53, kubeDNS), in(80)), fixed)},
		},
		{
			name: "http-proxy-listener-ignores-port", rules: "R20",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 3128, protocol: HTTP_PROXY, name: proxy}
    bind: 127.0.0.1
    hosts: ["istio-system/*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: seed13},
		},
		// ---------------- multiple listeners ----------------
		{
			name: "multi-listener-merge-ports", rules: "R25 R26",
			extra: []string{multiPortSvc, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 9080, protocol: HTTP, name: a}
    hosts: ["./*"]
  - port: {number: 8080, protocol: HTTP, name: b}
    hosts: ["./*"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(9080, "multi.foo.svc.cluster.local"), ob(8080, "multi.foo.svc.cluster.local"), in(80)), fixed)},
		},
		{
			name: "multi-listener-with-catch-all", rules: "R26",
			extra: []string{multiPortSvc, `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - port: {number: 9080, protocol: HTTP, name: a}
    hosts: ["./*"]
  - hosts: ["foo/multi.foo.svc.cluster.local"]
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(L(ob(9080, "multi.foo.svc.cluster.local"), ob(8080, "multi.foo.svc.cluster.local"),
				ob(7070, "multi.foo.svc.cluster.local"), in(80)), fixed)},
		},
		// ---------------- VS-inferred imports ----------------
		{
			name: "ex13-vs-destination-imported", rules: "R23 R24",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: split, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: foo}
      weight: 90
    - destination: {host: bar.bar.svc.cluster.local}
      weight: 10
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(80, fooHost), ob(80, barHost), in(80)), fixed)},
		},
		{
			name: "ex13-dotted-destination-not-expanded", rules: "R24",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: split, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: bar.bar}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(80, fooHost), in(80)), fixed)},
		},
		{
			// A delegate's routes are merged into its root: their destinations are imported,
			// resolved in the delegate's namespace; a delegate not exported to the root's
			// namespace is dropped with its destinations.
			name: "vs-delegate-destinations-imported", rules: "R24",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: root, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - match: [{uri: {prefix: /api}}]
    delegate: {name: api, namespace: bar}
  - match: [{uri: {prefix: /hidden}}]
    delegate: {name: hidden, namespace: bar}
  - route:
    - destination: {host: foo}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: api, namespace: bar}
spec:
  http:
  - route:
    - destination: {host: bar}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: hidden, namespace: bar}
spec:
  exportTo: ["."]
  http:
  - route:
    - destination: {host: istiod.istio-system.svc.cluster.local}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(80, fooHost), ob(80, barHost), in(80)), fixed)},
		},
		{
			name: "ex2-caveat-root-vs-sourceNamespace-and-port", rules: "R23 R24",
			extra: []string{seedSidecar, multiPortSvc, `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: everything, namespace: istio-system}
spec:
  hosts: ["*.svc.cluster.local"]
  http:
  - match:
    - sourceNamespace: bar
    route:
    - destination: {host: metrics-server.kube-system.svc.cluster.local}
  - route:
    - destination: {host: bar.bar.svc.cluster.local}
    mirror:
      host: multi.foo.svc.cluster.local
      port: {number: 7070}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(seed13, L(ob(80, barHost), ob(7070, "multi.foo.svc.cluster.local")))},
		},
		{
			name: "vs-gateway-and-exportTo-filter", rules: "R23",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["istio-system/*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: gw-only, namespace: istio-system}
spec:
  hosts: ["a.example.com"]
  gateways: ["istio-system/public"]
  http:
  - route:
    - destination: {host: bar.bar.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: private, namespace: istio-system}
spec:
  hosts: ["b.example.com"]
  exportTo: ["."]
  http:
  - route:
    - destination: {host: kubernetes.default.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: both, namespace: istio-system}
spec:
  hosts: ["c.example.com"]
  gateways: ["mesh", "istio-system/public"]
  exportTo: ["foo"]
  tcp:
  - route:
    - destination: {host: default-http-backend.kube-system.svc.cluster.local, port: {number: 80}}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(igw5, istiod4, L(ob(80, backend), in(80)), fixed)},
		},
		{
			name: "vs-destination-same-namespace-ignores-visibility-and-exclusion", rules: "R24",
			extra: []string{`apiVersion: v1
kind: Service
metadata:
  name: hidden
  namespace: foo
  annotations:
    networking.istio.io/exportTo: "~"
spec:
  selector: {app: nothing}
  ports:
  - {name: http, port: 8080}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*", "~bar/*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: hidden}
      weight: 50
    - destination: {host: bar.bar.svc.cluster.local}
      weight: 50
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(L(ob(80, fooHost), ob(8080, "hidden.foo.svc.cluster.local"),
				ob(80, barHost), in(80)), fixed)},
		},
		{
			name: "vs-destination-picks-oldest-visible-se-namespace", rules: "R24",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: x, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["dup.example.com"]
  ports:
  - {number: 1111, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: x, namespace: default, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["dup.example.com"]
  ports:
  - {number: 2222, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: z, namespace: default, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hosts: ["private.example.com"]
  exportTo: ["."]
  ports:
  - {number: 3333, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: z, namespace: bar, creationTimestamp: "2023-01-01T00:00:00Z"}
spec:
  hosts: ["private.example.com"]
  ports:
  - {number: 4444, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - route:
    - destination: {host: dup.example.com}
      weight: 50
    - destination: {host: private.example.com}
      weight: 50
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(L(ob(80, fooHost), ob(2222, "dup.example.com"), ob(4444, "private.example.com"), in(80)), fixed)},
		},
		{
			name: "exact-host-fast-path-respects-visibility", rules: "R18b",
			seed: annotateBar("."),
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["bar/bar.bar.svc.cluster.local", "istio-system/istiod.istio-system.svc.cluster.local"]
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(istiod4, L(in(80)), fixed)},
		},
		// ---------------- UDP / ExternalName / headless / DNS SE ----------------
		{
			name: "udp-ports-skipped-outbound-kept-inbound", rules: "R29 R40 R41",
			extra: []string{deployment("foo", "dns", map[string]string{"app": "dns"}, "dns:5353/UDP", "dnstcp:5353"), `apiVersion: v1
kind: Service
metadata: {name: dns, namespace: foo}
spec:
  selector: {app: dns}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: dns}
  - {name: dns-tcp, port: 53, targetPort: dnstcp}
  - {name: udp-only, port: 5000, protocol: UDP, targetPort: 6000}
`},
			proxies: []Proxy{pDNS},
			want: map[*Proxy][]string{&pDNS: names(seedOut15,
				L(ob(53, "dns.foo.svc.cluster.local"), in(5353), in(6000)), fixed)},
		},
		{
			name: "ex11-headless-and-externalname", rules: "R1 R27 R30",
			extra: []string{`apiVersion: v1
kind: Service
metadata: {name: db, namespace: foo}
spec:
  clusterIP: None
  selector: {app: db}
  ports:
  - {name: tcp-db, port: 5432}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec:
  type: ExternalName
  externalName: api.example.com
  ports:
  - {name: https, port: 443}
---
apiVersion: v1
kind: Service
metadata: {name: headless-noports, namespace: foo}
spec:
  clusterIP: None
  selector: {app: db}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(seedOut15, L(ob(5432, "db.foo.svc.cluster.local"), in(80)), fixed)},
		},
		{
			name: "ex9-service-entries", rules: "R3 R4 R28 R31 R36",
			extra: []string{seAPI, `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-wiki, namespace: foo}
spec:
  hosts: ["*.wikipedia.org"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: NONE
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-sel, namespace: foo}
spec:
  hosts: ["db.internal"]
  ports:
  - {number: 5432, protocol: TCP, name: tcp}
  resolution: DNS
  workloadSelector:
    labels: {app: db}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-dyn, namespace: foo}
spec:
  hosts: ["*.example.net"]
  ports:
  - {number: 80, protocol: HTTP, name: http}
  - {number: 443, protocol: TLS, name: tls}
  resolution: DYNAMIC_DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: api, namespace: foo}
spec:
  host: api.example.com
  subsets:
  - name: a
    labels: {x: "y"}
  - name: b
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(seedOut15, L(in(80),
				ob(443, "api.example.com"), ob(8080, "api.example.com"),
				obs(443, "b", "api.example.com"), obs(8080, "b", "api.example.com"),
				ob(443, "*.wikipedia.org"),
				ob(80, "*.example.net"), ob(443, "*.example.net")), fixed)},
		},
		{
			name: "dns-se-selector-with-pods-and-subsets", rules: "R4 R31 R36",
			extra: []string{deployment("foo", "db", map[string]string{"app": "db", "version": "v1"}, "tcp:5432"), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-sel, namespace: foo}
spec:
  hosts: ["db.internal"]
  ports:
  - {number: 5432, protocol: TCP, name: tcp}
  resolution: DNS
  workloadSelector:
    labels: {app: db}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-static, namespace: foo}
spec:
  hosts: ["static.internal"]
  addresses: ["240.0.0.7"]
  ports:
  - {number: 7000, protocol: TCP, name: tcp}
  resolution: STATIC
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: db, namespace: foo}
spec:
  host: db.internal
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: static, namespace: foo}
spec:
  host: static.internal
  subsets:
  - {name: v2, labels: {version: v2}}
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(seedOut15, L(in(80), ob(5432, "db.internal"), obs(5432, "v1", "db.internal"),
				ob(7000, "static.internal"), obs(7000, "v2", "static.internal")), fixed)},
		},
		{
			name: "dns-se-selector-zero-replicas", rules: "R31",
			extra: []string{`apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: foo}
spec:
  replicas: 0
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-sel, namespace: foo}
spec:
  hosts: ["db.internal"]
  ports:
  - {number: 5432, protocol: TCP, name: tcp}
  resolution: DNS
  workloadSelector:
    labels: {app: db}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(seedOut15, L(in(80)), fixed)},
		},
		{
			name: "dns-subsets-and-passthrough-lb", rules: "R30 R31 R36",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-a, namespace: foo}
spec:
  hosts: ["a.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-b, namespace: foo}
spec:
  hosts: ["b.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS_ROUND_ROBIN
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-c, namespace: foo}
spec:
  hosts: ["c.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS
  workloadSelector:
    labels: {app: nothing}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-d, namespace: foo}
spec:
  hosts: ["d.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS
  endpoints:
  - {address: d1.example.com, labels: {version: v1}}
  - {address: d2.example.com}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a, namespace: foo}
spec:
  host: a.example.com
  trafficPolicy:
    loadBalancer: {simple: PASSTHROUGH}
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b, namespace: foo}
spec:
  host: b.example.com
  subsets:
  - {name: v1, labels: {version: v1}}
  - name: pt
    labels: {version: v9}
    trafficPolicy:
      loadBalancer: {simple: PASSTHROUGH}
  - {name: nolabels}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: c, namespace: foo}
spec:
  host: c.example.com
  trafficPolicy:
    loadBalancer: {simple: PASSTHROUGH}
  subsets:
  - {name: nolabels}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: dns-e, namespace: foo}
spec:
  hosts: ["e.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  - {number: 8443, protocol: TLS, name: tls-alt}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: e, namespace: foo}
spec:
  host: e.example.com
  trafficPolicy:
    portLevelSettings:
    - port: {number: 443}
      loadBalancer: {simple: PASSTHROUGH}
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d, namespace: foo}
spec:
  host: d.example.com
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(seedOut15, fixed, L(in(80),
				ob(443, "a.example.com"), obs(443, "v1", "a.example.com"),
				ob(443, "b.example.com"), obs(443, "pt", "b.example.com"), obs(443, "nolabels", "b.example.com"),
				ob(443, "d.example.com"), obs(443, "v1", "d.example.com"),
				ob(443, "e.example.com"), ob(8443, "e.example.com"), obs(443, "v1", "e.example.com")))},
		},
		// ---------------- DestinationRules ----------------
		{
			name: "ex8-dr-subsets-and-exportTo", rules: "R33 R34 R36",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-dr, namespace: bar}
spec:
  host: bar
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: foo-dr, namespace: foo}
spec:
  host: foo
  exportTo: ["."]
  subsets:
  - {name: x, labels: {version: x}}
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, L(in(80), obs(80, "v1", barHost), obs(80, "v2", barHost), obs(80, "x", fooHost)), fixed),
				&pBar: names(seedOut15, L(in(80), obs(80, "v1", barHost), obs(80, "v2", barHost)), fixed),
			},
		},
		{
			name: "ex8-selector-dr-shadowing", rules: "R34 R35",
			extra: []string{otherFoo, `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-dr, namespace: bar}
spec:
  host: bar
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shadow, namespace: foo}
spec:
  host: bar.bar.svc.cluster.local
  workloadSelector:
    matchLabels: {app: other}
  subsets:
  - {name: x, labels: {version: x}}
`},
			proxies: []Proxy{pFoo, pFooOther, pBar},
			want: map[*Proxy][]string{
				&pFoo:      names(seedOut15, L(in(80)), fixed),
				&pFooOther: names(seedOut15, L(obs(80, "x", barHost)), fixed),
				&pBar:      names(seedOut15, L(in(80), obs(80, "v1", barHost)), fixed),
			},
		},
		{
			name: "dr-lookup-order-root-and-wildcard", rules: "R33 R34",
			extra: []string{toolsRoot, `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: root-wide, namespace: istio-system}
spec:
  host: "*.svc.cluster.local"
  subsets:
  - {name: root}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: root-private, namespace: istio-system}
spec:
  host: kubernetes.default.svc.cluster.local
  exportTo: ["."]
  subsets:
  - {name: private}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: bar-own, namespace: bar}
spec:
  host: bar.bar.svc.cluster.local
  subsets:
  - {name: own}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: foo-local, namespace: foo}
spec:
  host: "*.kube-system.svc.cluster.local"
  exportTo: ["."]
  subsets:
  - {name: local}
`},
			proxies: []Proxy{pFoo, pRoot},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, L(in(80)), fixed,
					L(obs(80, "own", barHost)),
					L(obs(53, "local", kubeDNS), obs(443, "local", metrics), obs(80, "local", backend)),
					L(obs(80, "root", fooHost), obs(443, "root", kubeAPI)),
					subsetsOf("root", igw5, istiod4)),
				&pRoot: names(seedOut15, fixed,
					L(obs(80, "own", barHost)),
					L(obs(53, "root", kubeDNS), obs(443, "root", metrics), obs(80, "root", backend)),
					L(obs(80, "root", fooHost), obs(443, "private", kubeAPI)),
					subsetsOf("root", igw5, istiod4)),
			},
		},
		{
			name: "dr-merge-same-host-same-namespace", rules: "R33",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: a, namespace: bar, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  host: bar
  subsets:
  - {name: v1, labels: {version: v1}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  host: bar.bar.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: other}}
  - {name: v3, labels: {version: v3}}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(seedOut15, L(in(80), obs(80, "v1", barHost), obs(80, "v3", barHost)), fixed)},
		},
		// ---------------- EnvoyFilter cluster patches ----------------
		{
			// ADD in the outbound and inbound contexts (ANY counts as outbound only); REMOVE by
			// name, by service and port in the outbound context, and of the inbound clusters by
			// port; a patch of another workload, of the gateway context, of another release's
			// proxies and an EnvoyFilter with targetRefs do nothing to the sidecar.
			name: "envoyfilter-add-remove", rules: "R39",
			extra: []string{deployment("foo", "other", map[string]string{"app": "other"}), `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: patches, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  configPatches:
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND}
    patch: {operation: ADD, value: {name: extra-out, type: STRICT_DNS, connect_timeout: 1s, load_assignment: {cluster_name: extra-out, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: example.com, port_value: 443}}}}]}]}}}
  - applyTo: CLUSTER
    patch: {operation: ADD, value: {name: extra-any, type: STATIC, connect_timeout: 1s}}
  - applyTo: CLUSTER
    match: {context: SIDECAR_INBOUND}
    patch: {operation: ADD, value: {name: extra-in, type: STATIC, connect_timeout: 1s}}
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND, cluster: {service: kube-dns.kube-system.svc.cluster.local, portNumber: 53}}
    patch: {operation: REMOVE}
  - applyTo: CLUSTER
    match: {cluster: {name: BlackHoleCluster}}
    patch: {operation: REMOVE}
  - applyTo: CLUSTER
    match: {context: SIDECAR_INBOUND, cluster: {portNumber: 80}}
    patch: {operation: REMOVE}
  - applyTo: CLUSTER
    match: {context: GATEWAY}
    patch: {operation: ADD, value: {name: gateway-only, type: STATIC, connect_timeout: 1s}}
  - applyTo: CLUSTER
    match: {proxy: {proxyVersion: '^1\.2[0-9]\..*'}}
    patch: {operation: ADD, value: {name: old-proxies, type: STATIC, connect_timeout: 1s}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: mesh-wide, namespace: istio-system}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND, cluster: {service: metrics-server.kube-system.svc.cluster.local}}
    patch: {operation: REMOVE}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: targeted, namespace: foo}
spec:
  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: gw}]
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: ADD, value: {name: targeted, type: STATIC, connect_timeout: 1s}}
`},
			proxies: []Proxy{pFoo, pFooOther, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(without(seedOut15, ob(53, kubeDNS), ob(443, metrics)), L("extra-out", "extra-any", "extra-in",
					"PassthroughCluster", "InboundPassthroughCluster")),
				&pFooOther: names(without(seedOut15, ob(443, metrics)), fixed),
				&pBar:      names(without(seedOut15, ob(443, metrics)), L(in(80)), fixed),
			},
		},
		// ---------------- ingress listeners / inbound ----------------
		{
			name: "ingress-listeners", rules: "R16 R42",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  ingress:
  - port: {number: 9080, protocol: HTTP, name: http}
    defaultEndpoint: 127.0.0.1:8080
  - port: {number: 9090, protocol: GRPC, name: grpc}
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(seedOut15, L(in(9080), in(9090)), fixed)},
		},
		{
			name: "inbound-target-ports", rules: "R40 R41",
			extra: []string{deployment("foo", "multi", map[string]string{"app": "multi", "version": "v1"}, "web:8080", "admin:9901"), multiPortSvc, `apiVersion: v1
kind: Service
metadata: {name: multi-alias, namespace: foo}
spec:
  selector: {app: multi}
  ports:
  - {name: http, port: 80, targetPort: web}
  - {name: admin, port: 9901, targetPort: missing}
`},
			proxies: []Proxy{pMulti},
			want: map[*Proxy][]string{&pMulti: names(seedOut15,
				L(ob(7070, "multi.foo.svc.cluster.local"), ob(8080, "multi.foo.svc.cluster.local"), ob(9080, "multi.foo.svc.cluster.local"),
					ob(80, "multi-alias.foo.svc.cluster.local"), ob(9901, "multi-alias.foo.svc.cluster.local"),
					in(7070), in(8080), in(9080)), fixed)},
		},
		{
			name: "se-workloadSelector-makes-inbound-clusters", rules: "R40",
			extra: []string{deployment("foo", "sel", map[string]string{"app": "sel"}, "https:8443", "udp-x:5000/UDP"), `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: sel, namespace: foo}
spec:
  hosts: ["sel.internal"]
  ports:
  - {number: 443, protocol: TLS, name: https}
  - {number: 9000, protocol: TCP, name: tcp, targetPort: 9100}
  - {number: 7000, protocol: HTTP, name: plain}
  - {number: 5000, protocol: UDP, name: udp-x}
  resolution: STATIC
  workloadSelector:
    labels: {app: sel}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: sel-elsewhere, namespace: bar}
spec:
  hosts: ["sel-bar.internal"]
  ports:
  - {number: 6000, protocol: TCP, name: tcp}
  resolution: STATIC
  workloadSelector:
    labels: {app: sel}
`},
			proxies: []Proxy{pSel},
			want: map[*Proxy][]string{&pSel: names(seedOut15, fixed,
				L(ob(443, "sel.internal"), ob(9000, "sel.internal"), ob(7000, "sel.internal"), ob(6000, "sel-bar.internal"),
					in(8443), in(9100), in(7000), in(5000)))},
		},
		// ---------------- discoverySelectors ----------------
		{
			name: "ex14-discovery-selectors", rules: "R6",
			extra: []string{meshCM(`discoverySelectors:
- matchLabels:
    istio-discovery: enabled`)},
			seed:    labelNamespaces("foo", "bar", "istio-system"),
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(igw5, istiod4, L(ob(80, fooHost), ob(80, barHost), in(80)), fixed)},
		},
		{
			name: "discovery-selectors-hide-istio-configs", rules: "R6",
			extra: []string{meshCM(`discoverySelectors:
- matchExpressions:
  - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, bar]}`), `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bar}
spec:
  egress:
  - hosts: ["~/*"]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se, namespace: bar}
spec:
  hosts: ["hidden.example.com"]
  ports:
  - {number: 80, protocol: HTTP, name: http}
  resolution: DNS
`},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: names(igw5, istiod4, L(ob(80, fooHost), ob(443, kubeAPI), in(80)), fixed)},
		},
		// ---------------- hostname collisions ----------------
		{
			name: "ex10a-se-vs-k8s-same-namespace", rules: "R25",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: foo-se, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  ports:
  - {number: 80, protocol: HTTP, name: http}
  - {number: 9090, protocol: HTTP, name: http2}
  resolution: DNS
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, L(in(80)), fixed),
				&pBar: names(seedOut15, L(in(80)), fixed),
			},
		},
		{
			name: "ex10b-se-in-other-namespace-vs-k8s", rules: "R21",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: squat, namespace: foo}
spec:
  hosts: ["bar.bar.svc.cluster.local"]
  ports:
  - {number: 9999, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: v1
kind: Namespace
metadata: {name: baz}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: squat, namespace: baz}
spec:
  hosts: ["kubernetes.default.svc.cluster.local"]
  ports:
  - {number: 8443, protocol: HTTPS, name: https}
  resolution: DNS
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(without(seedOut15, ob(80, barHost)), L(ob(9999, barHost), in(80)), fixed),
				&pBar: names(seedOut15, L(in(80)), fixed),
			},
		},
		{
			name: "ex10c-se-merge-and-no-merge", rules: "R25",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a, namespace: foo, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["merge.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: b, namespace: foo, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["merge.example.com"]
  ports:
  - {number: 8443, protocol: TLS, name: tls}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: c, namespace: foo, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["nomerge.example.com"]
  ports:
  - {number: 443, protocol: TLS, name: tls}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: d, namespace: foo, labels: {team: x}, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["nomerge.example.com"]
  ports:
  - {number: 8443, protocol: TLS, name: tls}
  resolution: DNS
`},
			proxies: []Proxy{pFoo},
			want: map[*Proxy][]string{&pFoo: names(seedOut15, L(in(80), ob(443, "merge.example.com"), ob(8443, "merge.example.com"),
				ob(443, "nomerge.example.com")), fixed)},
		},
		{
			name: "se-same-host-two-namespaces-proxy-elsewhere", rules: "R7 R21",
			extra: []string{`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: x, namespace: bar, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["dup.example.com"]
  ports:
  - {number: 1111, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: x, namespace: default, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["dup.example.com"]
  ports:
  - {number: 2222, protocol: HTTP, name: http}
  resolution: DNS
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seedOut15, L(in(80), ob(1111, "dup.example.com")), fixed),
				&pBar: names(seedOut15, L(in(80), ob(1111, "dup.example.com")), fixed),
			},
		},
		{
			// R8: HostnameAndNamespace keeps one service per host and namespace: the oldest,
			// except that a Kubernetes Service replaces a ServiceEntry, whatever either's
			// exportTo. The exact-host path (pFoo) and VirtualService destinations (pFooOther)
			// read it; the wildcard path (pBar) sees every service and merges instead (R25).
			name: "host-and-namespace-index-oldest-or-kubernetes", rules: "R8 R18b R24 R25",
			extra: []string{otherFoo, `apiVersion: v1
kind: Service
metadata: {name: r8, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  selector: {app: nothing}
  ports:
  - {name: http, port: 80}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a-squat, namespace: bar, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hosts: ["r8.bar.svc.cluster.local"]
  ports:
  - {number: 9999, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: two-new, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["two.example.com"]
  ports:
  - {number: 2222, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: two-old, namespace: bar, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hosts: ["two.example.com"]
  ports:
  - {number: 1111, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: private-old, namespace: bar, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hosts: ["private.example.com"]
  exportTo: ["."]
  ports:
  - {number: 3333, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: private-new, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["private.example.com"]
  ports:
  - {number: 4444, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: foo}
spec:
  egress:
  - hosts: ["bar/r8.bar.svc.cluster.local", "bar/two.example.com", "bar/private.example.com"]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: other, namespace: foo}
spec:
  workloadSelector:
    labels: {app: other}
  egress:
  - hosts: ["./*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: r, namespace: foo}
spec:
  hosts: ["foo.foo.svc.cluster.local"]
  http:
  - match:
    - uri: {prefix: /a}
    route:
    - destination: {host: r8.bar.svc.cluster.local}
  - match:
    - uri: {prefix: /b}
    route:
    - destination: {host: two.example.com}
  - route:
    - destination: {host: private.example.com}
`},
			proxies: []Proxy{pFoo, pFooOther, pBar},
			want: map[*Proxy][]string{
				&pFoo:      names(L(ob(80, "r8.bar.svc.cluster.local"), ob(1111, "two.example.com"), in(80)), fixed),
				&pFooOther: names(L(ob(80, fooHost), ob(80, "r8.bar.svc.cluster.local"), ob(1111, "two.example.com")), fixed),
				&pBar: names(seedOut15, L(ob(80, "r8.bar.svc.cluster.local"), ob(1111, "two.example.com"), ob(2222, "two.example.com"),
					ob(3333, "private.example.com"), in(80)), fixed),
			},
		},
		{
			// R11: a wildcard listener's candidates are the services exported to the
			// namespace by name, in creation order, then the public ones: an exported
			// ServiceEntry beats an older public one of the same host, and of two exported
			// ones the older wins although its namespace sorts later. pFoo has the default
			// "*/*" listener, pFooOther a "ns/*" one.
			name: "wildcard-listener-candidates-exported-then-public", rules: "R11 R10 R21",
			extra: []string{otherFoo, `apiVersion: v1
kind: Namespace
metadata: {name: baz}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: pub, namespace: default, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hosts: ["r11.example.com"]
  ports:
  - {number: 1111, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: to-foo, namespace: bar, creationTimestamp: "2023-01-01T00:00:00Z"}
spec:
  hosts: ["r11.example.com"]
  exportTo: ["foo"]
  ports:
  - {number: 2222, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: to-foo-new, namespace: bar, creationTimestamp: "2022-01-01T00:00:00Z"}
spec:
  hosts: ["r11b.example.com"]
  exportTo: ["foo"]
  ports:
  - {number: 4444, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: to-foo-old, namespace: baz, creationTimestamp: "2021-01-01T00:00:00Z"}
spec:
  hosts: ["r11b.example.com"]
  exportTo: ["foo"]
  ports:
  - {number: 3333, protocol: HTTP, name: http}
  resolution: DNS
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: other, namespace: foo}
spec:
  workloadSelector:
    labels: {app: other}
  egress:
  - hosts: ["bar/*", "baz/*", "default/*"]
`},
			proxies: []Proxy{pFoo, pFooOther, pBar},
			want: map[*Proxy][]string{
				&pFoo:      names(seedOut15, L(ob(2222, "r11.example.com"), ob(3333, "r11b.example.com"), in(80)), fixed),
				&pFooOther: names(L(ob(80, barHost), ob(443, kubeAPI), ob(2222, "r11.example.com"), ob(3333, "r11b.example.com")), fixed),
				&pBar:      names(seedOut15, L(ob(1111, "r11.example.com"), in(80)), fixed),
			},
		},
		{
			// R32: a Service may have two ports of one number (TCP and SCTP, which the API
			// server allows); neither is UDP, so istiod builds the same cluster name twice.
			// A port listener keeps only the first port of that number (R20).
			name: "duplicate-cluster-names-tcp-and-sctp-port", rules: "R32 R20",
			extra: []string{otherFoo, `apiVersion: v1
kind: Service
metadata: {name: dual, namespace: foo}
spec:
  selector: {app: nothing}
  ports:
  - {name: tcp-a, port: 9000, protocol: TCP}
  - {name: tcp-b, port: 9000, protocol: SCTP}
  - {name: udp-c, port: 9000, protocol: UDP}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: other, namespace: foo}
spec:
  workloadSelector:
    labels: {app: other}
  egress:
  - port: {number: 9000, protocol: TCP, name: tcp}
    hosts: ["./*"]
`},
			proxies: []Proxy{pFoo, pFooOther},
			want: map[*Proxy][]string{
				&pFoo:      names(seedOut15, L(ob(9000, "dual.foo.svc.cluster.local"), ob(9000, "dual.foo.svc.cluster.local"), in(80)), fixed),
				&pFooOther: names(L(ob(9000, "dual.foo.svc.cluster.local")), fixed),
			},
		},
		// ---------------- outbound traffic policy ----------------
		{
			name: "allow-any-dynamic-dns-and-sidecar-override", rules: "R37 R38",
			extra: []string{meshCM(`outboundTrafficPolicy:
  mode: ALLOW_ANY_DYNAMIC_DNS`), `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bar}
spec:
  outboundTrafficPolicy:
    mode: REGISTRY_ONLY
`},
			proxies: []Proxy{pFoo, pBar},
			want: map[*Proxy][]string{
				&pFoo: names(seed19, L("AllowAnyDynamicDNSCluster")),
				&pBar: seed19,
			},
		},
		{
			name: "registry-only-keeps-passthrough", rules: "R37",
			extra:   []string{meshCM(`outboundTrafficPolicy: {mode: REGISTRY_ONLY}`)},
			proxies: []Proxy{pFoo},
			want:    map[*Proxy][]string{&pFoo: seed19},
		},
	}
}

func subsetsOf(subset string, groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		for _, n := range g {
			parts := strings.Split(n, "|")
			out = append(out, parts[0]+"|"+parts[1]+"|"+subset+"|"+parts[3])
		}
	}
	return out
}

const seedSidecar = `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: test-app
  namespace: foo
spec:
  workloadSelector:
    labels:
      app: test-app
  ingress:
  - port:
      number: 80
      protocol: HTTP
      name: http
    defaultEndpoint: 127.0.0.1:80
  egress:
  - hosts:
    - "istio-system/*"
`

const seAPI = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: se-api, namespace: foo}
spec:
  hosts: ["api.example.com"]
  location: MESH_EXTERNAL
  ports:
  - {number: 443, protocol: TLS, name: tls}
  - {number: 8080, protocol: HTTP, name: http}
  - {number: 5353, protocol: UDP, name: udp}
  resolution: DNS
`

const multiPortSvc = `apiVersion: v1
kind: Service
metadata: {name: multi, namespace: foo}
spec:
  selector: {app: multi}
  ports:
  - {name: grpc, port: 7070}
  - {name: http, port: 8080}
  - {name: http-alt, port: 9080}
`

func (c hwCase) files(t *testing.T) []string {
	var files []string
	if !c.noSeed {
		seed := readFile(t, "testdata/seed/before.yaml")
		if c.seed != nil {
			seed = c.seed(seed)
		}
		files = append(files, seed)
	}
	return append(files, c.extra...)
}

// TestHandWrittenIstio checks Istio's own output for every hand-written case
// against the expected list (derived from the reference; deviations are noted
// in the cases). This needs no CLI.
func TestHandWrittenIstio(t *testing.T) {
	for _, c := range handWrittenCases() {
		t.Run(c.name, func(t *testing.T) {
			files := c.files(t)
			got := IstioClusters(t, joinYAML(files...), c.proxies)
			for px, want := range c.want {
				expectNames(t, c.name+" ["+c.rules+"] proxy "+px.Key(), got[px.Key()], names(want))
			}
		})
	}
}

// TestHandWritten compares the CLI with Istio on every hand-written case. The
// seed and each extra stream are passed as separate -f files.
func TestHandWritten(t *testing.T) {
	requireCLI(t)
	for _, c := range handWrittenCases() {
		t.Run(c.name, func(t *testing.T) {
			files := c.files(t)
			got := IstioClusters(t, joinYAML(files...), c.proxies)
			compareCase(t, c.name+" ["+c.rules+"]", files, c.proxies, got)
		})
	}
}

// mustReplace replaces exactly one occurrence of old in s.
func mustReplace(s, old, new string) string {
	if strings.Count(s, old) != 1 {
		panic(fmt.Sprintf("seed edit: %q occurs %d times", old, strings.Count(s, old)))
	}
	return strings.Replace(s, old, new, 1)
}

// annotateBar sets networking.istio.io/exportTo on the seed's bar/bar Service.
func annotateBar(v string) func(string) string {
	return func(s string) string {
		return mustReplace(s, "  name: bar\n  namespace: bar\nspec:",
			"  name: bar\n  namespace: bar\n  annotations:\n    networking.istio.io/exportTo: \""+v+"\"\nspec:")
	}
}

// kubeDNSTCPFirst lists kube-dns's 53/TCP port before 53/UDP.
func kubeDNSTCPFirst(s string) string {
	udp := "  - name: dns\n    port: 53\n    protocol: UDP\n    targetPort: 53\n"
	tcp := "  - name: dns-tcp\n    port: 53\n    protocol: TCP\n    targetPort: 53\n"
	return mustReplace(s, udp+tcp, tcp+udp)
}

// labelNamespaces adds istio-discovery=enabled to the seed's Namespaces.
func labelNamespaces(ns ...string) func(string) string {
	return func(s string) string {
		for _, n := range ns {
			hdr := "kind: Namespace\nmetadata:\n  name: " + n + "\n"
			if strings.Contains(s, hdr+"  labels:\n") {
				s = mustReplace(s, hdr+"  labels:\n", hdr+"  labels:\n    istio-discovery: enabled\n")
			} else {
				s = mustReplace(s, hdr, hdr+"  labels:\n    istio-discovery: enabled\n")
			}
		}
		return s
	}
}
