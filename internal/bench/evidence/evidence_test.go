package evidence

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// The benchmark reads its meshes from $MESHSCOPE_BENCH_DIR (written by make bench), for the
// sizes in $MESHSCOPE_BENCH_SIZES (comma-separated); without a directory it generates the
// 100- and 1,000-service meshes.
func benchSizes(b *testing.B) []int {
	v := os.Getenv("MESHSCOPE_BENCH_SIZES")
	if v == "" {
		return []int{100, 1000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("MESHSCOPE_BENCH_SIZES=%q: %v", v, err)
		}
		out = append(out, n)
	}
	return out
}

// inventory is the n-service mesh without Sidecars, from $MESHSCOPE_BENCH_DIR or generated.
func inventory(b *testing.B, m *bench.Mesh) *mesh.Inventory {
	dir := os.Getenv(bench.EnvDir)
	if dir == "" {
		dir = b.TempDir()
		if _, err := bench.WriteFiles(dir, m); err != nil {
			b.Fatal(err)
		}
	}
	inv, err := bench.Load(dir, m.Spec.Services, bench.PolicyNone)
	if err != nil {
		b.Fatal(err)
	}
	return inv
}

// BenchmarkEvidence is the traffic evidence of a whole mesh from a real Prometheus: one
// operation evaluates meshscope's query (traffic.Fetch) over the mesh's call series, every
// workload calling every declared port of its dependencies (Calls, about 5.75 series per
// workload), and resolves the answer against the inventory (traffic.Resolve), as a plan does
// once per provider. query-ms and index-ms split the operation. Before measuring it checks
// that the server's answer is, series for series, Snapshot: the file the plan and
// suggest benchmarks of make bench read in its place.
//
// It needs prometheus and promtool (make prometheus). Loading the series into Prometheus
// (promtool's backfill, then the server's start) is not measured.
func BenchmarkEvidence(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			m := bench.Generate(bench.DefaultSpec(n))
			calls := Calls(m)
			inv := inventory(b, m)
			at := testenv.EvaluationTime(time.Now())
			// Three samples per series (0, half, Count) keep the backfill's input near 100 MB at
			// 100,000 series; increase() at `at` is Count all the same.
			opts := testenv.OpenMetricsOptions{At: at, Span: 30 * time.Minute, Step: 15 * time.Minute}
			pr, pw := io.Pipe()
			go func() {
				pw.CloseWithError(testenv.WriteOpenMetricsFunc(pw, len(calls), func(i int) testenv.IstioCall {
					c := calls[i]
					return testenv.IstioCall{Reporter: "source", SourceWorkload: c.Workload, SourceNamespace: c.Namespace,
						DestinationService: c.Host(), DestinationServiceName: c.Service, DestinationServiceNamespace: c.ServiceNamespace,
						Protocol: c.Protocol, Port: int(c.Port), Count: c.Count}
				}, opts))
			}()
			p := testenv.StartPrometheus(b, pr, testenv.PrometheusOptions{})
			cfg := traffic.Prometheus{URL: p.URL, Window: "7d", Timeout: 5 * time.Minute}

			live, err := traffic.Fetch(context.Background(), cfg, at)
			if err != nil {
				b.Fatal(err)
			}
			data, err := Snapshot(m, "7d", at)
			if err != nil {
				b.Fatal(err)
			}
			file, err := traffic.ParseSnapshot("Snapshot", data)
			if err != nil {
				b.Fatal(err)
			}
			if err := sameSeries(live.Series, file.Series); err != nil {
				b.Fatalf("Prometheus's answer is not Snapshot: %v", err)
			}

			var query, index time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				snap, err := traffic.Fetch(context.Background(), cfg, at)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				ev := traffic.Resolve(snap, inv, "cluster.local")
				t2 := time.Now()
				query += t1.Sub(t0)
				index += t2.Sub(t1)
				if ev.Series != len(calls) || len(ev.Workloads()) != len(m.Proxies) || ev.Unattributed != 0 || len(ev.UnknownWorkloads) != 0 {
					b.Fatalf("resolved %d series to %d workloads (%d unattributed, %d unknown callers); want %d series to %d workloads",
						ev.Series, len(ev.Workloads()), ev.Unattributed, len(ev.UnknownWorkloads), len(calls), len(m.Proxies))
				}
			}
			b.StopTimer()
			runs := float64(b.N)
			b.ReportMetric(float64(query.Nanoseconds())/runs/1e6, "query-ms")
			b.ReportMetric(float64(index.Nanoseconds())/runs/1e6, "index-ms")
			b.ReportMetric(float64(len(calls)), "series")
			b.ReportMetric(float64(len(m.Proxies)), "workloads")
		})
	}
}

// sameSeries compares two answers as sets of series.
func sameSeries(a, b []traffic.Series) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d series, want %d", len(a), len(b))
	}
	order := func(x, y traffic.Series) int {
		return cmp.Or(cmp.Compare(x.SourceNamespace, y.SourceNamespace), cmp.Compare(x.SourceWorkload, y.SourceWorkload),
			cmp.Compare(x.DestinationService, y.DestinationService), cmp.Compare(x.Port, y.Port), cmp.Compare(x.Metric, y.Metric),
			cmp.Compare(x.Reporter, y.Reporter), cmp.Compare(x.Protocol, y.Protocol))
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, order)
	slices.SortFunc(b, order)
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("series %d: %+v, want %+v", i, a[i], b[i])
		}
	}
	return nil
}
