package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "diff", name)
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
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
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
