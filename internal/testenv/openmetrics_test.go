package testenv

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// omAt is a fixed evaluation time for the generator's unit tests: 2026-01-02T03:04:00Z.
var omAt = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func TestWriteOpenMetrics_Golden(t *testing.T) {
	calls := []IstioCall{
		{
			Reporter: "source", SourceWorkload: "productpage-v1", SourceNamespace: "bookinfo",
			DestinationService: "reviews.bookinfo.svc.cluster.local", DestinationServiceName: "reviews",
			DestinationServiceNamespace: "bookinfo", Protocol: "http", Count: 5,
		},
		{
			Reporter: "destination", SourceWorkload: "ratings-v1", SourceNamespace: "bookinfo",
			DestinationService: "unknown", DestinationServiceName: "PassthroughCluster",
			Protocol: "tcp", Port: 27017, Count: 2,
		},
	}
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, calls, OpenMetricsOptions{At: omAt, Span: 2 * time.Minute, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// omAt is 1767323040 in Unix seconds; 5*k/2 rounds down.
	const http = `{reporter="source",source_workload="productpage-v1",source_workload_namespace="bookinfo",` +
		`source_app="productpage-v1",source_canonical_service="productpage-v1",source_canonical_revision="latest",` +
		`source_cluster="Kubernetes",destination_workload="reviews",destination_workload_namespace="bookinfo",` +
		`destination_app="reviews",destination_canonical_service="reviews",destination_canonical_revision="latest",` +
		`destination_service="reviews.bookinfo.svc.cluster.local",destination_service_name="reviews",` +
		`destination_service_namespace="bookinfo",destination_cluster="Kubernetes",request_protocol="http",` +
		`response_code="200",response_flags="-",connection_security_policy="unknown"}`
	const tcp = `{reporter="destination",source_workload="ratings-v1",source_workload_namespace="bookinfo",` +
		`source_app="ratings-v1",source_canonical_service="ratings-v1",source_canonical_revision="latest",` +
		`source_cluster="Kubernetes",destination_workload="unknown",destination_workload_namespace="unknown",` +
		`destination_app="unknown",destination_canonical_service="unknown",destination_canonical_revision="unknown",` +
		`destination_service="unknown",destination_service_name="PassthroughCluster",` +
		`destination_service_namespace="unknown",destination_cluster="Kubernetes",destination_port="27017",` +
		`request_protocol="tcp",response_flags="-",connection_security_policy="mutual_tls"}`
	want := "# TYPE istio_requests_total counter\n" +
		"istio_requests_total" + http + " 0 1767322920\n" +
		"istio_requests_total" + http + " 2 1767322980\n" +
		"istio_requests_total" + http + " 5 1767323040\n" +
		"# TYPE istio_tcp_connections_opened_total counter\n" +
		"istio_tcp_connections_opened_total" + tcp + " 0 1767322920\n" +
		"istio_tcp_connections_opened_total" + tcp + " 1 1767322980\n" +
		"istio_tcp_connections_opened_total" + tcp + " 2 1767323040\n" +
		"# EOF\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// sample is one parsed sample line.
type sample struct {
	series string // name{labels}
	value  int64
	ts     int64
}

// parseOpenMetrics splits the generator's output into # TYPE lines and samples, and checks that
// it ends with # EOF and nothing after it.
func parseOpenMetrics(t *testing.T, text string) (types []string, samples []sample) {
	t.Helper()
	lines := strings.Split(text, "\n")
	if len(lines) < 2 || lines[len(lines)-2] != "# EOF" || lines[len(lines)-1] != "" {
		t.Fatalf("output does not end with \"# EOF\\n\": ...%q", text[max(0, len(text)-80):])
	}
	for _, line := range lines[:len(lines)-2] {
		if typ, ok := strings.CutPrefix(line, "# TYPE "); ok {
			types = append(types, typ)
			continue
		}
		fields := strings.Fields(line[strings.LastIndex(line, "}")+1:])
		if len(fields) != 2 {
			t.Fatalf("sample line %q: want name{labels} value timestamp", line)
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("value of %q: %v", line, err)
		}
		ts, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			t.Fatalf("timestamp of %q: %v", line, err)
		}
		samples = append(samples, sample{series: line[:strings.LastIndex(line, "}")+1], value: v, ts: ts})
	}
	return types, samples
}

func TestWriteOpenMetrics_DefaultsSecondsAndCounters(t *testing.T) {
	calls := []IstioCall{
		{Reporter: "source", SourceWorkload: "a", SourceNamespace: "ns", DestinationService: "b.ns.svc.cluster.local", Protocol: "grpc", Count: 1000},
		{Reporter: "source", SourceWorkload: "a", SourceNamespace: "ns", DestinationService: "c.ns.svc.cluster.local", Protocol: "tcp", Count: 7},
	}
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, calls, OpenMetricsOptions{At: omAt}); err != nil {
		t.Fatal(err)
	}
	types, samples := parseOpenMetrics(t, buf.String())
	if want := []string{"istio_requests_total counter", "istio_tcp_connections_opened_total counter"}; !slices.Equal(types, want) {
		t.Errorf("# TYPE lines %q, want %q", types, want)
	}
	perSeries := DefaultSpan/DefaultStep + 1
	if len(samples) != 2*int(perSeries) {
		t.Fatalf("%d samples, want %d per series", len(samples), perSeries)
	}
	first, last := omAt.Add(-DefaultSpan).Unix(), omAt.Unix()
	for i, s := range samples {
		series := samples[i-i%int(perSeries)]
		k := int64(i % int(perSeries))
		if s.series != series.series {
			t.Fatalf("sample %d of %s is of %s: a series' samples are not together", i, series.series, s.series)
		}
		if want := first + k*int64(DefaultStep/time.Second); s.ts != want {
			t.Errorf("sample %d at %d, want %d (seconds, one step apart, from At-Span to At)", i, s.ts, want)
		}
		if k > 0 && s.value < samples[i-1].value {
			t.Errorf("sample %d: counter falls from %d to %d", i, samples[i-1].value, s.value)
		}
	}
	for _, end := range []struct {
		s     sample
		count int64
	}{{samples[perSeries-1], 1000}, {samples[2*perSeries-1], 7}} {
		if end.s.ts != last || end.s.value != end.count {
			t.Errorf("last sample %d at %d, want Count %d at At %d", end.s.value, end.s.ts, end.count, last)
		}
	}
	if s := samples[0].series; !strings.Contains(s, `request_protocol="grpc",response_code="200",response_flags="-"`) ||
		!strings.Contains(s, `destination_service_name="unknown",destination_service_namespace="unknown"`) {
		t.Errorf("grpc series %s lacks the defaults (200, -, unknown)", s)
	}
	if s := samples[perSeries].series; strings.Contains(s, "response_code") || strings.Contains(s, "destination_port") {
		t.Errorf("tcp series %s has a response_code or destination_port label", s)
	}
}

