package review

import (
	"fmt"
	"slices"
	"sync"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// Routability answers whether a dependency can be declared in a namespace at all, as the
// compiler answers it for a scope of that namespace: nil when it can, else the compiler's
// error (a Service not exported to the namespace, a port it does not expose). Answers are
// kept per namespace and dependency; it is safe for concurrent use.
type Routability struct {
	idx  *scope.Index
	opts scope.Options

	mu    sync.Mutex
	cache map[string]*scope.Problem
}

// NewRoutability answers for the inventory, compiled with opts.
func NewRoutability(inv *mesh.Inventory, opts scope.Options) *Routability {
	return &Routability{idx: scope.NewIndex(inv), opts: opts, cache: map[string]*scope.Problem{}}
}

func routeKey(ns string, d scope.Dependency) string {
	return fmt.Sprint(ns, "|", d.Service, "|", d.Ports)
}

// Refusals answers for every dependency of one namespace, compiling those it has no answer for
// yet in one declaration: the compiler reports every refused dependency of a declaration at
// once, each at its index.
func (r *Routability) Refusals(ns string, deps []scope.Dependency) []*scope.Problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := scope.Declaration{Namespace: ns}
	var asked []string
	for _, dep := range deps {
		k := routeKey(ns, dep)
		if _, ok := r.cache[k]; ok || slices.Contains(asked, k) {
			continue
		}
		d.Dependencies = append(d.Dependencies, dep)
		asked = append(asked, k)
	}
	if len(asked) > 0 {
		_, problems := scope.Compile(r.idx.Inventory(d), d, r.opts)
		for _, k := range asked {
			r.cache[k] = nil
		}
		for _, pb := range problems {
			if !pb.Warning && pb.Attribute == scope.AttrDependencies && pb.Index >= 0 && pb.Index < len(asked) && r.cache[asked[pb.Index]] == nil {
				r.cache[asked[pb.Index]] = &pb
			}
		}
	}
	out := make([]*scope.Problem, len(deps))
	for i, dep := range deps {
		out[i] = r.cache[routeKey(ns, dep)]
	}
	return out
}
