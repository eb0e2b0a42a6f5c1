package adopt

import (
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// compileIndex holds what scope.Compile reads of an inventory, indexed, so that compiling one
// scope after another over a large mesh does not scan every Service for every scope.
//
// It is the compileIndex of internal/cli/compile.go (diff's routability reads the same), moved
// with the planner; until the two are one, a change to what Compile reads changes both.
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
