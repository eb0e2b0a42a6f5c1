package scope

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

func seedInventory(t testing.TB) *mesh.Inventory {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("seed", []byte(fixture.Seed)); err != nil {
		t.Fatal(err)
	}
	return inv
}

var app = map[string]string{"app": "test-app"}

func predictWith(t *testing.T, inv *mesh.Inventory, r *Result, ns string) []string {
	t.Helper()
	p, err := predict.New(inv.WithSidecars(r.Sidecar), predict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Predict(predict.Proxy{Namespace: ns, Labels: app}).Names()
}

func TestCompileSeedScope(t *testing.T) {
	inv := seedInventory(t)
	d := Declaration{Namespace: "foo", Selector: app, Ingress: []Ingress{{Port: 80, Protocol: "HTTP", DefaultEndpoint: "127.0.0.1:80"}}}
	r, probs := Compile(inv, d, Options{})
	if len(probs) > 0 {
		t.Fatalf("problems: %+v", probs)
	}
	// The golden other packages' tests use as the compiled seed Sidecar.
	if want := fixture.SidecarFoo; r.Manifest != want {
		t.Errorf("manifest differs from internal/fixture/sidecar-foo.yaml:\n%s\nwant:\n%s", r.Manifest, want)
	}
	for i := 0; i < 20; i++ {
		again, _ := Compile(inv, d, Options{})
		if again.Manifest != r.Manifest {
			t.Fatalf("run %d rendered different YAML:\n%s", i, again.Manifest)
		}
	}
	if got := predictWith(t, inv, r, "foo"); len(got) != 13 {
		t.Errorf("foo under the compiled scope has %d clusters, want 13: %v", len(got), got)
	}
	// The rendered manifest parses back to the same scope.
	back, err := mesh.ParseSidecar("manifest", []byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := predict.New(inv.WithSidecars(back), predict.Options{})
	if n := len(p.Predict(predict.Proxy{Namespace: "foo", Labels: app}).Clusters); n != 13 {
		t.Errorf("parsed-back manifest gives %d clusters, want 13", n)
	}
}

// TestCompileSeedBarScope checks the compiled Sidecar of the seed's bar scope (HTTP on 80, calls
// foo.foo on port 80) against the golden other packages' tests use.
func TestCompileSeedBarScope(t *testing.T) {
	inv := seedInventory(t)
	d := Declaration{Namespace: "bar", Selector: app, Ingress: []Ingress{{Port: 80, Protocol: "HTTP", DefaultEndpoint: "127.0.0.1:80"}},
		Dependencies: []Dependency{{Service: "foo.foo", Ports: []uint32{80}}}}
	r, probs := Compile(inv, d, Options{})
	if len(probs) > 0 {
		t.Fatalf("problems: %+v", probs)
	}
	if want := fixture.SidecarBar; r.Manifest != want {
		t.Errorf("manifest differs from internal/fixture/sidecar-bar.yaml:\n%s\nwant:\n%s", r.Manifest, want)
	}
	if got := predictWith(t, inv, r, "bar"); len(got) != 14 {
		t.Errorf("bar under the compiled scope has %d clusters, want 14: %v", len(got), got)
	}
}

// TestCompileIsTheFloor checks, with the predictor, that a port-level scope gives
// exactly the declared service ports plus inbound and the fixed clusters.
func TestCompileIsTheFloor(t *testing.T) {
	inv := seedInventory(t)
	cases := []struct {
		deps []Dependency
		want []string
	}{
		{[]Dependency{{Service: "bar.bar", Ports: []uint32{80}}}, []string{"outbound|80||bar.bar.svc.cluster.local"}},
		{[]Dependency{{Service: "istiod.istio-system", Ports: []uint32{15012, 443}}},
			[]string{"outbound|15012||istiod.istio-system.svc.cluster.local", "outbound|443||istiod.istio-system.svc.cluster.local"}},
		{[]Dependency{{Service: "istiod.istio-system.svc.cluster.local"}}, []string{
			"outbound|15010||istiod.istio-system.svc.cluster.local", "outbound|15012||istiod.istio-system.svc.cluster.local",
			"outbound|15014||istiod.istio-system.svc.cluster.local", "outbound|443||istiod.istio-system.svc.cluster.local"}},
		{[]Dependency{{Service: "foo"}, {Service: "kube-dns.kube-system", Ports: []uint32{53}}},
			[]string{"outbound|80||foo.foo.svc.cluster.local", "outbound|53||kube-dns.kube-system.svc.cluster.local"}},
		{nil, nil},
	}
	for _, tc := range cases {
		r, probs := Compile(inv, Declaration{Namespace: "foo", Selector: app, Dependencies: tc.deps}, Options{SystemHosts: []string{}})
		if r == nil {
			t.Fatalf("%v: problems %+v", tc.deps, probs)
		}
		want := append(slices.Clone(tc.want), "inbound|80||", "BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster")
		slices.Sort(want)
		if got := predictWith(t, inv, r, "foo"); !slices.Equal(got, want) {
			t.Errorf("%v:\n got  %v\n want %v\nmanifest:\n%s", tc.deps, got, want, r.Manifest)
		}
	}
}

func TestCompileProblems(t *testing.T) {
	inv := seedInventory(t)
	inv2 := inv.Clone()
	if err := inv2.AddYAML("extra", []byte(`
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: existing, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
`)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		inv     *mesh.Inventory
		d       Declaration
		attr    string
		summary string
		detail  string
	}{
		{"unknown service suggests near names", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "barr.bar"}}},
			AttrDependencies, "Unknown Service", `Did you mean "bar.bar"`},
		{"unknown FQDN suggests near FQDNs", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "kube-dsn.kube-system.svc.cluster.local"}}},
			AttrDependencies, "Unknown Service", `Did you mean "kube-dns.kube-system.svc.cluster.local"`},
		{"unknown short FQDN suggests in its form", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "barr.bar.svc"}}},
			AttrDependencies, "Unknown Service", `Did you mean "bar.bar.svc"`},
		{"missing namespace in an empty inventory says so", mesh.New(), Declaration{Namespace: "foo"}, AttrNamespace, "Unknown Namespace", "The inventory is empty"},
		{"malformed host", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "Bad_Host!"}}},
			AttrDependencies, "Malformed Host", `"Bad_Host!"`},
		{"malformed namespace wildcard", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "bar/x/y"}}},
			AttrDependencies, "Malformed Host", `"bar/x/y"`},
		{"missing namespace", inv, Declaration{Namespace: "nope"}, AttrNamespace, "Unknown Namespace", `"nope"`},
		{"invalid label key", inv, Declaration{Namespace: "foo", Selector: map[string]string{"bad key": "x"}},
			AttrWorkloadSelector, "Invalid Label Key", `"bad key"`},
		{"invalid label value", inv, Declaration{Namespace: "foo", Selector: map[string]string{"app": "no spaces"}},
			AttrWorkloadSelector, "Invalid Label Value", `"no spaces"`},
		{"port not exposed", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "bar.bar", Ports: []uint32{8080}}}},
			AttrDependencies, "Port Not Exposed", "exposes only 80/TCP"},
		{"name too long", inv, Declaration{Namespace: "foo", Name: strings.Repeat("a", 254)}, AttrName, "Invalid Name", "253"},
		{"unknown namespace dependency", inv, Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "baz/*"}}},
			AttrDependencies, "Unknown Namespace", `Did you mean "bar/*"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, probs := Compile(tc.inv, tc.d, Options{})
			if r != nil || len(probs) == 0 {
				t.Fatalf("got result %v and problems %+v, want an error", r, probs)
			}
			p := probs[0]
			if p.Attribute != tc.attr || p.Summary != tc.summary || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("problem = %+v\nwant attribute %q, summary %q, detail containing %q", p, tc.attr, tc.summary, tc.detail)
			}
			if tc.attr == AttrDependencies && p.Index != 0 {
				t.Errorf("index = %d, want 0", p.Index)
			}
		})
	}
	t.Run("conflicting selector", func(t *testing.T) {
		r, probs := Compile(inv2, Declaration{Namespace: "foo", Selector: app}, Options{})
		if len(probs) > 0 {
			t.Fatal(probs)
		}
		c := Conflicts(inv2, r.Sidecar)
		if len(c) != 1 || c[0].Summary != "Conflicting Sidecar Selection" || !strings.Contains(c[0].Detail, `"existing"`) {
			t.Fatalf("conflicts = %+v", c)
		}
		// From manifests: what works offline, and why import does not.
		if d := c[0].Detail; !strings.Contains(d, `take it over offline: give this scope the Sidecar's name (name = "existing")`) ||
			!strings.Contains(d, `or import it (an import block with id = "`) {
			t.Errorf("offline advice: %s", d)
		}
		// From a cluster: import.
		inv2.Sidecars[0].Source = "cluster:Sidecar/foo/existing"
		if d := Conflicts(inv2, r.Sidecar)[0].Detail; !strings.Contains(d, `import it (an import block with id = "foo/existing"`) {
			t.Errorf("live advice: %s", d)
		}
		// The scope that takes the name over does not conflict.
		named, _ := Compile(inv2, Declaration{Namespace: "foo", Name: "existing", Selector: app}, Options{})
		if c := Conflicts(inv2, named.Sidecar); len(c) != 0 {
			t.Errorf("a scope named after the Sidecar conflicts with it: %+v", c)
		}
	})
}

