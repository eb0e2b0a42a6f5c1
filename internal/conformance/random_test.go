package conformance

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	flagMeshes      = flag.Int("meshscope.meshes", envInt("MESHSCOPE_MESHES", 300), "number of random meshes for TestRandomMeshes (env MESHSCOPE_MESHES)")
	flagSeed        = flag.Uint64("meshscope.seed", uint64(envInt("MESHSCOPE_SEED", 1)), "first seed for TestRandomMeshes (env MESHSCOPE_SEED)")
	flagIstioMeshes = flag.Int("meshscope.istio-meshes", envInt("MESHSCOPE_ISTIO_MESHES", 40), "number of random meshes for the Istio-only TestRandomMeshesIstio")
)

func envInt(k string, def int) int {
	if v := os.Getenv(k); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic(fmt.Sprintf("%s=%q: %v", k, v, err))
		}
		return n
	}
	return def
}

// checkIstioSanity asserts invariants every sidecar's CDS must satisfy
// (catches harness breakage, e.g. a proxy that never got a sidecar scope).
func checkIstioSanity(t testing.TB, label string, m Mesh, got IstioResult) {
	t.Helper()
	for _, px := range m.Proxies {
		names := got[px.Key()]
		set := map[string]bool{}
		for _, n := range names {
			// Only two non-UDP ports of one number repeat a name (R32); the generator
			// makes no SCTP port, so a repeat here is harness breakage.
			if set[n] {
				t.Errorf("%s proxy %s: duplicate cluster %s", label, px.Key(), n)
			}
			set[n] = true
		}
		for _, f := range fixed {
			if !set[f] {
				t.Errorf("%s proxy %s: missing %s; got %v", label, px.Key(), f, names)
			}
		}
	}
}

// TestRandomMeshesIstio runs only Istio on a few random meshes (no CLI needed):
// it exercises the generator and the harness.
func TestRandomMeshesIstio(t *testing.T) {
	for i := 0; i < *flagIstioMeshes; i++ {
		seed := *flagSeed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			m := GenerateMesh(seed)
			got := IstioClusters(t, m.YAML, m.Proxies)
			checkIstioSanity(t, fmt.Sprintf("seed=%d", seed), m, got)
		})
	}
}

// TestRandomMeshes compares the CLI with Istio on *flagMeshes seeded random
// meshes, every proxy of each. Reproduce one mesh with
//
//	MESHSCOPE_SEED=<seed> MESHSCOPE_MESHES=1 go test -run TestRandomMeshes
func TestRandomMeshes(t *testing.T) {
	requireCLI(t)
	start := time.Now()
	var mu sync.Mutex
	var failed []string
	proxies, meshes := 0, 0
	t.Run("meshes", func(t *testing.T) {
		for i := 0; i < *flagMeshes; i++ {
			seed := *flagSeed + uint64(i)
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				m := GenerateMesh(seed)
				label := fmt.Sprintf("seed=%d", seed)
				got := IstioClusters(t, m.YAML, m.Proxies)
				checkIstioSanity(t, label, m, got)
				bad := compareCase(t, label, []string{m.YAML}, m.Proxies, got)
				mu.Lock()
				defer mu.Unlock()
				meshes++
				proxies += len(m.Proxies)
				if bad > 0 {
					failed = append(failed, fmt.Sprintf("%d(%d/%d proxies)", seed, bad, len(m.Proxies)))
				}
			})
		}
	})
	sort.Strings(failed)
	t.Logf("%d meshes, %d proxies compared in %v; %d meshes mismatched", meshes, proxies, time.Since(start).Round(time.Second), len(failed))
	if len(failed) > 0 {
		t.Errorf("mismatching seeds: %s", strings.Join(failed, " "))
	}
}
