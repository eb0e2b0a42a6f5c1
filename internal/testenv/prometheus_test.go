package testenv

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// The live tests below need the prometheus and promtool binaries (`make prometheus`), not the
// control plane of `make testenv`: StartPrometheus skips them without the binaries, and fails
// them when TF_ACC is set.

// bookinfoCalls is a small call graph with every kind of series the traffic reader meets.
func bookinfoCalls() []IstioCall {
	reviews := IstioCall{
		Reporter: "source", SourceWorkload: "productpage-v1", SourceNamespace: "bookinfo",
		DestinationService: "reviews.bookinfo.svc.cluster.local", DestinationServiceName: "reviews",
		DestinationServiceNamespace: "bookinfo", Protocol: "http", Count: 100,
	}
	reviewsAgain, reviewsFailed, reviewsServer := reviews, reviews, reviews
	reviewsAgain.Count = 20                                    // the same series: merged into 120
	reviewsFailed.ResponseCode, reviewsFailed.Count = "503", 5 // another series, the same sum by group
	reviewsServer.Reporter, reviewsServer.Count = "destination", 118
	return []IstioCall{
		reviews, reviewsAgain, reviewsFailed, reviewsServer,
		{ // with the destination_port of a Telemetry tagOverride
			Reporter: "source", SourceWorkload: "productpage-v1", SourceNamespace: "bookinfo",
			DestinationService: "details.bookinfo.svc.cluster.local", DestinationServiceName: "details",
			DestinationServiceNamespace: "bookinfo", Protocol: "http", Port: 9080, Count: 30,
		},
		{
			Reporter: "source", SourceWorkload: "reviews-v2", SourceNamespace: "bookinfo",
			DestinationService: "ratings.bookinfo.svc.cluster.local", DestinationServiceName: "ratings",
			DestinationServiceNamespace: "bookinfo", Protocol: "grpc", Count: 40,
		},
		{ // HTTP passthrough: the Host header
			Reporter: "source", SourceWorkload: "productpage-v1", SourceNamespace: "bookinfo",
			DestinationService: "api.example.com", DestinationServiceName: "PassthroughCluster",
			Protocol: "http", Count: 7,
		},
		{ // a ServiceEntry host
			Reporter: "source", SourceWorkload: "reviews-v2", SourceNamespace: "bookinfo",
			DestinationService: "httpbin.org", DestinationServiceName: "httpbin.org",
			DestinationServiceNamespace: "bookinfo", Protocol: "http", Count: 9,
		},
		{
			Reporter: "source", SourceWorkload: "ratings-v1", SourceNamespace: "bookinfo",
			DestinationService: "mongodb.db.svc.cluster.local", DestinationServiceName: "mongodb",
			DestinationServiceNamespace: "db", Protocol: "tcp", Port: 27017, Count: 8,
		},
		{ // TCP passthrough
			Reporter: "source", SourceWorkload: "ratings-v1", SourceNamespace: "bookinfo",
			DestinationService: "unknown", DestinationServiceName: "PassthroughCluster",
			Protocol: "tcp", Count: 3,
		},
	}
}

const (
	edgesBy       = `reporter, source_workload, source_workload_namespace, destination_service, destination_service_name, destination_port`
	requestEdges  = `sum by (` + edgesBy + `) (increase(istio_requests_total[%s]))`
	tcpEdgesQuery = `sum by (` + edgesBy + `) (increase(istio_tcp_connections_opened_total[7d]))`
)

// edge is the label set of one sum by (edgesBy) group, as model.Metric prints it.
func edge(reporter, workload, service, serviceName, port string) string {
	m := model.Metric{
		"reporter": model.LabelValue(reporter), "source_workload": model.LabelValue(workload),
		"source_workload_namespace": "bookinfo", "destination_service": model.LabelValue(service),
		"destination_service_name": model.LabelValue(serviceName),
	}
	if port != "" {
		m["destination_port"] = model.LabelValue(port)
	}
	return m.String()
}

