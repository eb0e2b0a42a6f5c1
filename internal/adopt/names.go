package adopt

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// sidecarName is "" when the default name of the group's selector is free in the namespace,
// else the lead workload's name (or that with a suffix): a scope must never take the name of a
// Sidecar it does not adopt, since it would replace it.
func (n *nsPlan) sidecarName(g *group, lead member) string {
	if def := scope.DefaultName(g.selector); !n.taken[def] {
		return ""
	}
	for i := 1; ; i++ {
		name := lead.w.Name
		if i > 1 {
			name = fmt.Sprintf("%s-scope-%d", lead.w.Name, i)
		}
		if len(validation.IsDNS1123Subdomain(name)) == 0 && !n.taken[name] {
			return name
		}
	}
}

// resourceName is a Terraform resource name for the scope: "<namespace>_<name>" with every
// character Terraform does not take in a name replaced by "_", unique in the plan.
//
// Resource names are Terraform's, yet they are planned here rather than by the writer: the
// plan is Terraform configuration, a name must be unique over the whole plan and stable from
// run to run (it is the address in state, and of an import block), and the planner's warnings
// name each scope by it. Two workloads may map to one name (a Deployment and a StatefulSet of
// one name, "old.api" and an adopted Sidecar "old-api"...), so uniqueness depends on the order
// the plan gives scopes in, which only the planner knows.
func (p *Planner) resourceName(ns, name string) string {
	var b strings.Builder
	for _, r := range ns + "_" + name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if c := base[0]; c >= '0' && c <= '9' || c == '-' {
		base = "_" + base
	}
	out := base
	for i := 2; p.resources[out]; i++ {
		out = fmt.Sprintf("%s_%d", base, i)
	}
	p.resources[out] = true
	return out
}
