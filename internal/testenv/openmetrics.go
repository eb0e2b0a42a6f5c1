package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// The Istio standard metrics the generator writes.
const (
	// IstioRequestsTotal counts HTTP and gRPC requests.
	IstioRequestsTotal = "istio_requests_total"
	// IstioTCPConnectionsOpenedTotal counts TCP connections.
	IstioTCPConnectionsOpenedTotal = "istio_tcp_connections_opened_total"
)

// Defaults of OpenMetricsOptions.
const (
	// DefaultSpan is how long before At each series starts. It is shorter than an hour, so that
	// every range from [1h] to [7d] evaluated at At holds the whole series.
	DefaultSpan = 30 * time.Minute
	// DefaultStep is the interval between two samples of a series.
	DefaultStep = time.Minute
	// MinSampleAge is how far before the start of Prometheus every sample must lie: blocks are
	// only backfilled outside the time range a live head block could be writing.
	MinSampleAge = time.Hour
)

// IstioCall is one series of Istio's standard metrics: what one proxy reported about calls from
// a source workload to a destination service, Count of them over the series' span.
type IstioCall struct {
	// Reporter is "source" (the client's proxy) or "destination" (the server's proxy).
	Reporter string
	// SourceWorkload and SourceNamespace name the calling workload; both are required ("unknown"
	// for a caller outside the mesh). source_app and source_canonical_service are the workload name.
	SourceWorkload, SourceNamespace string
	// DestinationService is what Istio puts in destination_service: a Service's FQDN, a
	// ServiceEntry host, the Host header of an HTTP passthrough call, or "unknown" (TCP
	// passthrough). Required.
	DestinationService string
	// DestinationServiceName and DestinationServiceNamespace are destination_service_name
	// ("PassthroughCluster" for passthrough) and destination_service_namespace; empty is "unknown".
	DestinationServiceName, DestinationServiceNamespace string
	// Protocol is "http", "grpc" (both istio_requests_total) or "tcp"
	// (istio_tcp_connections_opened_total).
	Protocol string
	// Port is the destination_port label, which only a mesh with a Telemetry tagOverride has;
	// 0 leaves the label out.
	Port int
	// ResponseCode is response_code, "200" when empty; tcp series have none and must leave it empty.
	ResponseCode string
	// ResponseFlags is response_flags, "-" when empty.
	ResponseFlags string
	// Count is how much the counter rises over the series' span (requests, or TCP connections).
	Count int
}

// OpenMetricsOptions places the generated samples in time.
//
// Every series is a counter that starts at 0 at At-Span and rises linearly (rounded down to
// whole numbers) to Count at At, one sample every Step. Timestamps are written in seconds.
//
// What increase() then returns, relative to Count:
//
//   - Evaluated at At, with any range from Span up (so [1h] to [7d] with the default Span),
//     increase(m[r]) is exactly Count, and a sum of increases is exactly the sum of the counts.
//     Prometheus extrapolates a range's first and last samples towards the range's ends; here
//     neither moves: the last sample lies at the evaluation time, and the first is 0, so
//     Prometheus extrapolates the start only to the counter's zero point, which is that sample.
//     Tests assert exact values at At, and the code under test evaluates at At (inject its
//     clock, or its evaluation time).
//   - Evaluated at a later time T (the wall clock once Prometheus is up), the last sample is
//     more than 1.1 Step before T, so Prometheus extrapolates the end by half a step:
//     increase(m[r]) is Count × (1 + Step/(2·Span)) (1 + 1/60 with the defaults), and only for
//     ranges r ≥ T−At+Span; a range that ends before reaching At−Span sees only part of the
//     series, and one shorter than T−At sees nothing. Tests that query at the wall clock compare
//     with what the same Prometheus answers, not with integers.
//   - A plain instant query without a range (sum(istio_requests_total)) finds nothing after
//     At plus the 5m lookback delta.
type OpenMetricsOptions struct {
	// At is the time of every series' last sample (where its value is Count), the instant at
	// which increase() returns exactly Count. Required, a whole second, and at least
	// MinSampleAge before Prometheus starts: EvaluationTime(time.Now()).
	At time.Time
	// Span is how long before At each series starts; DefaultSpan when zero. A multiple of Step.
	Span time.Duration
	// Step is the interval between samples; DefaultStep when zero. A whole number of seconds.
	Step time.Duration
}

// EvaluationTime is the At for data loaded into a Prometheus started after now: MinSampleAge
// before now, rounded down to the minute.
func EvaluationTime(now time.Time) time.Time {
	return now.Add(-MinSampleAge).Truncate(time.Minute)
}

// timeline is OpenMetricsOptions checked and in seconds.
type timeline struct {
	end, step, steps int64 // last timestamp, seconds between samples, number of steps (samples - 1)
}

