// Package evidence generates Istio's standard metrics for a benchmark mesh of
// internal/bench, for the traffic-evidence benchmarks of make bench: the
// mesh's calls, and Prometheus's answer to meshscope's query over them as a
// snapshot file. It is a package of its own so that internal/bench's
// benchmarks still build against revisions older than internal/traffic (the
// baseline of make bench).
package evidence

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
)

// Call is one series of Istio's standard metrics for the benchmark mesh: one
// workload calling one port of one of its app's declared dependencies, as the
// client's proxy reports it (reporter="source"), with destination_port recorded
// (a mesh with the Telemetry tagOverride of the adopting guide).
type Call struct {
	// Workload and Namespace name the caller as Istio's source_workload does:
	// the Deployment's name.
	Workload, Namespace string
	// Service and ServiceNamespace are the called Service.
	Service, ServiceNamespace string
	Port                      uint32
	// Protocol is request_protocol: "http" on port 80, "grpc" on 9090.
	Protocol string
	// Count is the requests over the window.
	Count int
}

// Host is the called Service's FQDN in the cluster.local domain, Istio's destination_service.
func (c Call) Host() string {
	return c.Service + "." + c.ServiceNamespace + ".svc.cluster.local"
}

// Calls returns the observed calls of the mesh: every workload calls every
// declared port of every dependency of its app, so that the evidence agrees
// with the declarations. Deterministic, in app, workload, dependency and port
// order; the counts range over 10–1,009.
func Calls(m *bench.Mesh) []Call {
	var out []Call
	for i, a := range m.Apps {
		for _, w := range a.Workloads {
			for _, d := range a.Deps {
				name, ns, _ := strings.Cut(d.Service, ".")
				for _, p := range d.Ports {
					proto := "http"
					if p == 9090 {
						proto = "grpc"
					}
					out = append(out, Call{Workload: w, Namespace: a.Namespace, Service: name, ServiceNamespace: ns,
						Port: p, Protocol: proto, Count: 10 + (i*7+int(p)+len(out))%1000})
				}
			}
		}
	}
	return out
}

// Snapshot is the answer of Prometheus to meshscope's query over the
// window, evaluated at at, for Calls: the JSON of the HTTP API that
// `terraform-provider-meshscope query` writes, which the provider's
// observed_traffic_file and the command line's --observed read.
func Snapshot(m *bench.Mesh, window string, at time.Time) ([]byte, error) {
	type sample struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	calls := Calls(m)
	result := make([]sample, len(calls))
	ts := float64(at.Unix())
	for i, c := range calls {
		result[i] = sample{
			Metric: map[string]string{
				"meshscope_metric": "istio_requests_total", "meshscope_window": window,
				"reporter": "source", "source_workload": c.Workload, "source_workload_namespace": c.Namespace,
				"destination_service": c.Host(), "destination_service_name": c.Service,
				"destination_service_namespace": c.ServiceNamespace, "request_protocol": c.Protocol,
				"destination_port": fmt.Sprint(c.Port),
			},
			Value: [2]any{ts, fmt.Sprint(c.Count)},
		}
	}
	return json.Marshal(map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": "vector", "result": result},
	})
}