func TestWriteOpenMetrics_MergesDuplicates(t *testing.T) {
	call := IstioCall{
		Reporter: "source", SourceWorkload: "a", SourceNamespace: "ns", DestinationService: "b.ns.svc.cluster.local",
		DestinationServiceName: "b", DestinationServiceNamespace: "ns", Protocol: "http", Port: 8080, Count: 3,
	}
	twice := call
	twice.Count = 4
	explicit := call // the defaults spelled out: the same series
	explicit.ResponseCode, explicit.ResponseFlags, explicit.Count = "200", "-", 10
	failed := call // another response code: another series
	failed.ResponseCode, failed.Count = "503", 1
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, []IstioCall{call, failed, twice, explicit}, OpenMetricsOptions{At: omAt, Span: time.Minute, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, samples := parseOpenMetrics(t, buf.String())
	got := map[string]int64{}
	for _, s := range samples {
		if s.ts == omAt.Unix() {
			code := s.series[strings.Index(s.series, "response_code=")+len(`response_code="`):]
			got[code[:3]] += s.value
		}
	}
	if want := map[string]int64{"200": 17, "503": 1}; fmt.Sprint(got) != fmt.Sprint(want) || len(samples) != 4 {
		t.Errorf("last values by response code %v in %d samples, want %v in 4 (two series of two samples)", got, len(samples), want)
	}
}

func TestWriteOpenMetrics_Escapes(t *testing.T) {
	call := IstioCall{Reporter: "source", SourceWorkload: "a", SourceNamespace: "ns",
		DestinationService: "we\"ird\\host\n", Protocol: "http", Count: 1}
	var buf bytes.Buffer
	if err := WriteOpenMetrics(&buf, []IstioCall{call}, OpenMetricsOptions{At: omAt, Span: time.Minute, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if want := `destination_service="we\"ird\\host\n"`; !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %s:\n%s", want, buf.String())
	}
}

func TestWriteOpenMetrics_Errors(t *testing.T) {
	ok := IstioCall{Reporter: "source", SourceWorkload: "a", SourceNamespace: "ns", DestinationService: "b", Protocol: "http", Count: 1}
	with := func(f func(*IstioCall)) []IstioCall {
		c := ok
		f(&c)
		return []IstioCall{ok, c}
	}
	for _, tc := range []struct {
		name  string
		calls []IstioCall
		opts  OpenMetricsOptions
		want  string
	}{
		{"no At", []IstioCall{ok}, OpenMetricsOptions{}, "At is required"},
		{"At not a second", []IstioCall{ok}, OpenMetricsOptions{At: omAt.Add(time.Millisecond)}, "not a whole second"},
		{"Step below a second", []IstioCall{ok}, OpenMetricsOptions{At: omAt, Step: time.Millisecond}, "Step 1ms"},
		{"Span not a multiple", []IstioCall{ok}, OpenMetricsOptions{At: omAt, Span: 90 * time.Second}, "Span 1m30s"},
		{"reporter", with(func(c *IstioCall) { c.Reporter = "client" }), OpenMetricsOptions{At: omAt}, `call 1: reporter "client"`},
		{"protocol", with(func(c *IstioCall) { c.Protocol = "HTTP" }), OpenMetricsOptions{At: omAt}, `protocol "HTTP"`},
		{"tcp response code", with(func(c *IstioCall) { c.Protocol, c.ResponseCode = "tcp", "200" }), OpenMetricsOptions{At: omAt}, "no response_code"},
		{"negative count", with(func(c *IstioCall) { c.Count = -1 }), OpenMetricsOptions{At: omAt}, "count -1"},
		{"port", with(func(c *IstioCall) { c.Port = 70000 }), OpenMetricsOptions{At: omAt}, "port 70000"},
		{"no source", with(func(c *IstioCall) { c.SourceNamespace = "" }), OpenMetricsOptions{At: omAt}, "SourceNamespace are required"},
		{"no destination", with(func(c *IstioCall) { c.DestinationService = "" }), OpenMetricsOptions{At: omAt}, "DestinationService is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, write := range map[string]func(io.Writer) error{
				"WriteOpenMetrics": func(w io.Writer) error { return WriteOpenMetrics(w, tc.calls, tc.opts) },
				"WriteOpenMetricsFunc": func(w io.Writer) error {
					return WriteOpenMetricsFunc(w, len(tc.calls), func(i int) IstioCall { return tc.calls[i] }, tc.opts)
				},
			} {
				err := write(io.Discard)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
				}
			}
		})
	}
}

