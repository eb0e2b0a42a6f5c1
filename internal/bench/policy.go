package bench

import (
	"fmt"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// Policy is a way of scoping the sidecars of a mesh.
type Policy string

// The policies the benchmarks compare.
const (
	// PolicyNone has no Sidecar: every proxy holds every service of the mesh.
	PolicyNone Policy = "none"
	// PolicyNamespace is one Sidecar per namespace importing "./*" and "istio-system/*".
	PolicyNamespace Policy = "namespace"
	// PolicyMeshscope is meshscope's compiled scopes with the provider's default
	// system_hosts ["istio-system/*"], as a platform repo would deploy them.
	PolicyMeshscope Policy = "meshscope"
	// PolicyMeshscopeBare is meshscope's compiled scopes with system_hosts = []:
	// the declared dependencies only, comparable with the floor.
	PolicyMeshscopeBare Policy = "meshscope-bare"
)

// Policies lists every policy, in report order.
var Policies = []Policy{PolicyNone, PolicyNamespace, PolicyMeshscope, PolicyMeshscopeBare}

// Describe says what the policy is, for reports.
func (p Policy) Describe() string {
	switch p {
	case PolicyNone:
		return "no Sidecar"
	case PolicyNamespace:
		return "namespace Sidecar `./*` + `istio-system/*`"
	case PolicyMeshscope:
		return "meshscope scopes, default system_hosts `[\"istio-system/*\"]`"
	case PolicyMeshscopeBare:
		return "meshscope scopes, system_hosts `[]`"
	}
	return string(p)
}

// SystemHosts returns the compiler's system_hosts for a meshscope policy.
func (p Policy) SystemHosts() []string {
	if p == PolicyMeshscopeBare {
		return []string{}
	}
	return nil
}

// SidecarsYAML renders the Sidecars of the policy for the mesh. inv is the
// mesh's inventory (without Sidecars), which the compiler resolves against.
func (m *Mesh) SidecarsYAML(p Policy, inv *mesh.Inventory) ([]byte, error) {
	var b strings.Builder
	switch p {
	case PolicyNone:
	case PolicyNamespace:
		for _, ns := range m.Namespaces {
			fmt.Fprintf(&b, "---\napiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: %s, creationTimestamp: %q}\nspec:\n  egress:\n  - hosts: [\"./*\", \"istio-system/*\"]\n", ns, created)
		}
	case PolicyMeshscope, PolicyMeshscopeBare:
		opts := scope.Options{SystemHosts: p.SystemHosts()}
		for _, a := range m.Apps {
			res, probs := scope.Compile(inv, a.Declaration(), opts)
			if res == nil {
				return nil, fmt.Errorf("compiling the scope of %s/%s: %v", a.Namespace, a.Name, probs)
			}
			b.WriteString("---\n")
			b.WriteString(res.Manifest)
		}
	default:
		return nil, fmt.Errorf("unknown policy %q", p)
	}
	return []byte(b.String()), nil
}
