package scope

import (
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Result is a compiled scope.
type Result struct {
	// Name is the Sidecar's metadata.name.
	Name string
	// Sidecar is the compiled object, ready for the predictor (mesh.Inventory.WithSidecars).
	Sidecar *mesh.Sidecar
	// Manifest is the networking.istio.io/v1 Sidecar YAML, byte-identical from run to run.
	Manifest string
	// EgressHosts are the sorted distinct egress hosts.
	EgressHosts []string
}

// Compile resolves the declaration against the inventory and emits the smallest Sidecar.
// Problems with Warning=false mean no Result.
func Compile(inv *mesh.Inventory, d Declaration, opts Options) (*Result, []Problem) {
	return nil, []Problem{{Attribute: AttrNamespace, Index: -1, Summary: "Not Implemented", Detail: "compiler pending"}}
}

// Conflicts reports Sidecars of the inventory (other than one with the same
// namespace and name) that select the same workloads as sc, like istioctl analyze IST0110.
func Conflicts(inv *mesh.Inventory, sc *mesh.Sidecar) []Problem { return nil }
