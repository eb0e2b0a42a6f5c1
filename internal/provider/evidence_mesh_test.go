package provider

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// The evidence mesh (issue 23): shop/web calls checkout.shop, whose VirtualService routes every
// request to checkout-v2.shop, and Istio's metrics name checkout-v2. Its series are a real
// Prometheus's answer (internal/fixture/evidence-observed.json); the tests keep web's only, so
// that nothing else in the evidence warns.

// evidenceFiles writes the evidence mesh and web's series of its snapshot, and returns their paths.
func evidenceFiles(t *testing.T) (manifests, observed string) {
	t.Helper()
	return evidenceFilesOf(t, 4, func(m map[string]string) bool { return m["source_workload"] == "web" })
}

// evidenceFilesOf is evidenceFiles with the series keep keeps, of which there must be n.
func evidenceFilesOf(t *testing.T, n int, keep func(labels map[string]string) bool) (manifests, observed string) {
	t.Helper()
	var doc struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(fixture.EvidenceObserved), &doc); err != nil {
		t.Fatal(err)
	}
	kept := doc.Data.Result[:0]
	for _, r := range doc.Data.Result {
		if keep(r.Metric) {
			kept = append(kept, r)
		}
	}
	if len(kept) != n {
		t.Fatalf("the snapshot holds %d series to keep, want %d", len(kept), n)
	}
	doc.Data.Result = kept
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	files := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Evidence, "observed.json": string(data)})
	return filepath.Join(files, "mesh.yaml"), filepath.Join(files, "observed.json")
}

func evidenceProvider(manifests, observed string, mode string) string {
	return "provider \"meshscope\" {\n  manifests = [file(" + quote(manifests) + ")]\n  observed_traffic_file = " + quote(observed) +
		"\n  observed_traffic = " + quote(mode) + "\n}\n"
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// suggest declares the host web calls (checkout.shop) with the one Istio counts, and its
// output plans without a warning, with observed_traffic = "error".
func TestEvidenceMesh_SuggestDeclaresTheReroutedHost(t *testing.T) {
	manifests, observed := evidenceFiles(t)
	var out, errOut bytes.Buffer
	if rc := cli.Run("dev", []string{"suggest", "-f", manifests, "--observed", observed, "--quiet"}, strings.NewReader(""), &out, &errOut); rc != 0 {
		t.Fatalf("suggest exited %d: %s", rc, errOut.String())
	}
	scopes := out.String()
	for _, want := range []string{
		`{ service = "checkout.shop", ports = [80] },`,
		`{ service = "checkout-v2.shop", ports = [80] },`,
		`# the VirtualService shop/checkout routes it to checkout-v2.shop, under which Istio counts its calls`,
		`# 1,000 requests over 7d` + "\n" + `    { service = "cart.shop", ports = [80] },`,
	} {
		if !strings.Contains(scopes, want) {
			t.Errorf("suggest output lacks %s:\n%s", want, scopes)
		}
	}
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: evidenceProvider(manifests, observed, "error") + scopes,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectNoWarnings{rec: rec},
				nothingObservedMissing{scopes: 1},
				plancheck.ExpectKnownValue("meshscope_workload_scope.shop_web", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("unobserved_dependencies"),
					knownvalue.ListExact(nil)),
			}},
		}},
	})
}

// A scope that imports only the rerouted-to host is warned about, naming the VirtualService and
// the element to add; the data source counts web's calls to cart once.
func TestEvidenceMesh_ScopeWithoutTheReroutedHostWarns(t *testing.T) {
	manifests, observed := evidenceFiles(t)
	rec := &diagRecorder{}
	config := evidenceProvider(manifests, observed, "error") + `
resource "meshscope_workload_scope" "web" {
  namespace         = "shop"
  workload_selector = { app = "web" }
  dependencies = [
    { service = "cart.shop", ports = [80] },
    { service = "checkout-v2.shop", ports = [80] },
  ]
}

data "meshscope_observed_dependencies" "web" {
  namespace         = "shop"
  workload_selector = { app = "web" }
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Rerouted Host Not Imported", attr: "dependencies", detail: regexp.MustCompile(
					`(?s)"shop/Deployment/web" would have no cluster for a host whose VirtualService routes to a host it called.*\n` +
						`  - checkout-v2\.shop\.svc\.cluster\.local: 1,000 requests, which the VirtualService shop/checkout routes to from ` +
						`checkout\.shop\.svc\.cluster\.local; add \{ service = "checkout\.shop", ports = \[80\] \}`)},
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.meshscope_observed_dependencies.web", tfjsonpath.New("calls"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectPartial(map[string]knownvalue.Check{"host": knownvalue.StringExact("cart.shop.svc.cluster.local"),
						"port": knownvalue.Int64Exact(80), "count": knownvalue.Int64Exact(1000)}),
					knownvalue.ObjectPartial(map[string]knownvalue.Check{"host": knownvalue.StringExact("checkout-v2.shop.svc.cluster.local"),
						"count": knownvalue.Int64Exact(1000)}),
				})),
			},
		}},
	})
}

// After a scope cuts a plaintext TCP call, neither proxy's series names both ends: the client's
// says "unknown", the server's has no caller. The plan says so, and names the server that
// counted as many connections as a hint, not as a dependency to add.
func TestEvidenceMesh_TCPCutAfterApplyIsAHintOnly(t *testing.T) {
	manifests, observed := evidenceFilesOf(t, 2, func(m map[string]string) bool {
		return m["source_workload"] == "worker" || m["destination_service_name"] == "db"
	})
	rec := &diagRecorder{}
	config := evidenceProvider(manifests, observed, "warn") + `
resource "meshscope_workload_scope" "worker" {
  namespace         = "shop"
  workload_selector = { app = "worker" }
  dependencies      = [{ service = "redis.data" }]
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Observed Calls Outside The Registry", attr: "dependencies", detail: regexp.MustCompile(
					`an address Istio could not name \(a TCP connection\): 300 connections through PassthroughCluster; possibly ` +
						`db\.data\.svc\.cluster\.local \(a hint, not evidence`)},
				plancheck.ExpectKnownValue("meshscope_workload_scope.worker", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("observed_missing_count"),
					knownvalue.Int64Exact(0)),
			}},
		}},
	})
}

// "pay/*" imports the ServiceEntries of pay: payments' calls to api.stripe.com and
// *.googleapis.com are observed under it, so it is not a candidate to drop.
func TestEvidenceMesh_NamespaceWildcardOverServiceEntriesIsObserved(t *testing.T) {
	manifests, observed := evidenceFilesOf(t, 2, func(m map[string]string) bool { return m["source_workload"] == "payments" })
	config := evidenceProvider(manifests, observed, "error") + `
resource "meshscope_workload_scope" "payments" {
  namespace         = "pay"
  workload_selector = { app = "payments" }
  dependencies      = [{ service = "pay/*" }]
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(&diagRecorder{}),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("meshscope_workload_scope.payments", tfjsonpath.New("review").AtSliceIndex(0),
					knownvalue.ObjectPartial(observedChecks([]string{}, 0, []string{}))),
			}},
		}},
	})
}
