package provider

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// Observed traffic from a snapshot file (issue 10): the seed's bar/test-app calls foo.foo, which
// its scope declares; foo/test-app calls bar.bar, which its scope does not, and api.example.com
// through PassthroughCluster; foo/ghost is not in the inventory.

func observedFile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/observed-seed.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// observedChecks checks one review element's observed_* values.
func observedChecks(missing []string, missingN int64, unobserved []string) map[string]knownvalue.Check {
	return map[string]knownvalue.Check{
		"observed_missing":        stringsExact(missing...),
		"observed_missing_count":  knownvalue.Int64Exact(missingN),
		"unobserved_dependencies": stringsExact(unobserved...),
	}
}

func TestWorkloadScope_ObservedCallCutWarnsWithCountAndElement(t *testing.T) {
	config := seedProvider(t, nil, fmt.Sprintf("observed_traffic_file = %q", observedFile(t))) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(
						observedChecks([]string{"bar.bar.svc.cluster.local"}, 1, []string{}))})),
				plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("review"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(
						observedChecks([]string{}, 0, []string{}))})),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing_count"), knownvalue.Int64Exact(1)),
			},
		}},
	})
}

// The warnings: the cut call on foo's dependencies, with the workload, host, count and element;
// the passthrough call with its fix; the caller the inventory lacks. bar's declared call is clean.
func TestWorkloadScope_ObservedWarnings(t *testing.T) {
	rec := &diagRecorder{}
	config := seedProvider(t, nil, fmt.Sprintf("observed_traffic_file = %q", observedFile(t))) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Scope Cuts Observed Calls", attr: "dependencies", detail: regexp.MustCompile(
					`(?s)"foo/Deployment/test-app" would have no cluster for 1 destination\(s\) it called over the last 7d \(the observed traffic file .*observed-seed\.json\):\n` +
						`  - bar\.bar\.svc\.cluster\.local: 35 requests; add \{ service = "bar\.bar" \}\n`)},
				expectWarning{rec: rec, summary: "Observed Calls Outside The Registry", attr: "dependencies", detail: regexp.MustCompile(
					`(?s)"foo/Deployment/test-app".*api\.example\.com: 7 requests through PassthroughCluster; add a ServiceEntry for the host`)},
				expectWarning{rec: rec, summary: "Provider Configuration: Observed Callers Not In The Inventory", attr: "", detail: regexp.MustCompile(
					`1 calling workload\(s\) that the inventory does not hold: foo/ghost \(3 requests\)`)},
				expectWarning{rec: rec, summary: "Observed Hosts Not In The Inventory", attr: "dependencies", detail: regexp.MustCompile(
					`"bar/Deployment/test-app" called 1 service host\(s\) over the last 7d that the inventory does not hold: legacy\.bar\.svc\.cluster\.local \(4 requests\)`)},
			}},
		}},
	})
	for _, w := range rec.warnings() {
		if w.Summary == "Scope Cuts Observed Calls" && regexp.MustCompile(`bar/Deployment`).MatchString(w.Detail) {
			t.Errorf("bar declares its call, but warned: %s", w.Detail)
		}
	}
	// Fetched once per provider instance: the note about foo/ghost comes once per plan, not per scope.
	n := 0
	for _, w := range rec.warnings() {
		if w.Summary == "Provider Configuration: Observed Callers Not In The Inventory" {
			n++
		}
	}
	// terraform plans, applies and re-plans, each with a provider instance of its own; two scopes
	// each reporting it would double the count.
	if n == 0 || n > rec.configured {
		t.Errorf("the unknown-caller note came %d times over %d provider instances, want at most one each", n, rec.configured)
	}
}

// The warnings themselves: terraform prints them, and a plan with a warning and an error shows
// both, so error mode shows the message the warning carries.
func TestWorkloadScope_ObservedErrorModeFailsThePlan(t *testing.T) {
	config := seedProvider(t, nil, fmt.Sprintf("observed_traffic_file = %q", observedFile(t)), `observed_traffic = "error"`) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ExpectError: regexp.MustCompile(`(?s)Scope Cuts Observed Calls.*"foo/Deployment/test-app" would have no\s+cluster.*` +
				`bar\.bar\.svc\.cluster\.local: 35\s+requests;\s+add\s+\{\s+service\s+=\s+"bar\.bar"\s+\}`),
		}},
	})
}

