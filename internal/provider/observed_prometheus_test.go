package provider

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// Observed traffic from a real Prometheus (issue 10), backfilled with the seed's calls: bar
// calls foo.foo (declared), foo calls bar.bar (not declared) and api.example.com through
// PassthroughCluster, and foo/ghost, which the inventory lacks, calls bar.bar.

func seedCalls() []testenv.IstioCall {
	return []testenv.IstioCall{
		{Reporter: "source", SourceWorkload: "test-app", SourceNamespace: "bar", DestinationService: "foo.foo.svc.cluster.local",
			DestinationServiceName: "foo", DestinationServiceNamespace: "foo", Protocol: "http", Count: 1204},
		{Reporter: "destination", SourceWorkload: "test-app", SourceNamespace: "bar", DestinationService: "foo.foo.svc.cluster.local",
			DestinationServiceName: "foo", DestinationServiceNamespace: "foo", Protocol: "http", Count: 1199},
		{Reporter: "source", SourceWorkload: "test-app", SourceNamespace: "foo", DestinationService: "bar.bar.svc.cluster.local",
			DestinationServiceName: "bar", DestinationServiceNamespace: "bar", Protocol: "http", Count: 35},
		{Reporter: "source", SourceWorkload: "test-app", SourceNamespace: "foo", DestinationService: "api.example.com",
			DestinationServiceName: traffic.PassthroughCluster, Protocol: "http", Count: 7, ResponseFlags: "-"},
		{Reporter: "source", SourceWorkload: "ghost", SourceNamespace: "foo", DestinationService: "bar.bar.svc.cluster.local",
			DestinationServiceName: "bar", DestinationServiceNamespace: "bar", Protocol: "http", Count: 3},
	}
}

// startSeedPrometheus starts a Prometheus holding the seed's calls, whose counts are exact when
// evaluated at the returned time.
func startSeedPrometheus(t *testing.T, opts testenv.PrometheusOptions) (*testenv.Prometheus, time.Time) {
	t.Helper()
	at := testenv.EvaluationTime(time.Now())
	var om bytes.Buffer
	if err := testenv.WriteOpenMetrics(&om, seedCalls(), testenv.OpenMetricsOptions{At: at}); err != nil {
		t.Fatal(err)
	}
	return testenv.StartPrometheus(t, &om, opts), at
}

// providerAt serves a provider whose clock reads at, recording its diagnostics in rec.
func providerAt(at time.Time, rec *diagRecorder) map[string]func() (tfprotov6.ProviderServer, error) {
	return factoriesFor(NewWithClock("test", func() time.Time { return at }), rec)
}

// factoriesFor serves the provider newProvider makes, recording its diagnostics in rec.
func factoriesFor(newProvider func() provider.Provider, rec *diagRecorder) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"meshscope": func() (tfprotov6.ProviderServer, error) {
			s, err := Serve(newProvider)()
			if err != nil {
				return nil, err
			}
			return recordingServer{ProviderServer: s, rec: rec}, nil
		},
	}
}

func prometheusBlock(settings ...string) string {
	return "prometheus {\n    " + strings.Join(settings, "\n    ") + "\n  }"
}

