package traffic

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

const inventoryYAML = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: pay}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: web}]}
---
apiVersion: v1
kind: Service
metadata: {name: payments, namespace: pay}
spec:
  selector: {app: payments}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: grpc, port: 9090}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
spec:
  selector: {app: cart}
  ports: [{name: http, port: 80}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: shop}
spec:
  hosts: [api.example.com, "*.googleapis.com"]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
`

func inventory(t *testing.T) *mesh.Inventory {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("inventory.yaml", []byte(inventoryYAML)); err != nil {
		t.Fatal(err)
	}
	return inv
}

func call(reporter, ns, wl, dst, dstName string, port int, proto string, n float64) Series {
	metric := RequestsMetric
	if proto == "tcp" {
		metric = TCPConnectionsMetric
	}
	return Series{Metric: metric, Reporter: reporter, SourceNamespace: ns, SourceWorkload: wl,
		DestinationService: dst, DestinationServiceName: dstName, Protocol: proto, Port: port, Count: n}
}

func TestResolve_ClassifiesDestinations(t *testing.T) {
	snap := &Snapshot{Source: "test", Window: "7d", Series: []Series{
		call("source", "shop", "web", "payments.pay.svc.cluster.local", "payments", 80, "http", 100),
		call("destination", "shop", "web", "payments.pay.svc.cluster.local", "payments", 8080, "http", 104), // target port 8080 -> 80
		call("source", "shop", "web", "cart.shop.svc.cluster.local", "cart", 0, "grpc", 5),
		call("source", "shop", "web", "cart.shop.svc.cluster.local", "cart", 0, "http", 7),
		call("source", "shop", "web", "api.example.com", "api.example.com", 0, "tcp", 3),
		call("source", "shop", "web", "storage.googleapis.com", "storage.googleapis.com", 0, "http", 2),
		call("source", "shop", "web", "ghost.shop.svc.cluster.local", "ghost", 0, "http", 1),
		call("source", "shop", "web", "other.example.org", PassthroughCluster, 0, "http", 9),
		call("source", "shop", "web", "payments.pay:9090", PassthroughCluster, 0, "http", 11),
		call("source", "shop", "web", "blocked.example.org", BlackHoleCluster, 0, "http", 4),
		call("source", "shop", "gone", "cart.shop.svc.cluster.local", "cart", 0, "http", 6),
		call("destination", "unknown", "unknown", "cart.shop.svc.cluster.local", "cart", 0, "http", 8),
	}}
	ev := Resolve(snap, inventory(t), "cluster.local")
	got := map[string]Call{}
	for _, c := range ev.Calls("shop", "web") {
		got[c.Host+"|"+string(c.Class)+"|"+c.Unit()+"|"+strconv.Itoa(c.Port)] = c
	}
	want := map[string]struct {
		count       float64
		passthrough bool
		dependency  string
		protocol    string
	}{
		"payments.pay.svc.cluster.local|service|requests|80":   {104, false, "payments.pay", "http"},
		"payments.pay.svc.cluster.local|service|requests|9090": {11, true, "payments.pay", ""},
		"cart.shop.svc.cluster.local|service|requests|0":       {12 - 7 + 7, false, "cart.shop", "grpc,http"},
		"api.example.com|service_entry|connections|0":          {3, false, "api.example.com", "tcp"},
		"*.googleapis.com|service_entry|requests|0":            {2, false, "*.googleapis.com", "http"},
		"ghost.shop.svc.cluster.local|unknown|requests|0":      {1, false, "", "http"},
		"other.example.org|passthrough|requests|0":             {9, true, "", "http"},
		"blocked.example.org|blackhole|requests|0":             {4, false, "", "http"},
	}
	if len(got) != len(want) {
		t.Errorf("got %d calls, want %d: %v", len(got), len(want), keys(got))
	}
	for k, w := range want {
		c, ok := got[k]
		if !ok {
			t.Errorf("missing call %s; have %v", k, keys(got))
			continue
		}
		if c.Count != w.count || c.Passthrough != w.passthrough || c.Dependency() != w.dependency {
			t.Errorf("%s: count %v passthrough %v dependency %q, want %v %v %q", k, c.Count, c.Passthrough, c.Dependency(), w.count, w.passthrough, w.dependency)
		}
		if w.protocol != "" && c.Protocol != w.protocol {
			t.Errorf("%s: protocol %q, want %q", k, c.Protocol, w.protocol)
		}
	}
	if len(ev.UnknownWorkloads) != 1 || ev.UnknownWorkloads[0].Workload != "gone" || ev.UnknownWorkloads[0].Requests != 6 {
		t.Errorf("unknown workloads = %+v, want shop/gone with 6", ev.UnknownWorkloads)
	}
	if ev.Unattributed != 1 {
		t.Errorf("unattributed = %d, want 1", ev.Unattributed)
	}
	if ev.Series != len(snap.Series) || ev.Empty() {
		t.Errorf("series = %d, want %d", ev.Series, len(snap.Series))
	}
	if strings.Join(ev.Workloads(), ",") != "shop/web" {
		t.Errorf("workloads = %v", ev.Workloads())
	}
}

// A TCP connection through PassthroughCluster has destination_service="unknown"; the server's
// proxy names the service. The call is the server's, marked as passthrough, and the nameless
// entry is explained by it.
func TestResolve_PassthroughNamedByTheServer(t *testing.T) {
	snap := &Snapshot{Window: "7d", Series: []Series{
		call("source", "shop", "web", "unknown", PassthroughCluster, 0, "tcp", 5),
		call("destination", "shop", "web", "payments.pay.svc.cluster.local", "payments", 0, "tcp", 5),
		call("source", "shop", "web", "cart.shop.svc.cluster.local", "cart", 0, "http", 1),
	}}
	calls := Resolve(snap, inventory(t), "cluster.local").Calls("shop", "web")
	if len(calls) != 2 {
		t.Fatalf("calls = %+v, want cart and payments", calls)
	}
	p := calls[1]
	if p.Host != "payments.pay.svc.cluster.local" || !p.Passthrough || !p.TCP || p.Count != 5 {
		t.Errorf("payments call = %+v, want a TCP passthrough call of 5 connections", p)
	}
	// Without the server's report the nameless passthrough stays, not dropped.
	snap.Series = snap.Series[:1]
	calls = Resolve(snap, inventory(t), "cluster.local").Calls("shop", "web")
	if len(calls) != 1 || calls[0].Class != ClassPassthrough || calls[0].Host != "" {
		t.Errorf("calls = %+v, want one nameless passthrough call", calls)
	}
	if !strings.Contains(calls[0].Describe("7d"), "an address Istio could not name") {
		t.Errorf("describe = %q", calls[0].Describe("7d"))
	}
}

func TestCut_KeepsCallsWithoutAnOutboundCluster(t *testing.T) {
	calls := []Call{
		{Host: "payments.pay.svc.cluster.local", Port: 80, Class: ClassService, Service: "payments.pay"},
		{Host: "payments.pay.svc.cluster.local", Port: 9090, Class: ClassService, Service: "payments.pay"},
		{Host: "cart.shop.svc.cluster.local", Class: ClassService, Service: "cart.shop"},
		{Host: "other.example.org", Class: ClassPassthrough},
	}
	outbound := []predict.Cluster{
		{Name: "outbound|80||payments.pay.svc.cluster.local", FQDN: "payments.pay.svc.cluster.local", Port: 80, Direction: predict.Outbound},
	}
	cut := Cut(calls, outbound)
	if len(cut) != 2 || cut[0].Port != 9090 || cut[1].Service != "cart.shop" {
		t.Errorf("cut = %+v, want payments:9090 and cart", cut)
	}
	outbound = append(outbound, predict.Cluster{FQDN: "cart.shop.svc.cluster.local", Port: 8443, Direction: predict.Outbound})
	if cut := Cut(calls, outbound); len(cut) != 1 || cut[0].Port != 9090 {
		t.Errorf("cut = %+v, want only payments:9090 (cart's port is unknown, any port of it routes)", cut)
	}
}

func TestMatches_DependencyFormsAndPorts(t *testing.T) {
	svc := Call{Host: "payments.pay.svc.cluster.local", Port: 80, Class: ClassService, Service: "payments.pay", Namespaces: []string{"pay"}}
	se := Call{Host: "*.googleapis.com", Class: ClassServiceEntry, Namespaces: []string{"shop"}}
	for _, tc := range []struct {
		c     Call
		dep   string
		ports []uint32
		ns    string
		want  bool
	}{
		{svc, "payments.pay", nil, "shop", true},
		{svc, "payments", nil, "pay", true},
		{svc, "payments", nil, "shop", false},
		{svc, "payments.pay.svc.cluster.local", nil, "shop", true},
		{svc, "payments.pay.svc", nil, "shop", true},
		{svc, "pay/*", nil, "shop", true},
		{svc, "shop/*", nil, "shop", false},
		{svc, "payments.pay", []uint32{80}, "shop", true},
		{svc, "payments.pay", []uint32{9090}, "shop", false},
		{se, "storage.googleapis.com", nil, "shop", true},
		{se, "*.googleapis.com", nil, "shop", true},
		{se, "api.example.com", nil, "shop", false},
		{se, "shop/*", nil, "shop", true},
		{se, "pay/*", nil, "shop", false},
		{Call{Host: "x.example.org", Class: ClassPassthrough}, "x.example.org", nil, "shop", false},
	} {
		if got := tc.c.Matches(tc.dep, tc.ports, tc.ns, "cluster.local"); got != tc.want {
			t.Errorf("%s matches %q %v in %s = %v, want %v", tc.c.Host, tc.dep, tc.ports, tc.ns, got, tc.want)
		}
	}
}

func TestParseSnapshot(t *testing.T) {
	good := `{"status":"success","data":{"resultType":"vector","result":[
  {"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":"web","source_workload_namespace":"shop","destination_service":"cart.shop.svc.cluster.local","destination_service_name":"cart","request_protocol":"http","destination_port":"80"},"value":[1733300000,"12.5"]}
]}}`
	snap, err := ParseSnapshot("observed.json", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Window != "7d" || len(snap.Series) != 1 || snap.Series[0].Port != 80 || snap.Series[0].Count != 12.5 || snap.Series[0].SourceWorkload != "web" {
		t.Errorf("snapshot = %+v", snap)
	}
	// promtool query instant -o json prints the bare list.
	bare := good[strings.Index(good, "[\n") : strings.LastIndex(good, "]")+1]
	if snap2, err := ParseSnapshot("bare.json", []byte(bare)); err != nil || len(snap2.Series) != 1 {
		t.Errorf("bare list: %v %+v", err, snap2)
	}

	for _, tc := range []struct{ name, data, want string }{
		{"empty", "  \n", "the file is empty"},
		{"syntax", "{\"status\":\"success\",\n\"data\": {\"resultType\": \"vector\", \"result\": [}\n}", "line 2, column"},
		{"truncated", good[:200], "the JSON ends early"},
		{"error answer", `{"status":"error","errorType":"bad_data","error":"parse error"}`, "error answer of Prometheus (bad_data: parse error)"},
		{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `"matrix", not the "vector"`},
		{"foreign query", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"reporter":"source"},"value":[1,"1"]}]}}`, "has no meshscope_metric label"},
		{"bad port", strings.Replace(good, `"destination_port":"80"`, `"destination_port":"http"`, 1), `destination_port="http"`},
		{"two documents", good + "\n" + good, "more than one JSON document"},
		{"type", `{"status":"success","data":{"resultType":"vector","result":{"a":1}}}`, "line 1, column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSnapshot("observed.json", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "observed.json") {
				t.Fatalf("error = %v, want one naming observed.json and %q", err, tc.want)
			}
			var f *Fault
			if !errors.As(err, &f) || f.Kind != FaultFile {
				t.Errorf("error %v is not a file fault", err)
			}
		})
	}
}

