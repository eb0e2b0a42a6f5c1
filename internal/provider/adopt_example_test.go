package provider

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// examples/adopt: a small mesh and the answer of Prometheus to meshscope's query about its calls
// (issue 10). suggest on them gives scopes that plan clean; without one dependency, the plan
// warns with the workload, the host and the count.

var updateAdopt = flag.Bool("update-adopt", false, "rewrite examples/adopt/observed.json from a real Prometheus")

// adoptCalls are the calls of examples/adopt over the window, as Istio's proxies count them.
func adoptCalls() []testenv.IstioCall {
	// Every HTTP and gRPC caller of the example is in namespace shop.
	http := func(reporter, wl, svc, svcNs string, n int) testenv.IstioCall {
		return testenv.IstioCall{Reporter: reporter, SourceWorkload: wl, SourceNamespace: "shop",
			DestinationService: svc + "." + svcNs + ".svc.cluster.local", DestinationServiceName: svc,
			DestinationServiceNamespace: svcNs, Protocol: "http", Count: n}
	}
	grpc := http("source", "checkout", "payments", "pay", 1204)
	grpc.Protocol = "grpc"
	grpcServer := grpc
	grpcServer.Reporter = "destination"
	redis := http("source", "cart", "redis", "shop", 342)
	redis.Protocol = "tcp"
	return []testenv.IstioCall{
		http("source", "web", "checkout", "shop", 1300),
		http("destination", "web", "checkout", "shop", 1296),
		http("source", "web", "cart", "shop", 5210),
		http("source", "checkout", "cart", "shop", 610),
		grpc, grpcServer, redis,
		{Reporter: "source", SourceWorkload: "payments", SourceNamespace: "pay", DestinationService: "api.stripe.com",
			DestinationServiceName: "api.stripe.com", Protocol: "tcp", Count: 88},
	}
}

func adoptDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../examples/adopt")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// The shipped snapshot is what a real Prometheus holding those calls answers to meshscope's
// query (at the instant the samples end, so the counts are whole).
func TestAdoptExample_SnapshotIsPrometheusAnswer(t *testing.T) {
	live := testenv.AnswerFor(t, adoptCalls(), traffic.Query(traffic.DefaultWindow))
	file := filepath.Join(adoptDir(t), "observed.json")
	if *updateAdopt {
		testenv.WriteAnswer(t, file, live)
	}
	want, err := traffic.ParseSnapshot("live", live)
	if err != nil {
		t.Fatal(err)
	}
	got, err := traffic.ReadSnapshot(file)
	if err != nil {
		t.Fatal(err)
	}
	key := func(s []traffic.Series) []string {
		var out []string
		for _, x := range s {
			out = append(out, fmt.Sprintf("%+v", x))
		}
		slices.Sort(out)
		return out
	}
	if g, w := key(got.Series), key(want.Series); !slices.Equal(g, w) || got.Window != want.Window || len(g) != 8 {
		t.Errorf("examples/adopt/observed.json holds\n%s\nbut Prometheus answers\n%s\n(go test ./internal/provider -run TestAdoptExample_SnapshotIsPrometheusAnswer -update-adopt rewrites it)",
			strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// suggest writes scopes for examples/adopt that plan with no error, no warning and no observed
// call missing, with observed_traffic = "error"; the existing cart Sidecar is imported.
func TestAdoptExample_SuggestPlansClean(t *testing.T) {
	scopes := suggestAdopt(t)
	for _, want := range []string{`resource "meshscope_workload_scope" "shop_web"`, `import {`, `{ service = "cart.shop", ports = [80] },`} {
		if !strings.Contains(scopes, want) {
			t.Fatalf("suggest output lacks %s:\n%s", want, scopes)
		}
	}
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: adoptProvider(t) + scopes,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectNoWarnings{rec: rec},
				nothingObservedMissing{scopes: 4},
			}},
		}},
	})
}

// Without one dependency, the plan warns with the workload, the host, the count and the element.
func TestAdoptExample_DroppedDependencyWarns(t *testing.T) {
	scopes := suggestAdopt(t)
	dropped := regexp.MustCompile(`(?m)^\s*# [0-9,]+ requests over 7d\n\s*\{ service = "cart\.shop", ports = \[80\] \},\n`)
	// web's block is the last in namespace shop that calls cart: drop it there only.
	web := strings.Index(scopes, `"shop_web"`)
	if web < 0 {
		t.Fatalf("no shop_web scope in:\n%s", scopes)
	}
	loc := dropped.FindStringIndex(scopes[web:])
	if loc == nil {
		t.Fatalf("shop_web does not declare cart.shop:\n%s", scopes[web:])
	}
	scopes = scopes[:web+loc[0]] + scopes[web+loc[1]:]
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: adoptProvider(t, `observed_traffic = "warn"`) + scopes,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning{rec: rec, summary: "Scope Cuts Observed Calls", attr: "dependencies", detail: regexp.MustCompile(
					`"shop/Deployment/web" would have no cluster for 1 destination\(s\) it called over the last 7d \(the observed traffic file .*observed\.json\):\n` +
						`  - cart\.shop\.svc\.cluster\.local: 5,210 requests; add \{ service = "cart\.shop", ports = \[80\] \}\n`)},
			}},
		}},
	})
}

func suggestAdopt(t *testing.T) string {
	t.Helper()
	dir := adoptDir(t)
	var out, errOut bytes.Buffer
	if rc := cli.Run("dev", []string{"suggest", "-f", filepath.Join(dir, "manifests"), "--observed", filepath.Join(dir, "observed.json"), "--quiet"},
		strings.NewReader(""), &out, &errOut); rc != 0 {
		t.Fatalf("suggest exited %d: %s", rc, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("suggest reported on stderr: %s", errOut.String())
	}
	return out.String()
}

func adoptProvider(t *testing.T, settings ...string) string {
	dir := adoptDir(t)
	if len(settings) == 0 {
		settings = []string{`observed_traffic = "error"`}
	}
	return fmt.Sprintf("provider \"meshscope\" {\n  manifests = [for f in fileset(%q, \"*.yaml\") : file(\"%s/${f}\")]\n  observed_traffic_file = %q\n  %s\n}\n",
		filepath.Join(dir, "manifests"), filepath.Join(dir, "manifests"), filepath.Join(dir, "observed.json"), strings.Join(settings, "\n  "))
}

// nothingObservedMissing checks that the plan holds the number of workload scopes given, and
// that every review element of each was checked and found nothing missing.
type nothingObservedMissing struct{ scopes int }

func (c nothingObservedMissing) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	n := 0
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Type != "meshscope_workload_scope" {
			continue
		}
		n++
		after, _ := rc.Change.After.(map[string]any)
		reviews, _ := after["review"].([]any)
		if len(reviews) == 0 {
			resp.Error = fmt.Errorf("%s reviews no workload", rc.Address)
			return
		}
		for _, r := range reviews {
			e, _ := r.(map[string]any)
			if count := fmt.Sprint(e["observed_missing_count"]); count != "0" {
				resp.Error = fmt.Errorf("%s: %v has observed_missing_count %v, want 0 (checked)", rc.Address, e["workload"], e["observed_missing_count"])
				return
			}
		}
	}
	if n != c.scopes {
		resp.Error = fmt.Errorf("the plan holds %d workload scopes, want %d", n, c.scopes)
	}
}