// Declaring the observed call makes the plan clean for foo; a dependency nothing called is a
// candidate to drop.
func TestWorkloadScope_ObservedDeclaredCallAndUnobservedDependency(t *testing.T) {
	config := seedProvider(t, nil, fmt.Sprintf("observed_traffic_file = %q", observedFile(t)), `observed_traffic = "error"`) + `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar.bar" }, { service = "kube-system/*" }]
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(
						observedChecks([]string{}, 0, []string{"kube-system/*"}))})),
			}},
		}},
	})
}

// The data source reads the same evidence in the resource's shape, and feeding it back plans a
// scope that cuts nothing.
func TestObservedDependencies_RoundTrip(t *testing.T) {
	config := seedProvider(t, nil, fmt.Sprintf("observed_traffic_file = %q", observedFile(t)), `observed_traffic = "error"`) + `
data "meshscope_observed_dependencies" "foo" {
  namespace = "foo"
  workload  = "test-app"
}

data "meshscope_observed_dependencies" "bar" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
}

resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = data.meshscope_observed_dependencies.foo.dependencies
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.foo", tfjsonpath.New("dependencies"),
					knownvalue.SetExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
						"service": knownvalue.StringExact("bar.bar"), "ports": knownvalue.SetExact([]knownvalue.Check{knownvalue.Int64Exact(80)}),
					})})),
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.foo", tfjsonpath.New("calls"),
					knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"workload": knownvalue.StringExact("foo/test-app"), "host": knownvalue.StringExact("api.example.com"),
							"port": knownvalue.Null(), "protocol": knownvalue.StringExact("http"), "count": knownvalue.Int64Exact(7),
							"unit": knownvalue.StringExact("requests"), "class": knownvalue.StringExact("passthrough"),
							"passthrough": knownvalue.Bool(true), "dependency": knownvalue.StringExact(""),
						}),
						knownvalue.ObjectExact(map[string]knownvalue.Check{
							"workload": knownvalue.StringExact("foo/test-app"), "host": knownvalue.StringExact("bar.bar.svc.cluster.local"),
							"port": knownvalue.Null(), "protocol": knownvalue.StringExact("http"), "count": knownvalue.Int64Exact(35),
							"unit": knownvalue.StringExact("requests"), "class": knownvalue.StringExact("service"),
							"passthrough": knownvalue.Bool(false), "dependency": knownvalue.StringExact("bar.bar"),
						}),
					})),
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.bar", tfjsonpath.New("workloads"), stringsExact("bar/Deployment/test-app")),
				// Both reporters counted the call: once, the larger count.
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.bar", tfjsonpath.New("calls").AtSliceIndex(0).AtMapKey("count"), knownvalue.Int64Exact(1204)),
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.bar", tfjsonpath.New("window"), knownvalue.StringExact("7d")),
				statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing_count"), knownvalue.Int64Exact(0)),
			},
		}},
	})
}

func TestObservedTraffic_BadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "observed.json")
	if err := os.WriteFile(malformed, []byte("{\"status\": \"success\",\n \"data\": {\"resultType\": \"vector\", \"result\": [}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: connection refused, at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()

	scope := `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}
`
	dataSource := `
data "meshscope_observed_dependencies" "foo" {
  namespace = "foo"
  workload  = "test-app"
}
`
	for _, tc := range []struct {
		name     string
		settings []string
		body     string
		want     string
	}{
		{"malformed file is an error with path and position", []string{fmt.Sprintf("observed_traffic_file = %q", malformed)}, scope,
			`(?s)Invalid Observed Traffic File.*observed\.json:\s+line\s+2,\s+column\s+47`},
		{"unreachable in error mode names the URL and cause", []string{fmt.Sprintf("prometheus {\n    url = %q\n    timeout = \"5s\"\n  }", closed), `observed_traffic = "error"`}, scope,
			`(?s)Prometheus Unreachable.*` + regexp.QuoteMeta(closed) + `.*connection\s+refused`},
		{"both sources", []string{fmt.Sprintf("observed_traffic_file = %q", malformed), "prometheus {\n    url = \"http://127.0.0.1:9\"\n  }"}, scope,
			`Two Sources Of Observed Traffic`},
		{"mode without a source", []string{`observed_traffic = "error"`}, scope, `No Observed Traffic To Check`},
		{"bad window", []string{"prometheus {\n    url = \"http://127.0.0.1:9\"\n    window = \"7 days\"\n  }"}, scope, `(?s)Invalid Window.*"7 days"`},
		{"bad url", []string{"prometheus {\n    url = \"prometheus:9090\"\n  }"}, scope, `(?s)Invalid Prometheus URL.*prometheus:9090`},
		{"bad ca", []string{"prometheus {\n    url = \"https://127.0.0.1:9\"\n    ca_certificate = \"not pem\"\n  }"}, scope, `Invalid CA Certificate`},
		{"data source without evidence", nil, dataSource, `No Observed Traffic Configured`},
		{"data source on an empty answer", []string{fmt.Sprintf("observed_traffic_file = %q", empty)}, dataSource,
			`(?s)No Istio Traffic Observed.*no\s+evidence,\s+not\s+evidence\s+of\s+no\s+traffic`},
		{"data source with an unknown workload", []string{fmt.Sprintf("observed_traffic_file = %q", observedFile(t))},
			`data "meshscope_observed_dependencies" "x" {
  namespace = "foo"
  workload  = "test-ap"
}`, `(?s)Workload Not Found.*"test-ap".*test-app`},
		{"data source with neither selector nor name", []string{fmt.Sprintf("observed_traffic_file = %q", observedFile(t))},
			`data "meshscope_observed_dependencies" "x" {
  namespace = "foo"
}`, `Select One Workload`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: seedProvider(t, nil, tc.settings...) + tc.body, ExpectError: regexp.MustCompile(tc.want)}},
			})
		})
	}
}