func TestDefaultName(t *testing.T) {
	if n := DefaultName(nil); n != "default" {
		t.Errorf("DefaultName(nil) = %q", n)
	}
	if n := DefaultName(map[string]string{"version": "v1", "app": "Reviews_X"}); n != "reviews-x-v1" {
		t.Errorf("DefaultName = %q", n)
	}
	long := DefaultName(map[string]string{"a": strings.Repeat("x", 63), "b": strings.Repeat("y", 63)})
	if len(long) > 63 {
		t.Errorf("DefaultName too long: %d", len(long))
	}
}

func TestCompileOutboundPolicySpelledOut(t *testing.T) {
	r, probs := Compile(seedInventory(t), Declaration{Namespace: "foo", OutboundTrafficPolicy: "REGISTRY_ONLY"}, Options{})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if !strings.Contains(r.Manifest, "outboundTrafficPolicy:\n    mode: REGISTRY_ONLY\n") {
		t.Errorf("manifest lacks the explicit mode:\n%s", r.Manifest)
	}
	back, err := mesh.ParseSidecar("m", []byte(r.Manifest))
	if err != nil || back.Spec.GetOutboundTrafficPolicy() == nil {
		t.Fatalf("parse back: %v, %+v", err, back)
	}
}

func TestCompileWarnings(t *testing.T) {
	inv := seedInventory(t)
	if err := inv.AddYAML("extra", []byte(`
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: foo}
spec: {type: ExternalName, externalName: api.example.com, ports: [{port: 443, name: https}]}
`)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		d       Declaration
		opts    Options
		attr    string
		index   int
		summary string
		detail  string
		warning bool
	}{
		{"system hosts missing", Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "bar.bar"}}}, Options{SystemHosts: []string{}},
			AttrNone, -1, "System Hosts Missing", `"istio-system"`, true},
		{"namespace port nobody exposes", Declaration{Namespace: "foo", Dependencies: []Dependency{{Service: "bar/*", Ports: []uint32{9999}}}}, Options{},
			AttrDependencies, 0, "Port Not Exposed", "port 9999", true},
		{"registry only and an uncovered external name", Declaration{Namespace: "foo", OutboundTrafficPolicy: "REGISTRY_ONLY",
			Dependencies: []Dependency{{Service: "bar.bar"}, {Service: "ext"}}}, Options{},
			AttrDependencies, 1, "External Host Not In Registry", `"api.example.com"`, true},
		{"exclusion before 1.31", Declaration{Namespace: "foo"}, Options{SystemHosts: []string{"istio-system/*", "~istio-system/zipkin.istio-system.svc.cluster.local"}, IstioVersion: "1.30"},
			AttrSystemHosts, 1, "Exclusion Not Supported", `"1.30"`, false},
		{"malformed system host", Declaration{Namespace: "foo"}, Options{SystemHosts: []string{"istio-system"}},
			AttrSystemHosts, 0, "Malformed Host", `"istio-system"`, false},
		{"one dependency without ports widens the others", Declaration{Namespace: "foo",
			Dependencies: []Dependency{{Service: "bar.bar", Ports: []uint32{80}}, {Service: "kube-dns.kube-system"}}}, Options{},
			AttrDependencies, 1, "Dependency Widens Every Port", `"kube-dns.kube-system" lists no ports, while "bar.bar" list theirs`, true},
		{"a port that is first UDP widens the others", Declaration{Namespace: "foo",
			Dependencies: []Dependency{{Service: "bar.bar", Ports: []uint32{80}}, {Service: "kube-dns.kube-system", Ports: []uint32{53}}}}, Options{},
			AttrDependencies, 1, "Dependency Widens Every Port", `a port it lists is also a UDP port of the same number`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, probs := Compile(inv, tc.d, tc.opts)
			var found *Problem
			for i := range probs {
				if probs[i].Summary == tc.summary {
					found = &probs[i]
				}
			}
			if found == nil {
				t.Fatalf("no %q problem in %+v", tc.summary, probs)
			}
			if found.Attribute != tc.attr || found.Index != tc.index || found.Warning != tc.warning || !strings.Contains(found.Detail, tc.detail) {
				t.Errorf("problem = %+v", *found)
			}
			if tc.warning != (r != nil) {
				t.Errorf("result = %v with warning=%v", r, tc.warning)
			}
		})
	}
	// Every dependency with ports, or none with ports: no widening to warn about.
	for _, deps := range [][]Dependency{
		{{Service: "bar.bar", Ports: []uint32{80}}, {Service: "metrics-server.kube-system", Ports: []uint32{443}}},
		{{Service: "bar.bar"}, {Service: "kube-dns.kube-system"}},
	} {
		_, probs := Compile(inv, Declaration{Namespace: "foo", Dependencies: deps}, Options{})
		for _, p := range probs {
			if p.Summary == "Dependency Widens Every Port" {
				t.Errorf("dependencies %+v: %+v", deps, p)
			}
		}
	}
	// 1.31 understands exclusions.
	if r, probs := Compile(inv, Declaration{Namespace: "foo"}, Options{SystemHosts: []string{"istio-system/*", "~istio-system/zipkin.istio-system.svc.cluster.local"}}); r == nil {
		t.Errorf("exclusion on 1.31 rejected: %+v", probs)
	}
}

