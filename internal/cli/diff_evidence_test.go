package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// diff on the evidence mesh (issue 23), with the answer a real Prometheus gives for its calls.
// The head gives shop/web a Sidecar that imports checkout-v2.shop, which Istio's metrics name,
// but not checkout.shop, whose VirtualService routes there, and not cart.shop.
func TestDiffEvidenceMesh(t *testing.T) {
	sidecar := `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, namespace: shop}
spec:
  workloadSelector: {labels: {app: web}}
  egress: [{hosts: [shop/checkout-v2.shop.svc.cluster.local, istio-system/*]}]
`
	base := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Evidence})
	head := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Evidence, "sidecar.yaml": sidecar})
	observed := filepath.Join(fixture.Dir(t, map[string]string{"observed.json": fixture.EvidenceObserved}), "observed.json")
	code, out, errs := run(t, "", "diff", "--base", base, "--head", head, "--observed", observed, "-o", "json")
	if code != ExitChanged {
		t.Fatalf("exit %d, want 3: %s", code, errs)
	}
	var doc struct {
		Changes []struct {
			Workload string `json:"workload"`
			Risks    []struct{ Kind, Host, Message string }
			Cut      []CutCall `json:"observed_cut"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || doc.Changes[0].Workload != "Deployment/web" {
		t.Fatalf("changes = %+v, want web's only", doc.Changes)
	}
	web := doc.Changes[0]
	// One call, counted once: cart's 1,000 requests are one cut row, on port 80.
	if len(web.Cut) != 1 || web.Cut[0].Host != "cart.shop.svc.cluster.local" || web.Cut[0].Port != 80 || web.Cut[0].Count != 1000 || !web.Cut[0].New {
		t.Errorf("cut = %+v, want cart.shop:80 with 1000 requests, new", web.Cut)
	}
	var rerouted []string
	for _, r := range web.Risks {
		if r.Kind == "rerouted_host_dropped" {
			rerouted = append(rerouted, r.Host+": "+r.Message)
		}
	}
	if len(rerouted) != 1 || !strings.Contains(rerouted[0], "checkout.shop.svc.cluster.local: drops checkout.shop.svc.cluster.local, whose VirtualService shop/checkout routes to checkout-v2.shop.svc.cluster.local") ||
		!strings.Contains(rerouted[0], `declare { service = "checkout.shop", ports = [80] }`) {
		t.Errorf("rerouted risks = %q", rerouted)
	}
	_, md, _ := run(t, "", "diff", "--base", base, "--head", head, "--observed", observed, "-o", "markdown")
	if !strings.Contains(md, "VirtualService shop/checkout") || strings.Count(md, "cart.shop.svc.cluster.local:80") != 1 {
		t.Errorf("markdown lacks the rerouted risk, or lists cart's call twice:\n%s", md)
	}
}

// suggest on the evidence mesh: one call counted once, the passthrough remainder, the rerouted
// host, and the unknown caller's totals by unit.
func TestSuggestEvidenceMesh(t *testing.T) {
	mesh := filepath.Join(fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Evidence}), "mesh.yaml")
	observed := filepath.Join(fixture.Dir(t, map[string]string{"observed.json": fixture.EvidenceObserved}), "observed.json")
	code, out, errs := run(t, "", "suggest", "-f", mesh, "--observed", observed)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"# 1,000 requests over 7d\n    { service = \"cart.shop\", ports = [80] },",
		"{ service = \"checkout.shop\", ports = [80] },",
		"400 connections over 7d to an address Istio could not name (tcp) went through PassthroughCluster.",
		"Possibly db.data.svc.cluster.local",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("suggest output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Possibly") != 1 {
		t.Errorf("only worker's connections are of the order db counted:\n%s", out)
	}
	if !strings.Contains(errs, "shop/gone: 2,110 requests and 100 connections over 7d") {
		t.Errorf("stderr lacks the unknown caller's totals by unit:\n%s", errs)
	}
}