func TestQueryNamesTheWindow(t *testing.T) {
	q := Query("36h")
	for _, want := range []string{"increase(istio_requests_total[36h])", "increase(istio_tcp_connections_opened_total[36h])", `"meshscope_window", "36h"`, "destination_port", "> 0"} {
		if !strings.Contains(q, want) {
			t.Errorf("query %s lacks %s", q, want)
		}
	}
	if _, err := ParseWindow("7 days"); err == nil {
		t.Error("ParseWindow(\"7 days\") accepted")
	}
	if _, err := ParseWindow("0s"); err == nil {
		t.Error("ParseWindow(\"0s\") accepted")
	}
}

func TestFormatCount(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 12.4: "12", 999.5: "1,000", 1234567: "1,234,567"} {
		if got := FormatCount(in); got != want {
			t.Errorf("FormatCount(%v) = %q, want %q", in, got, want)
		}
	}
}

func keys(m map[string]Call) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDependencies_PortsOnlyWhenCertain(t *testing.T) {
	inv := inventory(t)
	resolve := func(series ...Series) []Dependency {
		return Dependencies(Resolve(&Snapshot{Window: "7d", Series: series}, inv, "cluster.local").Calls("shop", "web"))
	}
	// cart has one port (80), api.example.com one (443), payments' port comes from the label.
	deps := resolve(
		call("source", "shop", "web", "payments.pay.svc.cluster.local", "payments", 9090, "grpc", 10),
		call("source", "shop", "web", "cart.shop.svc.cluster.local", "cart", 0, "http", 5),
		call("source", "shop", "web", "api.example.com", "api.example.com", 0, "tcp", 2),
		call("source", "shop", "web", "other.example.org", PassthroughCluster, 0, "http", 9),
	)
	got := []string{}
	for _, d := range deps {
		got = append(got, d.Service+fmtPorts(d.Ports)+" "+d.CountPhrase("7d"))
	}
	want := []string{"api.example.com[443] 2 connections over 7d", "cart.shop[80] 5 requests over 7d", "payments.pay[9090] 10 requests over 7d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("dependencies = %q, want %q", got, want)
	}
	// payments without a port label has two ports: uncertain, so no dependency lists ports.
	deps = resolve(
		call("source", "shop", "web", "payments.pay.svc.cluster.local", "payments", 0, "grpc", 10),
		call("source", "shop", "web", "cart.shop.svc.cluster.local", "cart", 0, "http", 5),
	)
	if len(deps) != 2 || len(deps[0].Ports)+len(deps[1].Ports) != 0 {
		t.Errorf("dependencies = %+v, want two without ports", deps)
	}
}