func TestStartPrometheus_IstioSeries(t *testing.T) {
	at := EvaluationTime(time.Now())
	var om bytes.Buffer
	if err := WriteOpenMetrics(&om, bookinfoCalls(), OpenMetricsOptions{At: at}); err != nil {
		t.Fatal(err)
	}
	p := StartPrometheus(t, &om, PrometheusOptions{})
	api := p.API(t)

	wantRequests := map[string]float64{
		edge("source", "productpage-v1", "reviews.bookinfo.svc.cluster.local", "reviews", ""):      125,
		edge("destination", "productpage-v1", "reviews.bookinfo.svc.cluster.local", "reviews", ""): 118,
		edge("source", "productpage-v1", "details.bookinfo.svc.cluster.local", "details", "9080"):  30,
		edge("source", "reviews-v2", "ratings.bookinfo.svc.cluster.local", "ratings", ""):          40,
		edge("source", "productpage-v1", "api.example.com", "PassthroughCluster", ""):              7,
		edge("source", "reviews-v2", "httpbin.org", "httpbin.org", ""):                             9,
	}
	// At At, exactly Count, whatever the range from Span up.
	for _, r := range []string{"30m", "1h", "24h", "7d"} {
		if got := queryVector(t, api, fmt.Sprintf(requestEdges, r), at); !maps.Equal(got, wantRequests) {
			t.Errorf("[%s] at At: %s", r, diffVectors(got, wantRequests))
		}
	}
	wantTCP := map[string]float64{
		edge("source", "ratings-v1", "mongodb.db.svc.cluster.local", "mongodb", "27017"): 8,
		edge("source", "ratings-v1", "unknown", "PassthroughCluster", ""):                3,
	}
	if got := queryVector(t, api, tcpEdgesQuery, at); !maps.Equal(got, wantTCP) {
		t.Errorf("tcp at At: %s", diffVectors(got, wantTCP))
	}
	if got := queryVector(t, api, `count(istio_tcp_connections_opened_total{response_code!=""})`, at); len(got) != 0 {
		t.Errorf("tcp series with a response_code: %v", got)
	}

	// Every label of a passthrough series, as Istio's source proxy sets them.
	wantPassthrough := model.Metric{
		"__name__": "istio_requests_total", "reporter": "source", "source_workload": "productpage-v1",
		"source_workload_namespace": "bookinfo", "source_app": "productpage-v1",
		"source_canonical_service": "productpage-v1", "source_canonical_revision": "latest",
		"source_cluster": "Kubernetes", "destination_workload": "unknown", "destination_workload_namespace": "unknown",
		"destination_app": "unknown", "destination_canonical_service": "unknown",
		"destination_canonical_revision": "unknown", "destination_service": "api.example.com",
		"destination_service_name": "PassthroughCluster", "destination_service_namespace": "unknown",
		"destination_cluster": "Kubernetes", "request_protocol": "http", "response_code": "200",
		"response_flags": "-", "connection_security_policy": "unknown",
	}
	got := queryVector(t, api, `istio_requests_total{destination_service_name="PassthroughCluster"}`, at)
	if want := map[string]float64{wantPassthrough.String(): 7}; !maps.Equal(got, want) {
		t.Errorf("passthrough series at At: %s", diffVectors(got, want))
	}

	// At the wall clock, an hour or more after At: the end is extrapolated by half a step, and
	// a range that does not reach back to the samples sees nothing.
	now := time.Now()
	factor := 1 + float64(DefaultStep)/(2*float64(DefaultSpan))
	got = queryVector(t, api, fmt.Sprintf(requestEdges, "7d"), now)
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantRequests))) {
		t.Errorf("[7d] at now: %s", diffVectors(got, wantRequests))
	}
	for k, want := range wantRequests {
		if v := got[k]; math.Abs(v-want*factor) > 1e-9*want {
			t.Errorf("[7d] at now: %s = %v, want %v × %v = %v", k, v, want, factor, want*factor)
		}
	}
	if got := queryVector(t, api, fmt.Sprintf(requestEdges, "1h"), now); len(got) != 0 {
		t.Errorf("[1h] at now sees samples at least an hour old: %v", got)
	}
}