func TestDecompileRoundTrip(t *testing.T) {
	inv := seedInventory(t)
	if err := inv.AddYAML("se", []byte(`
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: wiki, namespace: foo}
spec: {hosts: ["*.wikipedia.org"], ports: [{number: 443, name: tls, protocol: TLS}], resolution: NONE}
`)); err != nil {
		t.Fatal(err)
	}
	decls := []Declaration{
		{Namespace: "foo", Selector: app, Dependencies: []Dependency{{Service: "bar.bar"}, {Service: "kube-system/*"}, {Service: "*.wikipedia.org"}},
			Ingress: []Ingress{{Port: 80, Protocol: "HTTP", DefaultEndpoint: "127.0.0.1:80"}}, OutboundTrafficPolicy: "REGISTRY_ONLY"},
		{Namespace: "bar", Dependencies: []Dependency{{Service: "foo.foo", Ports: []uint32{80}}, {Service: "istiod.istio-system", Ports: []uint32{443, 15012}}}},
		{Namespace: "bar", Name: "none"},
	}
	for _, d := range decls {
		r, probs := Compile(inv, d, Options{})
		if r == nil {
			t.Fatalf("%+v: %+v", d, probs)
		}
		back, probs := Decompile(r.Sidecar, Options{}, "istio-system")
		if len(probs) > 0 {
			t.Fatalf("decompile: %+v", probs)
		}
		again, probs := Compile(inv, back, Options{})
		if again == nil || again.Manifest != r.Manifest {
			t.Errorf("round trip of %+v\ngave %+v (%+v)\n%s\nwant\n%s", d, back, probs, again.Manifest, r.Manifest)
		}
	}
	sc, _ := mesh.ParseSidecar("x", []byte(`
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: all, namespace: foo}
spec:
  egress: [{hosts: ["*/*"]}]
`))
	if _, probs := Decompile(sc, Options{}, ""); len(probs) != 1 || probs[0].Summary != "Egress Host Not Importable" || !strings.Contains(probs[0].Detail, `"*/*"`) {
		t.Errorf("*/* import problems = %+v", probs)
	}
}

