package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenFile(t, filepath.Join("testdata", "diff", name), got)
}

// goldenFile compares got with the file at path; go test -update rewrites it.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// seedTrees writes the two manifest trees of TestDiffSeed: base is the seed mesh with a
// VirtualService of bar routing to foo (testdata/diff/vs.yaml); head adds the compiled Sidecar
// of foo's scope.
func seedTrees(t *testing.T) (base, head string) {
	t.Helper()
	vs, err := os.ReadFile(filepath.Join("testdata", "diff", "vs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base = fixture.Dir(t, map[string]string{"seed.yaml": fixture.Seed, "vs.yaml": string(vs)})
	head = fixture.Dir(t, map[string]string{"seed.yaml": fixture.Seed, "vs.yaml": string(vs), "sidecar.yaml": fixture.SidecarFoo})
	return base, head
}

// TestDiffSeed: tightening foo's scope gives foo 19 -> 13, and bar is unchanged.
func TestDiffSeed(t *testing.T) {
	base, head := seedTrees(t)
	for _, o := range []string{"table", "markdown", "json"} {
		code, out, errs := run(t, "", "diff", "--base", base, "--head", head, "-o", o)
		if code != ExitChanged {
			t.Fatalf("-o %s: exit %d, want 3: %s", o, code, errs)
		}
		golden(t, "seed."+o, out)
	}
	code, out, _ := run(t, "", "diff", "--base", base, "--head", base)
	if code != ExitOK || out != "No proxy's cluster list changes.\n" {
		t.Errorf("no change: exit %d, %q", code, out)
	}
	code, _, errs := run(t, "", "diff", "--base", base, "--head", "testdata/missing")
	if code != ExitError || errs == "" {
		t.Errorf("missing head: exit %d, %q", code, errs)
	}
	if code, _, _ := run(t, "", "diff", "--base", "x"); code != ExitUsage {
		t.Errorf("missing --head: exit %d, want 2", code)
	}
}

// TestDiffRisk flags a port-level scope that keeps a VirtualService's host but
// drops its destination (the destination has no port 80), and the loss of every
// root-namespace service.
func TestDiffRisk(t *testing.T) {
	dir := t.TempDir()
	seed := []byte(fixture.Seed)
	vs := []byte(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: to-api, namespace: bar}
spec:
  hosts: [bar]
  http:
  - route:
    - destination: {host: kubernetes.default.svc.cluster.local}
`)
	base := filepath.Join(dir, "base.yaml")
	head := filepath.Join(dir, "head.yaml")
	_ = os.WriteFile(base, append(append(seed, "\n---\n"...), vs...), 0o644)
	sc := `
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bar}
spec:
  egress: [{port: {number: 80, protocol: HTTP, name: http}, hosts: ["./*"]}]
`
	_ = os.WriteFile(head, append(append(append(seed, "\n---\n"...), vs...), sc...), 0o644)
	code, out, _ := run(t, "", "diff", "--base", base, "--head", head, "-o", "json")
	if code != ExitChanged {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{`"drops kubernetes.default.svc.cluster.local, a destination of a VirtualService still in scope"`, `no service of the root namespace \"istio-system\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("json lacks %s:\n%s", want, out)
		}
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Changes       []struct {
			Workload      string `json:"workload"`
			Before, After int
			Delta         int `json:"delta"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.SchemaVersion != 1 || len(doc.Changes) == 0 {
		t.Fatalf("json document: %v, %+v", err, doc)
	}
	for _, c := range doc.Changes {
		if c.Delta != c.After-c.Before || c.Delta == 0 {
			t.Errorf("%s: delta %d, before %d, after %d", c.Workload, c.Delta, c.Before, c.After)
		}
	}
}

// rolloutMesh writes a mesh of nsCount namespaces with perNs services and one workload each
// (base), and the same mesh with a namespace-default Sidecar in every namespace (head): the
// mesh-wide first rollout, where every workload loses nearly every host.
func rolloutMesh(t testing.TB, nsCount, perNs int) (base, head string) {
	t.Helper()
	var b, sc strings.Builder
	for n := 0; n < nsCount; n++ {
		ns := fmt.Sprintf("team-%03d", n)
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {istio-injection: enabled}}\n---\n", ns)
		for s := 0; s < perNs; s++ {
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, namespace: %s}\nspec: {selector: {app: app-%d}, ports: [{name: http, port: 80}]}\n---\n", s, ns, s)
		}
		fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app-0, namespace: %s}\nspec: {template: {metadata: {labels: {app: app-0}}, spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}}}\n---\n", ns)
		fmt.Fprintf(&sc, "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: %s}\nspec: {egress: [{hosts: [\"./*\", \"istio-system/*\"]}]}\n---\n", ns)
	}
	dir := t.TempDir()
	base, head = filepath.Join(dir, "base.yaml"), filepath.Join(dir, "head.yaml")
	if err := os.WriteFile(base, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte(b.String()+sc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return base, head
}

// TestDiffRollout_Bounded: on a mesh-wide rollout, host lists are capped per row with full
// counts, markdown fits a pull-request comment with the largest changes first and says how many
// it left out, and json keeps full counts; --host-limit 0 and --full give everything.
func TestDiffRollout_Bounded(t *testing.T) {
	base, head := rolloutMesh(t, 60, 8) // 480 services; every workload drops 472 of them
	code, out, errs := run(t, "", "diff", "--base", base, "--head", head, "-o", "json")
	if code != ExitChanged {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var doc struct {
		SchemaVersion int       `json:"schema_version"`
		Changes       []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json does not parse: %v", err)
	}
	if len(doc.Changes) != 60 {
		t.Fatalf("json: %d changed workloads, want 60", len(doc.Changes))
	}
	for _, r := range doc.Changes {
		if len(r.RemovedHosts) != DefaultHostLimit || r.RemovedHostCount != 472 || len(r.RemovedClusters) != DefaultHostLimit ||
			r.RemovedClusterCount != 472 || r.Delta != r.After-r.Before || r.Delta != -472 {
			t.Fatalf("json row %s/%s: %d of %d hosts, %d of %d clusters, delta %d", r.Namespace, r.Workload,
				len(r.RemovedHosts), r.RemovedHostCount, len(r.RemovedClusters), r.RemovedClusterCount, r.Delta)
		}
	}
	_, all, _ := run(t, "", "diff", "--base", base, "--head", head, "-o", "json", "--host-limit", "0")
	if err := json.Unmarshal([]byte(all), &doc); err != nil || len(doc.Changes[0].RemovedHosts) != 472 {
		t.Errorf("--host-limit 0: %v, %d hosts listed", err, len(doc.Changes[0].RemovedHosts))
	}

	_, table, _ := run(t, "", "diff", "--base", base, "--head", head)
	if !strings.Contains(table, "(+447 more)") {
		t.Errorf("table rows do not say how many hosts they leave out")
	}

	_, md, _ := run(t, "", "diff", "--base", base, "--head", head, "-o", "markdown")
	if len(md) > MarkdownLimit || !strings.Contains(md, "60 workloads change") || !regexp.MustCompile(`\n\d+ more workloads change`).MatchString(md) {
		t.Errorf("markdown: %d characters (limit %d), summary or 'more' line missing:\n%.400s", len(md), MarkdownLimit, md)
	}
	_, mdFull, _ := run(t, "", "diff", "--base", base, "--head", head, "-o", "markdown", "--full")
	if strings.Count(mdFull, "\n| team-") != 60 {
		t.Errorf("--full: %d rows, want 60", strings.Count(mdFull, "\n| team-"))
	}
	if code, _, errs := run(t, "", "diff", "--base", base, "--head", head, "--host-limit", "-1"); code != ExitUsage || !strings.Contains(errs, "--host-limit -1") {
		t.Errorf("--host-limit -1: exit %d, %q", code, errs)
	}
}

// observedHead writes the head tree of the observed-diff tests: the suggest test mesh, plus a
// Sidecar that narrows shop/web to istiod and its own service. It cuts web's calls to cart and
// api.example.com (new); web's calls to payments are cut today already, by shop's namespace
// default, as are other workloads' calls whose cluster list does not change.
func observedHead(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mesh.yaml"), readFile(t, suggestMesh), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, namespace: shop}
spec:
  workloadSelector: {labels: {app: web, version: v1}}
  egress: [{hosts: ["istio-system/istiod.istio-system.svc.cluster.local", "./web.shop.svc.cluster.local"]}]
`
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(sc), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDiffObserved: with evidence, the review flags per workload the observed calls the head
// tree cuts, new ones apart from those cut today, also for workloads whose cluster list does
// not change, in each format; the exit status still says whether cluster lists change.
func TestDiffObserved(t *testing.T) {
	head := observedHead(t)
	for _, o := range []string{"table", "markdown", "json"} {
		code, out, errs := run(t, "", "diff", "--base", suggestMesh, "--head", head, "--observed", suggestObserved, "-o", o)
		if code != ExitChanged {
			t.Fatalf("-o %s: exit %d, want 3: %s", o, code, errs)
		}
		goldenFile(t, filepath.Join("testdata", "diff", "observed."+o), out)
		if !strings.Contains(errs, "shop/gone: 6 requests") {
			t.Errorf("-o %s: stderr does not report the unknown caller:\n%s", o, errs)
		}
	}
	_, out, _ := run(t, "", "diff", "--base", suggestMesh, "--head", head, "--observed", suggestObserved, "-o", "json")
	var doc struct {
		SchemaVersion int       `json:"schema_version"`
		Changes       []DiffRow `json:"changes"`
		Observed      struct {
			Window            string   `json:"window"`
			Series            int      `json:"series"`
			UnchangedCut      []CutRow `json:"unchanged_cut"`
			UnchangedCutCount int      `json:"unchanged_cut_count"`
		} `json:"observed"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || doc.Changes[0].ObservedCutCount != 3 || doc.Changes[0].ObservedCutNewCount != 2 ||
		!doc.Changes[0].ObservedCut[0].New || doc.Changes[0].ObservedCut[0].Dependency != "cart.shop" {
		t.Errorf("changes = %+v", doc.Changes)
	}
	if doc.SchemaVersion != 1 || doc.Observed.Window != "7d" || doc.Observed.Series != 18 || doc.Observed.UnchangedCutCount != 5 || len(doc.Observed.UnchangedCut) != 5 {
		t.Errorf("observed = %+v", doc.Observed)
	}
	for _, r := range doc.Observed.UnchangedCut {
		for _, c := range r.ObservedCut {
			if c.New {
				t.Errorf("%s/%s: %s is new, but its cluster list does not change", r.Namespace, r.Workload, c.Host)
			}
			if (c.Dependency == "vault.data") != (c.Unroutable != "") {
				t.Errorf("%s/%s: %s unroutable = %q (only vault.data, not exported to pay, is)", r.Namespace, r.Workload, c.Host, c.Unroutable)
			}
		}
	}

	// No change, but calls cut today: flagged, and the exit status is 0.
	code, table, _ := run(t, "", "diff", "--base", suggestMesh, "--head", suggestMesh, "--observed", suggestObserved)
	if code != ExitOK || !strings.HasPrefix(table, "No proxy's cluster list changes.\n") ||
		!strings.Contains(table, "this change cuts no observed call; calls to 7 destinations from 6 workloads are cut today already") ||
		!strings.Contains(table, "shop        Deployment/web-canary     payments.pay.svc.cluster.local (12 requests)") {
		t.Errorf("no change: exit %d:\n%s", code, table)
	}
	// Without evidence, the documents are those of before (the seed goldens cover them).
	if _, out, _ := run(t, "", "diff", "--base", suggestMesh, "--head", head, "-o", "json"); strings.Contains(out, "observed") {
		t.Errorf("json without evidence mentions observed calls:\n%s", out)
	}
}

// TestDiffObserved_Bounded: on the mesh-wide rollout, with every workload calling 40 services
// of other namespaces, the cut lists are capped at the host limit with full counts, and
// markdown still fits a pull-request comment.
func TestDiffObserved_Bounded(t *testing.T) {
	base, head := rolloutMesh(t, 60, 8)
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for n := 0; n < 60; n++ {
		for k := 1; k <= 40; k++ {
			if n > 0 || k > 1 {
				b.WriteString(",")
			}
			to := fmt.Sprintf("svc-%d.team-%03d.svc.cluster.local", k%8, (n+k)%60)
			fmt.Fprintf(&b, `{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":"app-0","source_workload_namespace":"team-%03d","destination_service":%q,"destination_service_name":"svc","request_protocol":"http"},"value":[1,"%d"]}`, n, to, 100+k)
		}
	}
	b.WriteString("]}}")
	snap := filepath.Join(t.TempDir(), "observed.json")
	if err := os.WriteFile(snap, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "diff", "--base", base, "--head", head, "--observed", snap, "-o", "json")
	if code != ExitChanged {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json does not parse: %v", err)
	}
	for _, r := range doc.Changes {
		if len(r.ObservedCut) != DefaultHostLimit || r.ObservedCutCount != 40 || r.ObservedCutNewCount != 40 {
			t.Fatalf("%s/%s: %d of %d cut calls listed (%d new)", r.Namespace, r.Workload, len(r.ObservedCut), r.ObservedCutCount, r.ObservedCutNewCount)
		}
	}
	_, md, _ := run(t, "", "diff", "--base", base, "--head", head, "--observed", snap, "-o", "markdown")
	if len(md) > MarkdownLimit || !strings.Contains(md, "this change cuts calls to 2,400 destinations") && !strings.Contains(md, "this change cuts calls to 2400 destinations") ||
		!regexp.MustCompile(`- \.\.\. and \d+ more\n`).MatchString(md) || !regexp.MustCompile(`\n\d+ more workloads change`).MatchString(md) {
		t.Errorf("markdown: %d characters (limit %d):\n%.1500s", len(md), MarkdownLimit, md)
	}
	_, table, _ := run(t, "", "diff", "--base", base, "--head", head, "--observed", snap)
	if !strings.Contains(table, "(+15 more)") {
		t.Errorf("table rows do not say how many cut calls they leave out")
	}
}

func TestDiffObserved_BadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n\"status\": \"success\",\n\"data\": [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--observed", suggestObserved, "--prometheus", "http://127.0.0.1:1"}, ExitUsage, "not both"},
		{[]string{"--window", "1d"}, ExitUsage, "--window applies to observed traffic"},
		{[]string{"--observed", suggestObserved, "--timeout", "3s"}, ExitUsage, "--timeout applies to --prometheus only"},
		{[]string{"--observed", bad}, ExitError, "bad.json: line"},
		{[]string{"--observed", suggestObserved, "--window", "1d"}, ExitError, "--window 1d"},
	} {
		args := append([]string{"diff", "--base", suggestMesh, "--head", suggestMesh}, tc.args...)
		code, out, errs := run(t, "", args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) || out != "" {
			t.Errorf("%v: exit %d (want %d), stderr %q, want %q", tc.args, code, tc.code, errs, tc.msg)
		}
	}
}