func (o OpenMetricsOptions) timeline() (timeline, error) {
	span, step := o.Span, o.Step
	if span == 0 {
		span = DefaultSpan
	}
	if step == 0 {
		step = DefaultStep
	}
	switch {
	case o.At.IsZero():
		return timeline{}, errors.New("OpenMetricsOptions.At is required: use testenv.EvaluationTime(time.Now())")
	case !o.At.Equal(o.At.Truncate(time.Second)):
		return timeline{}, fmt.Errorf("OpenMetricsOptions.At %s is not a whole second: timestamps are written in seconds", o.At)
	case step < time.Second || step%time.Second != 0:
		return timeline{}, fmt.Errorf("OpenMetricsOptions.Step %s is not a positive whole number of seconds", step)
	case span < step || span%step != 0:
		return timeline{}, fmt.Errorf("OpenMetricsOptions.Span %s is not a positive multiple of Step %s", span, step)
	}
	return timeline{end: o.At.Unix(), step: int64(step / time.Second), steps: int64(span / step)}, nil
}

// series is one IstioCall with its defaults filled in, as a metric name and label text.
type series struct {
	metric string
	labels []byte // {name="value",...}
	count  int64
}

// appendSeries checks c, fills in its defaults and appends its label text to buf.
func appendSeries(buf []byte, c IstioCall) (metric string, labels []byte, err error) {
	switch c.Reporter {
	case "source", "destination":
	default:
		return "", buf, fmt.Errorf("reporter %q: want \"source\" or \"destination\"", c.Reporter)
	}
	switch {
	case c.SourceWorkload == "" || c.SourceNamespace == "":
		return "", buf, errors.New("SourceWorkload and SourceNamespace are required (\"unknown\" for a caller outside the mesh)")
	case c.DestinationService == "":
		return "", buf, errors.New("DestinationService is required (\"unknown\" for TCP passthrough)")
	case c.Count < 0:
		return "", buf, fmt.Errorf("count %d is negative", c.Count)
	case c.Port < 0 || c.Port > 65535:
		return "", buf, fmt.Errorf("port %d is not a port number", c.Port)
	}
	code := c.ResponseCode
	switch c.Protocol {
	case "http", "grpc":
		metric = IstioRequestsTotal
		if code == "" {
			code = "200"
		}
	case "tcp":
		metric = IstioTCPConnectionsOpenedTotal
		if code != "" {
			return "", buf, fmt.Errorf("response code %q on a tcp call: TCP metrics have no response_code", code)
		}
	default:
		return "", buf, fmt.Errorf("protocol %q: want \"http\", \"grpc\" or \"tcp\"", c.Protocol)
	}
	svcName, svcNamespace := orUnknown(c.DestinationServiceName), orUnknown(c.DestinationServiceNamespace)
	// The server's proxy is known only behind a Kubernetes Service: not for passthrough, a
	// ServiceEntry (whose name is its host) or an unknown destination.
	dstWorkload, dstNamespace, dstRevision := svcName, svcNamespace, "latest"
	switch svcName {
	case "unknown", "PassthroughCluster", "BlackHoleCluster", c.DestinationService:
		dstWorkload, dstNamespace, dstRevision = "unknown", "unknown", "unknown"
	}
	policy := "unknown" // what a client's proxy reports
	if c.Reporter == "destination" {
		policy = "mutual_tls"
	}
	flags := c.ResponseFlags
	if flags == "" {
		flags = "-"
	}

	buf = append(buf, '{')
	label := func(name, value string) {
		if buf[len(buf)-1] != '{' {
			buf = append(buf, ',')
		}
		buf = append(buf, name...)
		buf = append(buf, '=')
		buf = appendQuoted(buf, value)
	}
	label("reporter", c.Reporter)
	label("source_workload", c.SourceWorkload)
	label("source_workload_namespace", c.SourceNamespace)
	label("source_app", c.SourceWorkload)
	label("source_canonical_service", c.SourceWorkload)
	label("source_canonical_revision", "latest")
	label("source_cluster", "Kubernetes")
	label("destination_workload", dstWorkload)
	label("destination_workload_namespace", dstNamespace)
	label("destination_app", dstWorkload)
	label("destination_canonical_service", dstWorkload)
	label("destination_canonical_revision", dstRevision)
	label("destination_service", c.DestinationService)
	label("destination_service_name", svcName)
	label("destination_service_namespace", svcNamespace)
	label("destination_cluster", "Kubernetes")
	if c.Port > 0 {
		label("destination_port", strconv.Itoa(c.Port))
	}
	label("request_protocol", c.Protocol)
	if metric == IstioRequestsTotal {
		label("response_code", code)
	}
	label("response_flags", flags)
	label("connection_security_policy", policy)
	buf = append(buf, '}')
	return metric, buf, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// appendQuoted appends an OpenMetrics label value: quoted, with \, " and newline escaped.
func appendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			buf = append(buf, `\\`...)
		case '"':
			buf = append(buf, `\"`...)
		case '\n':
			buf = append(buf, `\n`...)
		default:
			buf = append(buf, s[i])
		}
	}
	return append(buf, '"')
}

