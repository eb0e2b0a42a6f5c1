// Package traffic reads the calls a mesh really makes, from Istio's standard metrics in
// Prometheus (or from a saved answer of Prometheus to the same query), and maps them onto the
// inventory: which workload called which host, on which port when the metrics say, how often,
// and whether the call went through a real cluster, PassthroughCluster or BlackHoleCluster.
// It imports nothing from Terraform.
//
// One evaluation is one instant query (Query): the increase of istio_requests_total (HTTP and
// gRPC) and of istio_tcp_connections_opened_total (TCP) over the window, summed by the labels
// that name a call. It is never one query per workload.
package traffic

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
)

// Istio's standard metrics that count calls.
const (
	RequestsMetric       = "istio_requests_total"
	TCPConnectionsMetric = "istio_tcp_connections_opened_total"
)

// Labels of Istio's standard metrics that name a call. destination_port is not a default label:
// a mesh adds it with a Telemetry tagOverride, and then the port of each call is known.
const (
	LabelReporter             = "reporter"
	LabelSourceWorkload       = "source_workload"
	LabelSourceNamespace      = "source_workload_namespace"
	LabelDestinationService   = "destination_service"
	LabelDestinationName      = "destination_service_name"
	LabelDestinationNamespace = "destination_service_namespace"
	LabelRequestProtocol      = "request_protocol"
	LabelDestinationPort      = "destination_port"

	// labelMetric and labelWindow are added by the query itself, so that a saved answer
	// says which metric each series counts and over which window.
	labelMetric = "meshscope_metric"
	labelWindow = "meshscope_window"
)

// Cluster names Istio puts in destination_service_name for calls that had no service cluster.
const (
	PassthroughCluster = "PassthroughCluster"
	BlackHoleCluster   = "BlackHoleCluster"
)

// DefaultWindow is how far back the evidence looks.
const DefaultWindow = "7d"

var callLabels = []string{
	LabelReporter, LabelSourceWorkload, LabelSourceNamespace, LabelDestinationService,
	LabelDestinationName, LabelDestinationNamespace, LabelRequestProtocol, LabelDestinationPort,
}

// ParseWindow checks a window as Prometheus reads a range ("7d", "36h", "1w").
func ParseWindow(window string) (model.Duration, error) {
	d, err := model.ParseDuration(window)
	if err != nil {
		return 0, fmt.Errorf("window %q is not a Prometheus duration such as \"7d\" or \"36h\": %w", window, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("window %q must be longer than zero", window)
	}
	return d, nil
}

// Query is the one PromQL instant query an evaluation issues, over window (which must have
// passed ParseWindow). Series whose count did not grow in the window are left out.
func Query(window string) string {
	by := strings.Join(callLabels, ", ")
	part := func(metric string) string {
		return fmt.Sprintf(`label_replace(sum by (%s) (increase(%s[%s])) > 0, %q, %q, "", "")`,
			by, metric, window, labelMetric, metric)
	}
	return fmt.Sprintf(`label_replace(%s or %s, %q, %q, "", "")`,
		part(RequestsMetric), part(TCPConnectionsMetric), labelWindow, window)
}

// Series is one series of the query's answer: the calls of one kind, from one workload to
// one destination, as one reporter counted them over the window.
type Series struct {
	Metric                      string
	Reporter                    string
	SourceWorkload              string
	SourceNamespace             string
	DestinationService          string
	DestinationServiceName      string
	DestinationServiceNamespace string
	Protocol                    string
	// Port is destination_port, 0 when the mesh does not record it.
	Port  int
	Count float64
}

// Snapshot is the answer of Prometheus to Query: from a live server (Fetch) or from a file
// (ReadSnapshot).
type Snapshot struct {
	// Source names where the answer came from: the server's URL or the file's path.
	Source string
	// Window is the window the counts cover.
	Window string
	Series []Series
	// Coverage is how much of the window a live server holds; zero for a file.
	Coverage Coverage
}

// seriesFromSample reads one sample of the answer. where names it in errors.
func seriesFromSample(s *model.Sample, where string) (Series, error) {
	m := s.Metric
	out := Series{
		Metric:                      string(m[labelMetric]),
		Reporter:                    string(m[LabelReporter]),
		SourceWorkload:              string(m[LabelSourceWorkload]),
		SourceNamespace:             string(m[LabelSourceNamespace]),
		DestinationService:          string(m[LabelDestinationService]),
		DestinationServiceName:      string(m[LabelDestinationName]),
		DestinationServiceNamespace: string(m[LabelDestinationNamespace]),
		Protocol:                    string(m[LabelRequestProtocol]),
		Count:                       float64(s.Value),
	}
	switch out.Metric {
	case RequestsMetric, TCPConnectionsMetric:
	case "":
		return out, fmt.Errorf("%s has no %s label: it is not an answer to meshscope's query (write it with the command `terraform-provider-meshscope query` prints)", where, labelMetric)
	default:
		return out, fmt.Errorf("%s counts %s=%q, which meshscope does not read", where, labelMetric, out.Metric)
	}
	if p := string(m[LabelDestinationPort]); p != "" {
		var port int
		if _, err := fmt.Sscanf(p, "%d", &port); err != nil || port < 1 || port > 65535 || fmt.Sprint(port) != p {
			return out, fmt.Errorf("%s has destination_port=%q, which is not a port number", where, p)
		}
		out.Port = port
	}
	if out.Count < 0 || out.Count != out.Count { // negative or NaN
		return out, fmt.Errorf("%s has the value %v, which is not a count", where, s.Value)
	}
	return out, nil
}