// Evaluated where the samples end, the counts are exact: the warning names the workload, the
// host, 35 requests and the element; the passthrough call and the unknown caller are reported.
func TestObservedPrometheus_WarnsWithExactCounts(t *testing.T) {
	prom, at := startSeedPrometheus(t, testenv.PrometheusOptions{})
	rec := &diagRecorder{}
	config := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL))) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Scope Cuts Observed Calls", attr: "dependencies", detail: regexp.MustCompile(
					`"foo/Deployment/test-app" would have no cluster for 1 destination\(s\) it called over the last 3[01]m \(Prometheus holds no older Istio sample; 7d asked\) \(Prometheus at ` +
						regexp.QuoteMeta(prom.URL) + `\):\n  - bar\.bar\.svc\.cluster\.local: 35 requests; add \{ service = "bar\.bar" \}\n`)},
				expectWarning{rec: rec, summary: "Observed Calls Outside The Registry", attr: "dependencies", detail: regexp.MustCompile(
					`api\.example\.com: 7 requests through PassthroughCluster; add a ServiceEntry`)},
				expectWarning{rec: rec, summary: "Provider Configuration: Observed Callers Not In The Inventory", attr: "", detail: regexp.MustCompile(`foo/ghost \(3 requests\).*not this resource: it is shown once per run`)},
				// The seed's series span 30 minutes: the 7d window is longer than Prometheus holds.
				expectWarning{rec: rec, summary: "Provider Configuration: Window Longer Than Prometheus Holds", attr: "", detail: regexp.MustCompile(
					`Prometheus at ` + regexp.QuoteMeta(prom.URL) + ` holds Istio samples from .* on: 3[01]m of the 7d window asked for \(its retention is 15d\); ` +
						`the counts cover that span only\. .*Set prometheus\.window to "3[01]m" or less`)},
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(
						observedChecks([]string{"bar.bar.svc.cluster.local"}, 1, []string{}))})),
				plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("review"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(observedChecks([]string{}, 0, []string{}))})),
			}},
		}},
	})
}

func TestObservedPrometheus_ErrorModeFailsThePlan(t *testing.T) {
	prom, at := startSeedPrometheus(t, testenv.PrometheusOptions{})
	config := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL)), `observed_traffic = "error"`) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, &diagRecorder{}),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`(?s)Scope Cuts Observed Calls.*bar\.bar\.svc\.cluster\.local: 35\s+requests`),
		}},
	})
}

// The snapshot file, written as documented (the Prometheus HTTP API's answer to the query that
// `query` prints), gives the same answers as the live server: the data sources' dependencies
// and calls, counts included, and the scopes' reviews.
func TestObservedPrometheus_SnapshotFileEqualsLiveServer(t *testing.T) {
	prom, _ := startSeedPrometheus(t, testenv.PrometheusOptions{})
	file := filepath.Join(t.TempDir(), "observed.json")
	saveAnswer(t, prom, traffic.Query(traffic.DefaultWindow), file)

	// One configuration, two provider instances: live and file. Both evaluate at the wall clock,
	// as the documented command does.
	config := fmt.Sprintf(`
provider "meshscope" {
  alias     = "live"
  manifests = %[1]s
  prometheus {
    url = %[2]q
  }
}

provider "meshscope" {
  alias                 = "file"
  manifests             = %[1]s
  observed_traffic_file = %[3]q
}
`, seedManifests(t), prom.URL, file)
	for _, p := range []string{"live", "file"} {
		config += fmt.Sprintf(`
data "meshscope_observed_dependencies" "foo_%[1]s" {
  provider  = meshscope.%[1]s
  namespace = "foo"
  workload  = "test-app"
}

data "meshscope_observed_dependencies" "bar_%[1]s" {
  provider          = meshscope.%[1]s
  namespace         = "bar"
  workload_selector = { app = "test-app" }
}

resource "meshscope_workload_scope" "foo_%[1]s" {
  provider          = meshscope.%[1]s
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "kube-system/*" }]
}
`, p)
	}
	same := func(a, b string, path tfjsonpath.Path) statecheck.StateCheck {
		return statecheck.CompareValuePairs(a, path, b, path, compare.ValuesSame())
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				same("data.meshscope_observed_dependencies.foo_live", "data.meshscope_observed_dependencies.foo_file", tfjsonpath.New("dependencies")),
				same("data.meshscope_observed_dependencies.foo_live", "data.meshscope_observed_dependencies.foo_file", tfjsonpath.New("calls")),
				same("data.meshscope_observed_dependencies.bar_live", "data.meshscope_observed_dependencies.bar_file", tfjsonpath.New("calls")),
				same("data.meshscope_observed_dependencies.bar_live", "data.meshscope_observed_dependencies.bar_file", tfjsonpath.New("window")),
				same("meshscope_workload_scope.foo_live", "meshscope_workload_scope.foo_file", tfjsonpath.New("review")),
				// And they are the seed's calls, not two empty answers.
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.foo_file", tfjsonpath.New("dependencies"),
					knownvalue.SetExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
						"service": knownvalue.StringExact("bar.bar"), "ports": knownvalue.SetExact([]knownvalue.Check{knownvalue.Int64Exact(80)}),
					})})),
				statecheck.ExpectKnownValue("meshscope_workload_scope.foo_file", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("unobserved_dependencies"),
					stringsExact("kube-system/*")),
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.bar_live", tfjsonpath.New("calls").AtSliceIndex(0).AtMapKey("host"),
					knownvalue.StringExact("foo.foo.svc.cluster.local")),
			},
		}},
	})
}

