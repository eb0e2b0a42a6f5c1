package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// TestSuggestLivePrometheus: against a real Prometheus (Debian's 2.42, started by testenv over
// the series of the suggest test snapshot, served over TLS), `suggest --prometheus` writes
// exactly what `suggest --observed` writes from the snapshot the documented command saves from
// the same server, and so does `diff --prometheus` in every format; without the server's CA, the error names --ca-certificate. It skips without
// the prometheus and promtool binaries (make prometheus installs them).
func TestSuggestLivePrometheus(t *testing.T) {
	snap, err := traffic.ReadSnapshot(suggestObserved)
	if err != nil {
		t.Fatal(err)
	}
	var calls []testenv.IstioCall
	for _, s := range snap.Series {
		proto := s.Protocol
		if s.Metric == traffic.TCPConnectionsMetric {
			proto = "tcp"
		}
		calls = append(calls, testenv.IstioCall{Reporter: s.Reporter, SourceWorkload: s.SourceWorkload, SourceNamespace: s.SourceNamespace,
			DestinationService: s.DestinationService, DestinationServiceName: s.DestinationServiceName,
			DestinationServiceNamespace: s.DestinationServiceNamespace, Protocol: proto, Port: s.Port, Count: int(math.Round(s.Count))})
	}
	var om bytes.Buffer
	if err := testenv.WriteOpenMetrics(&om, calls, testenv.OpenMetricsOptions{At: testenv.EvaluationTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
	prom := testenv.StartPrometheus(t, &om, testenv.PrometheusOptions{TLS: true})
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte(prom.CACertPEM), 0o600); err != nil {
		t.Fatal(err)
	}

	code, live, errs := run(t, "", "suggest", "-f", suggestMesh, "--prometheus", prom.URL, "--ca-certificate", ca)
	if code != ExitOK {
		t.Fatalf("--prometheus: exit %d: %s", code, errs)
	}
	// The snapshot, as SnapshotCommand's curl writes it: the HTTP API's answer to Query, as it comes.
	file := filepath.Join(dir, "observed.json")
	saveQueryAnswer(t, prom, traffic.Query(traffic.DefaultWindow), file)
	code, fromFile, errs := run(t, "", "suggest", "-f", suggestMesh, "--observed", file)
	if code != ExitOK {
		t.Fatalf("--observed: exit %d: %s", code, errs)
	}
	if live != fromFile {
		t.Errorf("--prometheus and --observed of the same server differ:\n--- live\n%s\n--- file\n%s", live, fromFile)
	}
	for _, want := range []string{`resource "meshscope_workload_scope" "shop_web"`, `{ service = "payments.pay", ports = [80] }`, "import {"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live output lacks %q:\n%s", want, live)
		}
	}
	if !strings.Contains(errs, "shop/gone") {
		t.Errorf("stderr does not report the unknown caller:\n%s", errs)
	}

	// diff --prometheus: the same review as diff --observed from the saved answer, in every format,
	// flagging the calls the head tree cuts.
	head := observedHead(t)
	for _, o := range []string{"table", "markdown", "json"} {
		code, live, errs := run(t, "", "diff", "--base", suggestMesh, "--head", head, "--prometheus", prom.URL, "--ca-certificate", ca, "-o", o)
		if code != ExitChanged {
			t.Fatalf("diff --prometheus -o %s: exit %d, want 3: %s", o, code, errs)
		}
		_, fromFile, _ := run(t, "", "diff", "--base", suggestMesh, "--head", head, "--observed", file, "-o", o)
		// The evidence's source is the one difference: the server's URL, or the file's path.
		if !strings.Contains(live, prom.URL) {
			t.Errorf("diff -o %s: --prometheus does not name its source %s:\n%s", o, prom.URL, live)
		}
		if live = strings.ReplaceAll(live, prom.URL, file); live != fromFile {
			t.Errorf("diff -o %s: --prometheus and --observed of the same server differ:\n--- live\n%s\n--- file\n%s", o, live, fromFile)
		}
		if o == "json" {
			var doc struct {
				Changes []DiffRow `json:"changes"`
			}
			if err := json.Unmarshal([]byte(live), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Changes) != 1 || doc.Changes[0].ObservedCutCount != 3 || doc.Changes[0].ObservedCut[0].Dependency != "cart.shop" {
				t.Errorf("diff --prometheus -o json: changes = %+v", doc.Changes)
			}
		}
	}

	code, out, errs := run(t, "", "suggest", "-f", suggestMesh, "--prometheus", prom.URL)
	if code != ExitError || !strings.Contains(errs, "--ca-certificate") || out != "" {
		t.Errorf("without the CA: exit %d, stderr %q", code, errs)
	}
}

// saveQueryAnswer writes the server's answer to an instant query, as it comes, to file.
func saveQueryAnswer(t *testing.T, prom *testenv.Prometheus, query, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := prom.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query: HTTP %d, %v: %s", resp.StatusCode, err, body)
	}
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
}