// BenchmarkDiffObserved is the GitOps review of the mesh-wide first rollout with evidence:
// `diff --observed` from bench's mesh of MESHSCOPE_DIFF_SERVICES services (5,000 by default)
// with no Sidecar to the same mesh with a namespace-default Sidecar ("./*", "istio-system/*")
// in every namespace, where every workload calls its service's dependencies (most of them in
// other namespaces, which the rollout cuts). Run it under /usr/bin/time -v for the peak RSS.
func BenchmarkDiffObserved(b *testing.B) {
	n := 5000
	if v := os.Getenv("MESHSCOPE_DIFF_SERVICES"); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			b.Fatal(err)
		}
	}
	m := bench.Generate(bench.DefaultSpec(n))
	sidecars, err := m.SidecarsYAML(bench.PolicyNamespace, nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	base, head := filepath.Join(dir, "base.yaml"), filepath.Join(dir, "head.yaml")
	snap := filepath.Join(dir, "observed.json")
	for path, data := range map[string][]byte{base: m.YAML(), head: append(m.YAML(), sidecars...), snap: benchSnapshot(m, "7d")} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, o := range []string{"table", "markdown", "json"} {
		b.Run(o, func(b *testing.B) {
			for range b.N {
				var out countingWriter
				var errb strings.Builder
				if code := Run("dev", []string{"diff", "--base", base, "--head", head, "--observed", snap, "-o", o, "--quiet"}, nil, &out, &errb); code != ExitChanged {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
				b.ReportMetric(float64(out.n), "output-bytes")
			}
		})
	}
}