// A 401 names bearer_token; with the credentials the server wants (basic auth, through headers),
// the same server answers.
func TestObservedPrometheus_UnauthorizedNamesBearerToken(t *testing.T) {
	auth := &testenv.BasicAuth{Username: "meshscope", Password: "s3cret"}
	prom, at := startSeedPrometheus(t, testenv.PrometheusOptions{BasicAuth: auth})
	refused := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL), `bearer_token = "not-it"`), `observed_traffic = "error"`) + seedScopes
	basic := "Basic " + basicAuth(auth.Username, auth.Password)
	allowed := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL), fmt.Sprintf("headers = { Authorization = %q }", basic))) + seedScopes
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, rec),
		Steps: []resource.TestStep{
			{Config: refused, ExpectError: regexp.MustCompile(`(?s)Prometheus Refused The Query.*prometheus\.bearer_token.*HTTP 401`)},
			{Config: allowed, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing_count"), knownvalue.Int64Exact(1)),
			}}},
		},
	})
	// The token never reaches a diagnostic.
	for _, d := range rec.diags {
		if strings.Contains(d.Detail, "not-it") || strings.Contains(d.Detail, "s3cret") {
			t.Errorf("a diagnostic shows a credential: %s", d.Detail)
		}
	}
}

// A 403 names bearer_token too: Prometheus behind an authorizing proxy (as kube-rbac-proxy fronts
// it) that knows the token but does not grant it. The granted token, read from
// MESHSCOPE_PROMETHEUS_TOKEN, passes; it never reaches a diagnostic.
func TestObservedPrometheus_ForbiddenNamesBearerToken(t *testing.T) {
	prom, at := startSeedPrometheus(t, testenv.PrometheusOptions{})
	target, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	upstream := httputil.NewSingleHostReverseProxy(target)
	var forbidden atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer granted-t0ken" {
			forbidden.Add(1)
			http.Error(w, "Forbidden (user=system:serviceaccount:ci:planner, verb=get, resource=, subresource=)", http.StatusForbidden)
			return
		}
		upstream.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	refused := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", proxy.URL), `bearer_token = "known-but-not-granted"`), `observed_traffic = "error"`) + seedScopes
	fromEnv := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", proxy.URL)), `observed_traffic = "error"`) + seedScopes
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, rec),
		Steps: []resource.TestStep{
			{Config: refused, ExpectError: regexp.MustCompile(`(?s)Prometheus Refused The Query.*prometheus\.bearer_token.*HTTP 403 Forbidden`)},
			// Granted, the check runs: foo's cut call fails the plan in error mode.
			{PreConfig: func() { t.Setenv("MESHSCOPE_PROMETHEUS_TOKEN", "granted-t0ken") }, Config: fromEnv, ExpectError: regexp.MustCompile(`Scope Cuts Observed Calls`)},
		},
	})
	if forbidden.Load() == 0 {
		t.Error("the proxy forbade no request")
	}
	for _, d := range rec.diags {
		if strings.Contains(d.Detail, "granted-t0ken") || strings.Contains(d.Detail, "known-but-not-granted") {
			t.Errorf("a diagnostic shows a credential: %s", d.Detail)
		}
	}
}