// scaleCall is the i-th of a large synthetic call graph (distinct for i below 100,000), built
// without allocating: 1000 source workloads in 10 namespaces, each calling 100 services, a tenth
// of the workloads over tcp, half the services with a destination_port.
func scaleCall(i int) IstioCall {
	svc := scaleNames[1000+(i/1000)%100]
	c := IstioCall{
		Reporter: "source", SourceWorkload: scaleNames[i%1000], SourceNamespace: scaleNames[i%10],
		DestinationService: svc, DestinationServiceName: svc, DestinationServiceNamespace: scaleNames[i%10],
		Protocol: "http", Count: i % 97,
	}
	if i%10 == 9 {
		c.Protocol = "tcp"
	}
	if (i/1000)%2 == 0 {
		c.Port = 9080
	}
	return c
}

var scaleNames = func() []string {
	names := make([]string, 1100)
	for i := range names {
		names[i] = fmt.Sprintf("name-%d", i)
	}
	return names
}()

func TestWriteOpenMetricsFunc_SameAsWriteOpenMetrics(t *testing.T) {
	const n = 2500
	calls := make([]IstioCall, n)
	for i := range calls {
		calls[i] = scaleCall(i)
	}
	opts := OpenMetricsOptions{At: omAt, Span: 2 * time.Minute, Step: time.Minute}
	var whole, streamed bytes.Buffer
	if err := WriteOpenMetrics(&whole, calls, opts); err != nil {
		t.Fatal(err)
	}
	if err := WriteOpenMetricsFunc(&streamed, n, scaleCall, opts); err != nil {
		t.Fatal(err)
	}
	// The same lines; only the order of the series within a family may differ.
	wl, sl := strings.Split(whole.String(), "\n"), strings.Split(streamed.String(), "\n")
	if len(wl) != 3*n+2+2 {
		t.Errorf("%d lines, want 3 per series, 2 # TYPE, # EOF and the final newline", len(wl))
	}
	if sl[len(sl)-2] != "# EOF" || sl[0] != "# TYPE istio_requests_total counter" {
		t.Errorf("streamed output starts with %q and ends with %q", sl[0], sl[len(sl)-2])
	}
	slices.Sort(wl)
	slices.Sort(sl)
	if !slices.Equal(wl, sl) {
		t.Error("WriteOpenMetricsFunc and WriteOpenMetrics wrote different lines for the same distinct calls")
	}
}

