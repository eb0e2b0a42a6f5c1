package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// compileIndex holds what scope.Compile reads of an inventory, indexed, so that compiling one
// scope after another over a large mesh does not scan every Service for every scope.
type compileIndex struct {
	inv      *mesh.Inventory
	services map[string]*mesh.Service // by "namespace/name"
}

func newCompileIndex(inv *mesh.Inventory) *compileIndex {
	c := &compileIndex{inv: inv, services: make(map[string]*mesh.Service, len(inv.Services))}
	for _, svc := range inv.Services {
		c.services[svc.Namespace+"/"+svc.Name] = svc
	}
	return c
}

// inventory is the part of the inventory scope.Compile reads for the declaration: the mesh
// settings, the namespaces, the Services a dependency may name and every ServiceEntry.
// Compiling against it gives what compiling against the whole inventory gives (the plans-clean
// test compiles against the whole). scope.Conflicts, which reads Sidecars and workloads, needs
// those of the namespace instead.
func (c *compileIndex) inventory(d scope.Declaration) *mesh.Inventory {
	slim := mesh.New()
	slim.Mesh = c.inv.Mesh
	slim.ServiceEntries = c.inv.ServiceEntries
	addNs := func(ns string) {
		if _, ok := slim.Namespaces[ns]; ok {
			return
		}
		if n, ok := c.inv.Namespaces[ns]; ok {
			slim.Namespaces[ns] = n
		} else {
			slim.Namespaces[ns] = &mesh.Namespace{Meta: mesh.Meta{Kind: "Namespace", APIVersion: "v1", Name: ns}}
		}
	}
	addNs(d.Namespace)
	for _, se := range c.inv.ServiceEntries {
		addNs(se.Namespace)
	}
	for _, dep := range d.Dependencies {
		// Every Service the dependency could name: "name" in the scope's namespace, or
		// "name.namespace[.svc[.domain]]".
		parts := strings.Split(strings.ToLower(dep.Service), ".")
		keys := []string{d.Namespace + "/" + parts[0]}
		if len(parts) > 1 {
			keys = append(keys, parts[1]+"/"+parts[0])
		}
		for _, k := range keys {
			if svc := c.services[k]; svc != nil && !slices.Contains(slim.Services, svc) {
				slim.Services = append(slim.Services, svc)
				addNs(svc.Namespace)
			}
		}
	}
	return slim
}

// routability says whether a dependency can be declared for a namespace at all, as the compiler
// answers it: "" when it can, else the compiler's reason (a Service not exported to the
// namespace, a port it does not expose). Answers are kept per namespace and dependency.
type routability struct {
	idx   *compileIndex
	opts  scope.Options
	cache map[string]string
}

func newRoutability(inv *mesh.Inventory, opts scope.Options) *routability {
	return &routability{idx: newCompileIndex(inv), opts: opts, cache: map[string]string{}}
}

// reasons answers for every cut call of one workload's namespace, compiling the dependencies it
// has no answer for yet in one declaration (the compiler reports every refused dependency of a
// declaration at once).
func (r *routability) reasons(ns string, calls []CutCall) []string {
	key := func(c CutCall) string { return fmt.Sprintf("%s|%s|%d", ns, c.Dependency, c.Port) }
	d := scope.Declaration{Namespace: ns}
	var asked []string
	for _, c := range calls {
		k := key(c)
		if _, ok := r.cache[k]; ok || slices.Contains(asked, k) {
			continue
		}
		dep := scope.Dependency{Service: c.Dependency}
		if c.Port > 0 {
			dep.Ports = []uint32{uint32(c.Port)}
		}
		d.Dependencies = append(d.Dependencies, dep)
		asked = append(asked, k)
	}
	if len(asked) > 0 {
		_, problems := scope.Compile(r.idx.inventory(d), d, r.opts)
		for _, k := range asked {
			r.cache[k] = ""
		}
		for _, pb := range problems {
			if !pb.Warning && pb.Attribute == scope.AttrDependencies && pb.Index >= 0 && pb.Index < len(asked) {
				r.cache[asked[pb.Index]] = pb.Summary + ": " + pb.Detail
			}
		}
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = r.cache[key(c)]
	}
	return out
}
