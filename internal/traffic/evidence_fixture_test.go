package traffic

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

var updateEvidence = flag.Bool("update", false, "rewrite internal/fixture/evidence-observed.json from a real Prometheus")

// evidenceCalls are the series Istio's proxies write for the calls of fixture.Evidence.
func evidenceCalls() []testenv.IstioCall {
	svc := func(reporter, ns, wl, name, svcNs, proto string, port, n int) testenv.IstioCall {
		return testenv.IstioCall{Reporter: reporter, SourceNamespace: ns, SourceWorkload: wl,
			DestinationService: name + "." + svcNs + ".svc.cluster.local", DestinationServiceName: name,
			DestinationServiceNamespace: svcNs, Protocol: proto, Port: port, Count: n}
	}
	nameless := func(ns, wl string, n int) testenv.IstioCall {
		return testenv.IstioCall{Reporter: "source", SourceNamespace: ns, SourceWorkload: wl, DestinationService: "unknown",
			DestinationServiceName: PassthroughCluster, Protocol: "tcp", Count: n}
	}
	external := func(ns, wl, host, proto string, n int) testenv.IstioCall {
		return testenv.IstioCall{Reporter: "source", SourceNamespace: ns, SourceWorkload: wl, DestinationService: host,
			DestinationServiceName: host, DestinationServiceNamespace: ns, Protocol: proto, Count: n}
	}
	return []testenv.IstioCall{
		// web calls checkout; the VirtualService sends every request to checkout-v2, and both
		// proxies name the cluster after routing.
		svc("source", "shop", "web", "checkout-v2", "shop", "http", 0, 1000),
		svc("destination", "shop", "web", "checkout-v2", "shop", "http", 0, 998),
		// The Telemetry that adds destination_port applies to cart's proxy only.
		svc("source", "shop", "web", "cart", "shop", "http", 0, 1000),
		svc("destination", "shop", "web", "cart", "shop", "http", 80, 1000),
		// cart: 500 connections the client could not name; redis's proxy names 100 of them.
		nameless("shop", "cart", 500),
		svc("destination", "shop", "cart", "redis", "data", "tcp", 6379, 100),
		// worker: 300 plaintext connections; db counts 290 from a caller it cannot name.
		nameless("shop", "worker", 300),
		svc("destination", "unknown", "unknown", "db", "data", "tcp", 5432, 290),
		// payments calls two ServiceEntry hosts of its own namespace.
		external("pay", "payments", "api.stripe.com", "tcp", 88),
		external("pay", "payments", "*.googleapis.com", "tcp", 12),
		// gone is not in the inventory: 2,110 requests that both proxies counted, and 100 connections.
		svc("source", "shop", "gone", "cart", "shop", "http", 0, 2110),
		svc("destination", "shop", "gone", "cart", "shop", "http", 0, 2100),
		svc("source", "shop", "gone", "redis", "data", "tcp", 0, 100),
	}
}

// The fixture's snapshot is what a real Prometheus holding those series answers to meshscope's
// query (at the instant the samples end, so the counts are whole).
func TestEvidenceFixture_IsPrometheusAnswer(t *testing.T) {
	live := testenv.AnswerFor(t, evidenceCalls(), Query(DefaultWindow))
	if *updateEvidence {
		testenv.WriteAnswer(t, "../fixture/evidence-observed.json", live)
		t.Skip("rewrote internal/fixture/evidence-observed.json; run the test again without -update")
	}
	want, err := ParseSnapshot("live", live)
	if err != nil {
		t.Fatal(err)
	}
	got := evidenceSnapshot(t)
	if g, w := seriesKeys(got.Series), seriesKeys(want.Series); !slices.Equal(g, w) || got.Window != want.Window || len(g) != len(evidenceCalls()) {
		t.Errorf("internal/fixture/evidence-observed.json holds\n%s\nbut Prometheus answers\n%s\n(go test ./internal/traffic -run TestEvidenceFixture_IsPrometheusAnswer -update rewrites it)",
			strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func seriesKeys(s []Series) []string {
	var out []string
	for _, x := range s {
		out = append(out, fmt.Sprintf("%+v", x))
	}
	slices.Sort(out)
	return out
}

func evidenceSnapshot(t *testing.T) *Snapshot {
	t.Helper()
	snap, err := ParseSnapshot("evidence-observed.json", []byte(fixture.EvidenceObserved))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func evidenceMesh(t *testing.T) *mesh.Inventory {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("evidence.yaml", []byte(fixture.Evidence)); err != nil {
		t.Fatal(err)
	}
	return inv
}

func fixtureObserved() string { return fixture.EvidenceObserved }

// A window longer than the server holds: Prometheus answers it all the same. Its retention
// (15d) and its oldest Istio sample (30 minutes before the evaluation) say how much the counts
// cover, and the evidence says so; a window inside the span is not short.
func TestLoad_WindowLongerThanPrometheusHolds(t *testing.T) {
	at := testenv.EvaluationTime(time.Now())
	var om bytes.Buffer
	if err := testenv.WriteOpenMetrics(&om, evidenceCalls(), testenv.OpenMetricsOptions{At: at}); err != nil {
		t.Fatal(err)
	}
	prom := testenv.StartPrometheus(t, &om, testenv.PrometheusOptions{})
	load := func(window string) *Evidence {
		t.Helper()
		src := Source{Prometheus: &Prometheus{URL: prom.URL, Timeout: time.Minute}, Window: window, Now: func() time.Time { return at }}
		ev, err := Load(context.Background(), src, evidenceMesh(t), "cluster.local")
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := load("365d")
	c := ev.Coverage
	if !ev.Short() || c.Retention != "15d" || c.Err != nil || (c.Covered.String() != "30m" && c.Covered.String() != "31m") {
		t.Fatalf("coverage = %+v (short %v), want 15d retention and about 30m covered", c, ev.Short())
	}
	if got := ev.Span(); got != c.Covered.String()+" (Prometheus holds no older Istio sample; 365d asked)" {
		t.Errorf("span = %q", got)
	}
	if facts := ev.ShortFacts(); !strings.Contains(facts, "of the 365d window asked for (its retention is 15d); the counts cover that span only") {
		t.Errorf("facts = %q", facts)
	}
	// The counts are the same: the series lie inside both windows.
	if calls := ev.Calls("shop", "web"); len(calls) != 2 || calls[0].Count != 1000 {
		t.Errorf("web's calls = %+v", calls)
	}
	if ev := load("20m"); ev.Short() || ev.Span() != "20m" {
		t.Errorf("20m: coverage %+v, span %q, want the window covered", ev.Coverage, ev.Span())
	}
}