func TestWriteOpenMetricsFunc_RefusesDuplicates(t *testing.T) {
	call := func(i int) IstioCall { return scaleCall(i % 1500) } // call 1500 repeats call 0
	err := WriteOpenMetricsFunc(io.Discard, 2000, call, OpenMetricsOptions{At: omAt})
	if err == nil || !strings.Contains(err.Error(), "calls 0 and 1500 have the same labels") {
		t.Errorf("error %v, want calls 0 and 1500 refused as duplicates", err)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// TestWriteOpenMetricsFunc_Streams100k writes 100,000 series and checks that the generator
// allocates a small fraction of what it writes: it streams, and does not build the text.
func TestWriteOpenMetricsFunc_Streams100k(t *testing.T) {
	if testing.Short() {
		t.Skip("writes some 150 MB of text")
	}
	var w countingWriter
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := WriteOpenMetricsFunc(&w, 100_000, scaleCall, OpenMetricsOptions{At: omAt, Span: time.Minute, Step: time.Minute}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("wrote %d MB, allocated %d MB", w.n>>20, allocated>>20)
	if w.n < 100_000*2*500 {
		t.Errorf("wrote %d bytes, want two samples of some 600 bytes for each of 100,000 series", w.n)
	}
	if allocated > w.n/10 {
		t.Errorf("allocated %d bytes to write %d: the output is being held, not streamed", allocated, w.n)
	}
}

// BenchmarkWriteOpenMetricsFunc100k writes 100,000 series of 31 samples (the default span and
// step) to io.Discard.
func BenchmarkWriteOpenMetricsFunc100k(b *testing.B) {
	b.ReportAllocs()
	var w countingWriter
	for b.Loop() {
		if err := WriteOpenMetricsFunc(&w, 100_000, scaleCall, OpenMetricsOptions{At: omAt}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(w.n / int64(b.N))
}
