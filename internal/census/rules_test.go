package census_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestCensusRules: every census rule of RULES.md (C1, C2, ...) is cited by the census code,
// and the code cites no rule RULES.md lacks.
func TestCensusRules(t *testing.T) {
	b, err := os.ReadFile("../predict/RULES.md")
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, m := range regexp.MustCompile(`(?m)^### (C\d+): `).FindAllStringSubmatch(string(b), -1) {
		entries = append(entries, m[1])
	}
	if len(entries) == 0 {
		t.Fatal("RULES.md has no census rule")
	}
	files, _ := filepath.Glob("*.go")
	cited := map[string]bool{}
	cite := regexp.MustCompile(`\b(C\d+)\b`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cite.FindAllStringSubmatch(string(src), -1) {
			cited[m[1]] = true
		}
	}
	for _, e := range entries {
		if !cited[e] {
			t.Errorf("RULES.md's %s is cited nowhere in the census code", e)
		}
	}
	for c := range cited {
		if !slices.Contains(entries, c) {
			t.Errorf("the census code cites %s, which RULES.md lacks", c)
		}
	}
}

// TestVMsAreReported: WorkloadEntries and WorkloadGroups are counted and named, not dropped.
func TestVMsAreReported(t *testing.T) {
	inv := mesh.New()
	err := inv.AddYAML("vm.yaml", []byte(`apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: foo}
spec: {address: 10.1.0.1, labels: {app: legacy}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: vms, namespace: foo}
spec: {template: {labels: {app: legacy}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := census.Take(inv)
	if got := c.VMSentence(); len(c.VMs()) != 2 || !strings.Contains(got, "WorkloadEntry foo/vm-1") || !strings.Contains(got, "not model") {
		t.Errorf("VMs %d, %q", len(c.VMs()), got)
	}
}
