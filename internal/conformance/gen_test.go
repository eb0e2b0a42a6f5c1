package conformance

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestGeneratorDeterministic checks that a seed always yields the same mesh and
// that every generated inventory is accepted by the Istio-side parser.
func TestGeneratorDeterministic(t *testing.T) {
	total := map[string]int{}
	rejected := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := GenerateMesh(seed), GenerateMesh(seed)
		if a.YAML != b.YAML {
			t.Fatalf("seed %d: generator is not deterministic", seed)
		}
		if _, err := ParseInventory(a.YAML); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for k, v := range a.Stats {
			total[k] += v
		}
		for k, v := range a.Rejected {
			rejected[k] += v
		}
	}
	t.Logf("construct counts over 200 meshes:\n%s", formatCounts(total))
	t.Logf("regenerated after Istio validation rejected them:\n%s", formatCounts(rejected))
	for k := range total {
		if strings.HasSuffix(k, "/gave-up") {
			t.Errorf("generator gave up on %s %d times", k, total[k])
		}
	}
	if p := os.Getenv("MESHSCOPE_DUMP_SEED"); p != "" {
		var s uint64
		fmt.Sscan(p, &s)
		t.Logf("seed %s:\n%s", p, GenerateMesh(s).YAML)
	}
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-45s %d\n", k, m[k])
	}
	return b.String()
}