// families is the order in which metric families are written; OpenMetrics forbids interleaving them.
var families = []string{IstioRequestsTotal, IstioTCPConnectionsOpenedTotal}

// omWriter writes series to w, one family after the other, each with its # TYPE line.
type omWriter struct {
	w      *bufio.Writer
	tl     timeline
	family string
	line   []byte
}

func (ow *omWriter) series(metric string, labels []byte, count int64) {
	if metric != ow.family {
		ow.family = metric
		fmt.Fprintf(ow.w, "# TYPE %s counter\n", metric)
	}
	for k := int64(0); k <= ow.tl.steps; k++ {
		ow.line = append(ow.line[:0], metric...)
		ow.line = append(ow.line, labels...)
		ow.line = append(ow.line, ' ')
		ow.line = strconv.AppendInt(ow.line, count*k/ow.tl.steps, 10)
		ow.line = append(ow.line, ' ')
		ow.line = strconv.AppendInt(ow.line, ow.tl.end-(ow.tl.steps-k)*ow.tl.step, 10)
		ow.line = append(ow.line, '\n')
		_, _ = ow.w.Write(ow.line) // bufio keeps the first error for Flush
	}
}

func (ow *omWriter) finish() error {
	_, _ = ow.w.WriteString("# EOF\n")
	return ow.w.Flush()
}

// WriteOpenMetrics writes calls as OpenMetrics text for `promtool tsdb create-blocks-from
// openmetrics`: a `# TYPE ... counter` line per metric family, each series' samples in time order
// (see OpenMetricsOptions for their values and timestamps, and what increase() returns), and
// `# EOF` last. Calls with the same labels are one series whose count is the sum of theirs.
// Series are sorted by their labels, so the output is a pure function of the input.
func WriteOpenMetrics(w io.Writer, calls []IstioCall, opts OpenMetricsOptions) error {
	tl, err := opts.timeline()
	if err != nil {
		return err
	}
	index := map[string]int{} // metric + labels -> position in all
	var all []series
	for i, c := range calls {
		metric, labels, err := appendSeries(nil, c)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		key := metric + string(labels)
		if j, ok := index[key]; ok {
			all[j].count += int64(c.Count)
			continue
		}
		index[key] = len(all)
		all = append(all, series{metric: metric, labels: labels, count: int64(c.Count)})
	}
	slices.SortFunc(all, func(a, b series) int {
		if c := slices.Index(families, a.metric) - slices.Index(families, b.metric); c != 0 {
			return c
		}
		return slices.Compare(a.labels, b.labels)
	})
	ow := &omWriter{w: bufio.NewWriter(w), tl: tl}
	for _, s := range all {
		ow.series(s.metric, s.labels, s.count)
	}
	return ow.finish()
}

// WriteOpenMetricsFunc writes n calls, call(0) to call(n-1), like WriteOpenMetrics but streaming,
// for data sets too large to hold: it keeps a 64-bit hash per series (to refuse duplicates), a few
// megabytes for 100,000 series, and never the text, whose size grows with Span/Step. call must be a pure function of i: it is called twice for each i, once
// per metric family. Series are written in the order of i, and two calls with the same labels
// are an error instead of being merged.
func WriteOpenMetricsFunc(w io.Writer, n int, call func(i int) IstioCall, opts OpenMetricsOptions) error {
	tl, err := opts.timeline()
	if err != nil {
		return err
	}
	seen := make(map[uint64]int, n) // hash of metric + labels -> i
	ow := &omWriter{w: bufio.NewWriter(w), tl: tl}
	var labels []byte
	for _, family := range families {
		for i := range n {
			c := call(i)
			var metric string
			metric, labels, err = appendSeries(labels[:0], c)
			if err != nil {
				return fmt.Errorf("call %d: %w", i, err)
			}
			if metric != family {
				continue
			}
			h := fnv64a(metric, labels)
			if j, ok := seen[h]; ok {
				return fmt.Errorf("calls %d and %d have the same labels %s%s: merge them", j, i, metric, labels)
			}
			seen[h] = i
			ow.series(metric, labels, int64(c.Count))
		}
	}
	return ow.finish()
}

// fnv64a is the 64-bit FNV-1a hash of metric followed by labels, without allocating.
func fnv64a(metric string, labels []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(metric); i++ {
		h = (h ^ uint64(metric[i])) * 1099511628211
	}
	for _, b := range labels {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}
