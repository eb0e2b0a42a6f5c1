package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(DefaultSpec(300)), Generate(DefaultSpec(300))
	if string(a.YAML()) != string(b.YAML()) || fmt.Sprint(a.Apps) != fmt.Sprint(b.Apps) {
		t.Fatal("the generator is not deterministic")
	}
	if len(a.Namespaces) != 30 || len(a.Proxies) != 600 {
		t.Fatalf("got %d namespaces and %d proxies, want 30 and 600", len(a.Namespaces), len(a.Proxies))
	}
	// The skew: the most called service takes far more than its share of the calls.
	calls := map[string]int{}
	total := 0
	for _, app := range a.Apps {
		if len(app.Deps) != 5 {
			t.Fatalf("%s has %d dependencies, want 5", app.Name, len(app.Deps))
		}
		for _, d := range app.Deps {
			calls[d.Service]++
			total++
		}
	}
	top := 0
	for _, n := range calls {
		top = max(top, n)
	}
	if top*len(a.Apps) < 10*total {
		t.Errorf("the busiest service has %d of %d calls: no hub", top, total)
	}
}

// TestScopeFloor checks the floor claim on a small mesh: meshscope's scopes with
// system_hosts [] hold exactly the floor, and the default system hosts add
// istiod's four ports.
func TestScopeFloor(t *testing.T) {
	m := Generate(DefaultSpec(200))
	base := mesh.New()
	if err := base.AddYAML("mesh", m.YAML()); err != nil {
		t.Fatal(err)
	}
	sidecars := map[Policy][]byte{}
	for _, p := range Policies {
		y, err := m.SidecarsYAML(p, base)
		if err != nil {
			t.Fatal(err)
		}
		sidecars[p] = y
	}
	rows, err := FloorRows(m, base, sidecars)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%-16s mean %.1f p50 %d max %d at floor %d/%d (floor mean %.1f)", r.Policy, r.Stats.Mean, r.Stats.P50, r.Stats.Max, r.AtFloor, r.Proxies, r.Floor.Mean)
		switch r.Policy {
		case PolicyMeshscopeBare:
			if r.AtFloor != r.Proxies {
				t.Errorf("%s: %d of %d proxies at the floor", r.Policy, r.AtFloor, r.Proxies)
			}
		case PolicyMeshscope:
			if r.Stats.Mean != r.Floor.Mean+4 {
				t.Errorf("%s: mean %.2f, want the floor's %.2f + 4 istiod ports", r.Policy, r.Stats.Mean, r.Floor.Mean)
			}
		case PolicyNone:
			// 200 services x 2 ports, istiod 4, kube-dns 2, kubernetes 1, 2 inbound, 3 fixed.
			if r.Stats.Max != 400+4+2+1+2+3 {
				t.Errorf("%s: max %d", r.Policy, r.Stats.Max)
			}
		}
	}
}

// The manifest-resource configurations declare every Sidecar once, by
// namespace and name, with the object meshscope compiled.
func TestTerraformManifestConfigs(t *testing.T) {
	sidecars := []byte(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, namespace: a, labels: {app.kubernetes.io/managed-by: meshscope}}
spec:
  workloadSelector: {labels: {app: web}}
  egress: [{hosts: ["istio-system/*", "b/api.b.svc.cluster.local"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, namespace: b}
spec:
  egress: [{hosts: ["./*"]}]
`)
	read := func(t *testing.T, dir, kind string) map[string]map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "sidecars.tf.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Resource map[string]map[string]map[string]any `json:"resource"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		return cfg.Resource[kind]
	}
	dir := t.TempDir()
	n, err := TerraformManifests(dir, sidecars, "/kubeconfig")
	if err != nil || n != 2 {
		t.Fatalf("TerraformManifests = %d, %v; want 2 resources", n, err)
	}
	km := read(t, dir, "kubernetes_manifest")
	obj, _ := km["a_web"]["manifest"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	egress, _ := spec["egress"].([]any)
	if len(km) != 2 || obj["kind"] != "Sidecar" || len(egress) != 1 {
		t.Errorf("kubernetes_manifest resources = %v", km)
	}
	dir = t.TempDir()
	if n, err := TerraformKubectlManifests(dir, sidecars, "/kubeconfig"); err != nil || n != 2 {
		t.Fatalf("TerraformKubectlManifests = %d, %v; want 2 resources", n, err)
	}
	kc := read(t, dir, "kubectl_manifest")
	body, _ := kc["b_web"]["yaml_body"].(string)
	var parsed struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &parsed); err != nil || parsed.Metadata.Namespace != "b" {
		t.Errorf("kubectl_manifest b_web yaml_body = %q (%v)", body, err)
	}
}