// queryVector runs an instant query at `at` and returns its result by label set.
func queryVector(t *testing.T, api promv1.API, query string, at time.Time) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, warnings, _, err := api.Query(ctx, query, at)
	if err != nil {
		t.Fatalf("%s at %s: %v", query, at.Format(time.RFC3339), err)
	}
	if len(warnings) > 0 {
		t.Errorf("%s: warnings %v", query, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("%s: a %s, want a vector", query, v.Type())
	}
	got := map[string]float64{}
	for _, s := range vec {
		got[s.Metric.String()] = float64(s.Value)
	}
	return got
}

func diffVectors(got, want map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := got[k]; !ok {
			fmt.Fprintf(&b, "\n  missing %s = %v", k, want[k])
		} else if v != want[k] {
			fmt.Fprintf(&b, "\n  %s = %v, want %v", k, v, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "\n  unexpected %s = %v", k, got[k])
		}
	}
	return b.String()
}

// emptyOpenMetrics is OpenMetrics text without a sample.
func emptyOpenMetrics(t *testing.T) *bytes.Buffer {
	t.Helper()
	var om bytes.Buffer
	if err := WriteOpenMetrics(&om, nil, OpenMetricsOptions{At: EvaluationTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
	return &om
}

// queryOne checks that the server answers vector(1) through p.API.
func queryOne(t *testing.T, p *Prometheus) {
	t.Helper()
	want := map[string]float64{"{}": 1}
	if got := queryVector(t, p.API(t), "vector(1)", time.Now()); !maps.Equal(got, want) {
		t.Errorf("vector(1): %s", diffVectors(got, want))
	}
}

func TestStartPrometheus_TLS(t *testing.T) {
	p := StartPrometheus(t, emptyOpenMetrics(t), PrometheusOptions{TLS: true})
	if !strings.HasPrefix(p.URL, "https://127.0.0.1:") {
		t.Errorf("URL %s, want https://127.0.0.1:<port>", p.URL)
	}
	block, _ := pem.Decode([]byte(p.CACertPEM))
	if block == nil {
		t.Fatalf("CACertPEM is not PEM: %q", p.CACertPEM)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !ca.IsCA {
		t.Fatalf("CACertPEM is not a CA certificate (%v)", err)
	}
	queryOne(t, p) // trusting CACertPEM

	resp, err := http.Get(p.URL + "/-/ready")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client that does not trust CACertPEM got %s", resp.Status)
	}
	var unknownCA x509.UnknownAuthorityError
	if !errors.As(err, &unknownCA) {
		t.Errorf("a client that does not trust CACertPEM: %v, want an x509 unknown authority error", err)
	}
}

func TestStartPrometheus_BasicAuth(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("TLS=%v", tls), func(t *testing.T) {
			auth := &BasicAuth{Username: "meshscope", Password: "s3cret:with$symbols"}
			p := StartPrometheus(t, emptyOpenMetrics(t), PrometheusOptions{TLS: tls, BasicAuth: auth})
			if p.BasicAuth == nil || *p.BasicAuth != *auth {
				t.Errorf("Prometheus.BasicAuth %v, want %v", p.BasicAuth, auth)
			}
			queryOne(t, p) // with the credentials

			noAuth := (&Prometheus{CACertPEM: p.CACertPEM}).HTTPClient()
			for name, authorize := range map[string]func(*http.Request){
				"no credentials": func(*http.Request) {},
				"a bearer token": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+auth.Password) },
				"a wrong password": func(r *http.Request) {
					r.SetBasicAuth(auth.Username, auth.Password+"x")
				},
			} {
				req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
					p.URL+"/api/v1/query?query=vector(1)", nil)
				if err != nil {
					t.Fatal(err)
				}
				authorize(req)
				resp, err := noAuth.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: %s, want 401 Unauthorized", name, resp.Status)
				}
			}
		})
	}
}

