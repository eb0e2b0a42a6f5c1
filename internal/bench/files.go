package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// EnvDir names a directory of mesh files written by WriteFiles. The benchmarks
// here and in the conformance module read the meshes from it when it is set.
const EnvDir = "MESHSCOPE_BENCH_DIR"

// MeshFile is the inventory of the n-service mesh.
func MeshFile(dir string, n int) string { return filepath.Join(dir, fmt.Sprintf("mesh-%d.yaml", n)) }

// SidecarsFile holds the Sidecars of a policy other than PolicyNone.
func SidecarsFile(dir string, n int, p Policy) string {
	return filepath.Join(dir, fmt.Sprintf("sidecars-%d-%s.yaml", n, p))
}

// ProxiesFile lists the proxies of the mesh as JSON.
func ProxiesFile(dir string, n int) string {
	return filepath.Join(dir, fmt.Sprintf("proxies-%d.json", n))
}

// Files returns the YAML files that make up the n-service mesh under policy p.
func Files(dir string, n int, p Policy) []string {
	if p == PolicyNone {
		return []string{MeshFile(dir, n)}
	}
	return []string{MeshFile(dir, n), SidecarsFile(dir, n, p)}
}

// WriteFiles writes the mesh, the Sidecars of every policy and the proxy list
// into dir, and returns the inventory of the mesh without Sidecars.
func WriteFiles(dir string, m *Mesh) (*mesh.Inventory, error) {
	n := m.Spec.Services
	y := m.YAML()
	if err := os.WriteFile(MeshFile(dir, n), y, 0o644); err != nil {
		return nil, err
	}
	inv := mesh.New()
	if err := inv.AddYAML(MeshFile(dir, n), y); err != nil {
		return nil, err
	}
	for _, p := range Policies {
		if p == PolicyNone {
			continue
		}
		sc, err := m.SidecarsYAML(p, inv)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(SidecarsFile(dir, n, p), sc, 0o644); err != nil {
			return nil, err
		}
	}
	js, err := json.Marshal(m.Proxies)
	if err != nil {
		return nil, err
	}
	return inv, os.WriteFile(ProxiesFile(dir, n), js, 0o644)
}

// ReadProxies reads the proxy list of the n-service mesh.
func ReadProxies(dir string, n int) ([]Proxy, error) {
	b, err := os.ReadFile(ProxiesFile(dir, n))
	if err != nil {
		return nil, err
	}
	var out []Proxy
	return out, json.Unmarshal(b, &out)
}

// Load reads the n-service mesh under policy p from dir.
func Load(dir string, n int, p Policy) (*mesh.Inventory, error) {
	inv := mesh.New()
	return inv, inv.LoadPaths(Files(dir, n, p), nil)
}
