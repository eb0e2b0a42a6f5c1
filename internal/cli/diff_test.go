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

// TestDiffSeed: tightening foo's scope gives foo 19 -> 13, and bar is unchanged.
func TestDiffSeed(t *testing.T) {
	for _, o := range []string{"table", "markdown", "json"} {
		code, out, errs := run(t, "", "diff", "--base", "testdata/diff/base", "--head", "testdata/diff/head", "-o", o)
		if code != ExitChanged {
			t.Fatalf("-o %s: exit %d, want 3: %s", o, code, errs)
		}
		golden(t, "seed."+o, out)
	}
	code, out, _ := run(t, "", "diff", "--base", "testdata/diff/base", "--head", "testdata/diff/base")
	if code != ExitOK || out != "No proxy's cluster list changes.\n" {
		t.Errorf("no change: exit %d, %q", code, out)
	}
	code, _, errs := run(t, "", "diff", "--base", "testdata/diff/base", "--head", "testdata/missing")
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
	seed, _ := os.ReadFile("testdata/seed.yaml")
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
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", ns)
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