// recordingTB stands in for a test inside a test: it records a skip or a failure and stops the
// goroutine, as the testing package does; everything else goes to the real test.
type recordingTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recordingTB) Helper()                      {}
func (r *recordingTB) Skip(args ...any)             { r.stop(true, fmt.Sprint(args...)) }
func (r *recordingTB) Skipf(f string, args ...any)  { r.stop(true, fmt.Sprintf(f, args...)) }
func (r *recordingTB) SkipNow()                     { r.stop(true, "") }
func (r *recordingTB) Fatal(args ...any)            { r.stop(false, fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(f string, args ...any) { r.stop(false, fmt.Sprintf(f, args...)) }
func (r *recordingTB) FailNow()                     { r.stop(false, "") }

func (r *recordingTB) stop(skip bool, msg string) {
	r.skipped, r.failed, r.msg = skip, !skip, msg
	runtime.Goexit()
}

// run calls f with r in a goroutine of its own and waits for it to return or stop.
func (r *recordingTB) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

func TestStartPrometheus_MissingBinaries(t *testing.T) {
	om := emptyOpenMetrics(t)
	t.Setenv("PATH", t.TempDir())
	for _, tfAcc := range []string{"", "1"} {
		t.Setenv("TF_ACC", tfAcc)
		r := &recordingTB{TB: t}
		r.run(func(tb testing.TB) { StartPrometheus(tb, om, PrometheusOptions{}) })
		wantSkip := tfAcc == ""
		if r.skipped != wantSkip || r.failed == wantSkip {
			t.Errorf("TF_ACC=%q: skipped %v, failed %v; want skipped %v", tfAcc, r.skipped, r.failed, wantSkip)
		}
		if !strings.Contains(r.msg, "prometheus and promtool are not on PATH: run `make prometheus`") {
			t.Errorf("TF_ACC=%q: message %q does not say to run `make prometheus`", tfAcc, r.msg)
		}
	}
}

func TestStartPrometheus_RefusesRecentSamples(t *testing.T) {
	lookPrometheus(t) // skips (or fails with TF_ACC) without the binaries
	var om bytes.Buffer
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	if err := WriteOpenMetrics(&om, bookinfoCalls(), OpenMetricsOptions{At: at}); err != nil {
		t.Fatal(err)
	}
	r := &recordingTB{TB: t}
	r.run(func(tb testing.TB) { StartPrometheus(tb, &om, PrometheusOptions{}) })
	if !r.failed || !strings.Contains(r.msg, "less than 1h0m0s before the start of Prometheus") {
		t.Errorf("samples 10 minutes old: failed %v with %q, want a failure naming MinSampleAge", r.failed, r.msg)
	}
}

func TestPrometheus_FreeAddrRefusesConnections(t *testing.T) {
	addr := FreeAddr(t)
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		t.Fatalf("FreeAddr %q, want 127.0.0.1:<port>", addr)
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("something listens on %s", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialing %s: %v, want connection refused", addr, err)
	}
}

// BenchmarkPrometheusQuery100k starts a Prometheus holding 100,000 series (streamed from the
// generator into promtool, two samples each) and times the traffic reader's kind of query on it.
func BenchmarkPrometheusQuery100k(b *testing.B) {
	const n = 100_000
	at := EvaluationTime(time.Now())
	pr, pw := io.Pipe()
	defer pr.Close() // unblocks the writer if StartPrometheus stops before reading it all
	go func() {
		pw.CloseWithError(WriteOpenMetricsFunc(pw, n, scaleCall, OpenMetricsOptions{At: at, Span: time.Minute, Step: time.Minute}))
	}()
	p := StartPrometheus(b, pr, PrometheusOptions{Timeout: 10 * time.Minute})
	api := p.API(b)
	query := fmt.Sprintf(requestEdges, "7d")
	var series int
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		v, _, _, err := api.Query(ctx, query, at)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		vec, ok := v.(model.Vector)
		if !ok {
			b.Fatalf("a %s, want a vector", v.Type())
		}
		series = len(vec)
	}
	if want := n * 9 / 10; series != want { // a tenth of scaleCall's calls are tcp
		b.Errorf("%d request edges, want %d", series, want)
	}
}