// A certificate the client does not trust names ca_certificate; with it, the query succeeds.
func TestObservedPrometheus_TLSNamesCACertificate(t *testing.T) {
	prom, at := startSeedPrometheus(t, testenv.PrometheusOptions{TLS: true})
	untrusted := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL)), `observed_traffic = "error"`) + seedScopes
	trusted := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL), "ca_certificate = "+heredoc(strings.TrimSpace(prom.CACertPEM))), `observed_traffic = "error"`) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, &diagRecorder{}),
		Steps: []resource.TestStep{
			{Config: untrusted, ExpectError: regexp.MustCompile(`(?s)Prometheus TLS Failed.*prometheus\.ca_certificate.*certificate`)},
			// Trusted, the check runs: foo's cut call fails the plan in error mode.
			{Config: trusted, ExpectError: regexp.MustCompile(`Scope Cuts Observed Calls`)},
		},
	})
}

// An unreachable server is a warning in warn mode, naming the URL and the cause; the scopes
// plan unchecked.
func TestObservedPrometheus_UnreachableWarns(t *testing.T) {
	addr := testenv.FreeAddr(t)
	rec := &diagRecorder{}
	config := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", "http://"+addr), `timeout = "5s"`)) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factoriesFor(New("test"), rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Provider Configuration: Prometheus Unreachable", attr: "", detail: regexp.MustCompile(
					`(?s)prometheus\.url.*cannot reach Prometheus at http://` + regexp.QuoteMeta(addr) + `.*connection refused`)},
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing"), knownvalue.Null()),
			}},
		}},
	})
}

// A Prometheus that holds no Istio series in the window: a warning that says so, and the scopes
// unchecked (null), not "no traffic" (empty).
func TestObservedPrometheus_NoIstioSeriesWarns(t *testing.T) {
	at := testenv.EvaluationTime(time.Now())
	om := fmt.Sprintf("# TYPE up gauge\nup{job=\"node\"} 1 %d\nup{job=\"node\"} 1 %d\n# EOF\n", at.Add(-time.Minute).Unix(), at.Unix())
	prom := testenv.StartPrometheus(t, strings.NewReader(om), testenv.PrometheusOptions{})
	rec := &diagRecorder{}
	config := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL))) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Provider Configuration: No Istio Traffic Observed", attr: "", detail: regexp.MustCompile(
					`Prometheus at ` + regexp.QuoteMeta(prom.URL) + ` holds no series of istio_requests_total or istio_tcp_connections_opened_total over the last 7d\. That is no evidence, not evidence of no traffic`)},
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing_count"), knownvalue.Null()),
			}},
		}},
	})
}

// In "error" mode, a Prometheus without Istio series fails the plan (issue 23): a gate pointed
// at a server that scrapes no sidecars must not pass every change. The error shows once.
func TestObservedPrometheus_NoIstioSeriesFailsErrorMode(t *testing.T) {
	at := testenv.EvaluationTime(time.Now())
	om := fmt.Sprintf("# TYPE up gauge\nup{job=\"node\"} 1 %d\nup{job=\"node\"} 1 %d\n# EOF\n", at.Add(-time.Minute).Unix(), at.Unix())
	prom := testenv.StartPrometheus(t, strings.NewReader(om), testenv.PrometheusOptions{})
	config := seedProvider(t, nil, prometheusBlock(fmt.Sprintf("url = %q", prom.URL)), `observed_traffic = "error"`) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: providerAt(at, &diagRecorder{}),
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: regexp.MustCompile(`(?s)Error: Provider Configuration: No Istio Traffic Observed.*` + regexp.QuoteMeta(prom.URL) +
				`.*observed_traffic\s+=\s+"error"\s+fails\s+the\s+plan\s+without\s+evidence`),
		}},
	})
}

// saveAnswer writes the answer of Prometheus at base to query, as the documented
// `curl -fsS --get "$PROM/api/v1/query" --data-urlencode 'query=...'` does.
func saveAnswer(t *testing.T, prom *testenv.Prometheus, query, file string) {
	t.Helper()
	body := prom.Answer(t, query, time.Time{})
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
}

// seedManifests is the manifests expression of seedProvider.
func seedManifests(t *testing.T) string {
	return fmt.Sprintf("[for f in fileset(%q, \"*.yaml\") : file(\"%s/${f}\")]", seedDir(t), seedDir(t))
}

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