func fmtPorts(p []uint32) string {
	var s []string
	for _, x := range p {
		s = append(s, strconv.Itoa(int(x)))
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TestQuantity: one is singular, every other count plural, after rounding as FormatCount does.
func TestQuantity(t *testing.T) {
	for _, c := range []struct {
		v    float64
		tcp  bool
		want string
	}{{1, false, "1 request"}, {0.6, false, "1 request"}, {1.4, true, "1 connection"}, {0, false, "0 requests"}, {2, true, "2 connections"}, {1204.6, false, "1,205 requests"}} {
		if got := (Call{Count: c.v, TCP: c.tcp}).Amount(); got != c.want {
			t.Errorf("Amount of %v (tcp %v) = %q, want %q", c.v, c.tcp, got, c.want)
		}
	}
	if got := (Dependency{Requests: 1, TCP: 1}).CountPhrase("7d"); got != "1 request and 1 connection over 7d" {
		t.Errorf("CountPhrase = %q", got)
	}
}

// TestRegistry_MostSpecificServiceEntryHost: a host covered by two wildcard ServiceEntry hosts
// resolves to the more specific one, an exact host beats both, as Istio's MostSpecificHostMatch.
func TestRegistry_MostSpecificServiceEntryHost(t *testing.T) {
	inv := inventory(t)
	if err := inv.AddYAML("more.yaml", []byte(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: storage, namespace: shop}
spec:
  hosts: ["*.storage.googleapis.com", "eu.storage.googleapis.com"]
  ports: [{number: 443, name: tls, protocol: TLS}]
  resolution: DNS
`)); err != nil {
		t.Fatal(err)
	}
	r := newRegistry(inv, "cluster.local")
	for host, want := range map[string]string{
		"x.storage.googleapis.com":  "*.storage.googleapis.com",
		"eu.storage.googleapis.com": "eu.storage.googleapis.com",
		"pubsub.googleapis.com":     "*.googleapis.com",
		"api.example.com":           "api.example.com",
	} {
		if got, class, _ := r.lookup(host); got != want || class != ClassServiceEntry {
			t.Errorf("lookup(%q) = %q, %s; want %q, %s", host, got, class, want, ClassServiceEntry)
		}
	}
	if got, class, _ := r.lookup("example.org"); got != "example.org" || class != ClassUnknown {
		t.Errorf("lookup(example.org) = %q, %s; want unknown", got, class)
	}
}

// TestResolve_WorkloadsAsIstioNamesThem: Istio's metrics name the Pods of a CronJob's Job by
// the CronJob and a live Deployment's Pods by the Deployment (census, C1); the resolver knows
// them by those names, so their calls are checked rather than reported as unknown callers.
func TestResolve_WorkloadsAsIstioNamesThem(t *testing.T) {
	inv := inventory(t)
	if err := inv.AddYAML("live.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: nightly-29000000, namespace: shop}
spec:
  template: {metadata: {labels: {app: nightly}}, spec: {restartPolicy: Never, containers: [{name: app, image: app}]}}
---
apiVersion: v1
kind: Pod
metadata:
  name: api-7c9d8f6b5-x2x2x
  generateName: api-7c9d8f6b5-
  namespace: shop
  labels: {app: api, pod-template-hash: 7c9d8f6b5}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-7c9d8f6b5, uid: u, controller: true}]
spec: {containers: [{name: app, image: app}, {name: istio-proxy, image: proxyv2}]}
status: {phase: Running}
`)); err != nil {
		t.Fatal(err)
	}
	snap := &Snapshot{Window: "7d", Series: []Series{
		call("source", "shop", "nightly", "cart.shop.svc.cluster.local", "cart", 0, "http", 3),
		call("source", "shop", "api", "cart.shop.svc.cluster.local", "cart", 0, "http", 4),
	}}
	ev := Resolve(snap, inv, "cluster.local")
	if len(ev.UnknownWorkloads) != 0 {
		t.Errorf("unknown workloads %+v, want none", ev.UnknownWorkloads)
	}
	for _, w := range []string{"nightly", "api"} {
		if calls := ev.Calls("shop", w); len(calls) != 1 || calls[0].Host != "cart.shop.svc.cluster.local" {
			t.Errorf("%s: calls %+v", w, calls)
		}
	}
}

// Argo Rollouts: Istio names their pods after the Rollout, and the inventory reads them, with
// their pods from the template or from the Deployment spec.workloadRef names (either order).
// Their calls are checked, not reported as callers the inventory lacks.
func TestResolve_RolloutsAreWorkloads(t *testing.T) {
	inv := inventory(t)
	if err := inv.AddYAML("rollouts.yaml", []byte(`apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: api:1}]}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: ref, namespace: shop}
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: ref-template}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ref-template, namespace: shop}
spec:
  replicas: 0
  selector: {matchLabels: {app: ref}}
  template:
    metadata: {labels: {app: ref}}
    spec: {containers: [{name: ref, image: ref:1}]}
`)); err != nil {
		t.Fatal(err)
	}
	snap := &Snapshot{Window: "7d", Series: []Series{
		call("source", "shop", "api", "cart.shop.svc.cluster.local", "cart", 0, "http", 3),
		call("source", "shop", "ref", "cart.shop.svc.cluster.local", "cart", 0, "http", 4),
	}}
	ev := Resolve(snap, inv, "cluster.local")
	if len(ev.UnknownWorkloads) != 0 {
		t.Errorf("unknown workloads %+v, want none", ev.UnknownWorkloads)
	}
	for _, w := range []string{"api", "ref"} {
		if calls := ev.Calls("shop", w); len(calls) != 1 {
			t.Errorf("%s: calls %+v", w, calls)
		}
	}
	c := census.Take(inv)
	for name, want := range map[string]string{"api": "3", "ref": "1"} {
		w := c.Lookup("shop", name)
		if w == nil || w.Kind != "Rollout" || w.Replicas.String() != want || w.Labels["app"] != name {
			t.Errorf("census of the Rollout %s = %+v, want a Rollout of %s replicas labelled app=%s", name, w, want, name)
		}
	}
}