// TestCompilePortListenerKeepsIstiosProtocol: a port listener carries the protocol istiod
// gives the Service port without a Sidecar (R2, istioconfig.ConvertKubeProtocol): an
// unnamed-protocol port ("web") gets no protocol, so that istiod keeps detecting HTTP on it
// rather than proxying it as TCP; Kubernetes' appProtocols and "grpc-web" are read as Istio
// reads them; hosts that disagree on a port get detection when each is HTTP or detected, and
// TCP when one is a TCP protocol.
func TestCompilePortListenerKeepsIstiosProtocol(t *testing.T) {
	inv := mesh.New()
	if err := inv.AddYAML("ports", []byte(`apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Service
metadata: {name: s1, namespace: a}
spec:
  selector: {app: s1}
  ports:
  - {port: 81, name: web}
  - {port: 82, name: x, appProtocol: kubernetes.io/h2c}
  - {port: 83, name: grpc-web}
  - {port: 84, name: http-api}
  - {port: 85, name: wss, appProtocol: kubernetes.io/wss}
  - {port: 86, name: tcp-db}
  - {port: 87, name: http}
---
apiVersion: v1
kind: Service
metadata: {name: s2, namespace: a}
spec:
  selector: {app: s2}
  ports:
  - {port: 84, name: grpc}
  - {port: 86, name: http}
  - {port: 87, name: other}
`)); err != nil {
		t.Fatal(err)
	}
	d := Declaration{Namespace: "a", Selector: map[string]string{"app": "c"}, Dependencies: []Dependency{
		{Service: "s1.a", Ports: []uint32{81, 82, 83, 84, 85, 86, 87}},
		{Service: "s2.a", Ports: []uint32{84, 86, 87}},
	}}
	r, probs := Compile(inv, d, Options{})
	if r == nil {
		t.Fatalf("problems: %+v", probs)
	}
	// Port 86: s2.a's HTTP calls go through the TCP listener s1.a's tcp-db makes, and say so.
	if len(probs) != 1 || !probs[0].Warning || probs[0].Index != 1 || probs[0].Summary != "Port Listener Is TCP" ||
		!strings.Contains(probs[0].Detail, `"s2.a" calls port 86, whose protocol is HTTP, but "s1.a" on the same port is TCP`) {
		t.Errorf("problems: %+v; want one warning on dependencies[1] about port 86", probs)
	}
	want := map[uint32][2]string{ // port: protocol, listener name
		81: {"", "port-81"},       // "web": no protocol Istio knows, detected
		82: {"HTTP2", "http2-82"}, // kubernetes.io/h2c
		83: {"GRPC-WEB", "grpc-web-83"},
		84: {"", "port-84"},       // HTTP and GRPC: both HTTP, detected
		85: {"HTTPS", "https-85"}, // kubernetes.io/wss
		86: {"TCP", "tcp-86"},     // TCP and HTTP: TCP, as detection would stall a server-first protocol
		87: {"", "port-87"},       // HTTP and detected: detected
	}
	got := map[uint32][2]string{}
	for _, e := range r.Sidecar.Spec.GetEgress() {
		if p := e.GetPort(); p != nil {
			got[p.GetNumber()] = [2]string{p.GetProtocol(), p.GetName()}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("port listeners (protocol, name):\n got %v\nwant %v\n%s", got, want, r.Manifest)
	}
}
