package adopt

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// destinations is the part of every test inventory the callers call: a Service with two ports,
// one with a UDP and a TCP port of one number (kube-dns), one with a UDP port only, one exported
// to its own namespace only, and one whose port is TCP where the others' port 80 is HTTP.
const destinations = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: data, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: istiod, namespace: istio-system}
spec: {selector: {app: istiod}, ports: [{name: grpc-xds, port: 15010}]}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec: {selector: {k8s-app: kube-dns}, ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: data}
spec: {selector: {app: api}, ports: [{name: http, port: 80}, {name: grpc, port: 9090}]}
---
apiVersion: v1
kind: Service
metadata: {name: redis, namespace: data}
spec: {selector: {app: redis}, ports: [{name: tcp-redis, port: 6379}]}
---
apiVersion: v1
kind: Service
metadata: {name: udp, namespace: data}
spec: {selector: {app: udp}, ports: [{name: udp, port: 53, protocol: UDP}]}
---
apiVersion: v1
kind: Service
metadata: {name: raw, namespace: data}
spec: {selector: {app: raw}, ports: [{name: tcp-raw, port: 80}]}
---
apiVersion: v1
kind: Service
metadata:
  name: vault
  namespace: data
  annotations: {networking.istio.io/exportTo: "."}
spec: {selector: {app: vault}, ports: [{name: http, port: 8200}]}
`

// deployment is a Deployment of namespace shop whose pods carry labels ("k=v,k=v").
func deployment(name, labels string) string { return workload("Deployment", name, labels) }

func workload(kind, name, labels string) string {
	var kv []string
	for _, l := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(l, "=")
		kv = append(kv, fmt.Sprintf("%q: %q", k, v))
	}
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: shop}
spec:
  selector: {matchLabels: {%s}}
  template:
    metadata: {labels: {%s}}
    spec: {containers: [{name: c, image: c}]}
`, kind, name, kv[0], strings.Join(kv, ", "))
}

// sidecar is a Sidecar of namespace shop selecting labels ("" for none), egress as given.
func sidecar(name, labels, rest string) string {
	sel := ""
	if labels != "" {
		k, v, _ := strings.Cut(labels, "=")
		sel = fmt.Sprintf("\n  workloadSelector: {labels: {%q: %q}}", k, v)
	}
	return fmt.Sprintf(`
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: %s, namespace: shop}
spec:%s
  egress: [{hosts: ["istio-system/*", "./*"]}]
%s`, name, sel, rest)
}

// inventory loads destinations and the documents given.
func inventory(t *testing.T, docs ...string) *mesh.Inventory {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("inventory.yaml", []byte(strings.Join(append([]string{destinations}, docs...), "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	return inv
}

// call is one Prometheus series over 7d: n requests (proto "tcp": connections) from the workload
// src ("namespace/name") to the Service dst ("name.namespace"), on port when it is not 0.
func call(src, dst string, port int, proto string, n int) string {
	name, ns, _ := strings.Cut(dst, ".")
	metric := "istio_requests_total"
	if proto == "tcp" {
		metric = "istio_tcp_connections_opened_total"
	}
	p := ""
	if port > 0 {
		p = fmt.Sprintf(`,"destination_port":"%d"`, port)
	}
	srcNs, srcName, _ := strings.Cut(src, "/")
	return fmt.Sprintf(`{"metric":{"meshscope_metric":%q,"meshscope_window":"7d","reporter":"source","source_workload":%q,"source_workload_namespace":%q,"destination_service":"%s.%s.svc.cluster.local","destination_service_name":%q,"destination_service_namespace":%q,"request_protocol":%q%s},"value":[1733300000,"%d"]}`,
		metric, srcName, srcNs, name, ns, name, ns, proto, p, n)
}

// passthrough is n requests from src through PassthroughCluster to host.
func passthrough(src, host string, n int) string {
	srcNs, srcName, _ := strings.Cut(src, "/")
	return fmt.Sprintf(`{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":%q,"source_workload_namespace":%q,"destination_service":%q,"destination_service_name":"PassthroughCluster","request_protocol":"http"},"value":[1733300000,"%d"]}`,
		srcName, srcNs, host, n)
}

// evidence resolves the series against the inventory, as the command does with a snapshot.
func evidence(t *testing.T, inv *mesh.Inventory, series ...string) *traffic.Evidence {
	t.Helper()
	snap, err := traffic.ParseSnapshot("observed.json", []byte(`{"status":"success","data":{"resultType":"vector","result":[`+strings.Join(series, ",\n")+`]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return traffic.Resolve(snap, inv, mesh.DefaultDomainSuffix)
}

// suggest plans every namespace of the inventory made of docs, with the calls of series.
func suggest(t *testing.T, opts Options, docs []string, series ...string) (*mesh.Inventory, *Plan) {
	t.Helper()
	inv := inventory(t, docs...)
	plan, err := Suggest(inv, evidence(t, inv, series...), opts)
	if err != nil {
		t.Fatal(err)
	}
	return inv, plan
}

// selector is "k=v,k=v", sorted.
func selector(sel map[string]string) string {
	var out []string
	for _, k := range sortedKeysOf(sel) {
		out = append(out, k+"="+sel[k])
	}
	return strings.Join(out, ",")
}

// deps is "service[ports] service[ports]".
func deps(s Scope) string {
	var out []string
	for _, d := range s.Dependencies {
		out = append(out, fmt.Sprintf("%s%v", d.Service, d.Ports))
	}
	return strings.Join(out, " ")
}

// warnings are "Kind resource workloads dependency", one per warning.
func warnings(p *Plan) []string {
	var out []string
	for _, w := range p.Warnings {
		line := []string{kindName[w.Kind]}
		if w.Resource != "" {
			line = append(line, w.Resource)
		}
		line = append(line, w.Workloads...)
		if w.Dependency != "" {
			line = append(line, w.Dependency)
		}
		out = append(out, strings.Join(line, " "))
	}
	return out
}

var kindName = map[WarningKind]string{Unlabelled: "Unlabelled", Inseparable: "Inseparable", NotSuggested: "NotSuggested",
	CompilerWarning: "CompilerWarning", AdoptedConflict: "AdoptedConflict", LeftOut: "LeftOut"}

// byResource finds a planned scope.
func byResource(t *testing.T, p *Plan, resource string) Scope {
	t.Helper()
	i := slices.IndexFunc(p.Scopes, func(s Scope) bool { return s.Resource == resource })
	if i < 0 {
		var got []string
		for _, s := range p.Scopes {
			got = append(got, s.Resource)
		}
		t.Fatalf("no scope %s; the plan has %v", resource, got)
	}
	return p.Scopes[i]
}

func containsLine(lines []string, part string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, part) })
}