// In warn mode an unreachable server or an empty answer plans, with review values left null
// (not checked) rather than empty (checked, nothing found).
func TestObservedTraffic_WarnModePlansUnchecked(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	unchecked := knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"observed_missing": knownvalue.Null(), "observed_missing_count": knownvalue.Null(), "unobserved_dependencies": knownvalue.Null(),
	})})
	for name, setting := range map[string]string{
		"unreachable":  "prometheus {\n    url = \"http://127.0.0.1:9\"\n    timeout = \"5s\"\n  }",
		"empty answer": fmt.Sprintf("observed_traffic_file = %q", empty),
		"off":          fmt.Sprintf("observed_traffic_file = %q\n  observed_traffic = \"off\"", observedFile(t)),
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: seedProvider(t, nil, setting) + seedScopes,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"), unchecked),
					}},
				}},
			})
		})
	}
}

// Offline, an import block adopts a Sidecar of the manifests (what `suggest` writes for a
// workload that already has one): the declarations are read from it, and a matching
// configuration then plans empty.
func TestWorkloadScope_ImportFromManifestsOffline(t *testing.T) {
	legacy := `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: legacy
  namespace: foo
spec:
  workloadSelector:
    labels:
      app: test-app
  egress:
  - hosts:
    - "bar/*"
    - "istio-system/*"
`
	config := seedProvider(t, []string{heredoc(legacy)}) + `
import {
  to = meshscope_workload_scope.foo
  id = "foo/legacy"
}

resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  name              = "legacy"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar/*" }]
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("egress_hosts"), stringsExact("bar/*", "istio-system/*")),
				},
			},
			{
				Config: seedProvider(t, nil) + `
import {
  to = meshscope_workload_scope.nope
  id = "foo/nope"
}

resource "meshscope_workload_scope" "nope" {
  namespace         = "foo"
  name              = "nope"
  workload_selector = { app = "test-app" }
}
`,
				ExpectError: regexp.MustCompile(`(?s)Sidecar Not Found.*foo/nope in the provider's manifests`),
			},
		},
	})
}

// A cut call to a Service that is not exported to the scope's namespace: adding it would be
// refused, so the warning says why no scope of the namespace can route it instead of "add".
func TestWorkloadScope_ObservedCallToHiddenServiceSaysWhy(t *testing.T) {
	vault := heredoc(`apiVersion: v1
kind: Service
metadata:
  name: vault
  namespace: data
  annotations:
    networking.istio.io/exportTo: "."
spec:
  selector: {app: vault}
  ports:
  - {name: http, port: 8200}`)
	snap := filepath.Join(t.TempDir(), "observed.json")
	if err := os.WriteFile(snap, []byte(`{"status":"success","data":{"resultType":"vector","result":[
{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":"test-app","source_workload_namespace":"foo","destination_service":"vault.data.svc.cluster.local","destination_service_name":"PassthroughCluster","request_protocol":"http"},"value":[1733300000,"12"]},
{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"destination","source_workload":"test-app","source_workload_namespace":"foo","destination_service":"vault.data.svc.cluster.local","destination_service_name":"vault","destination_service_namespace":"data","request_protocol":"http"},"value":[1733300000,"12"]}
]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &diagRecorder{}
	config := seedProvider(t, []string{vault}, fmt.Sprintf("observed_traffic_file = %q", snap)) + seedScopes
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Scope Cuts Observed Calls", attr: "dependencies", detail: regexp.MustCompile(
					`(?s)"foo/Deployment/test-app".*vault\.data\.svc\.cluster\.local: 12 requests, through PassthroughCluster today; ` +
						`no scope of this namespace can route it, \{ service = "vault\.data" \} is refused: Service Not Visible: .*not exported to namespace "foo".*\n` +
						`Under ALLOW_ANY these calls .*under REGISTRY_ONLY they would fail\. Calls no scope can route need their Service exported to the namespace first\.$`)},
			}},
		}},
	})
	for _, w := range rec.warnings() {
		if regexp.MustCompile(`add \{ service = "vault\.data"|Add the elements above`).MatchString(w.Detail) {
			t.Errorf("a warning tells the user to add a dependency the compiler refuses: %s", w.Detail)
		}
	}
}
