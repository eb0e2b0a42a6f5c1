package scope

import (
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Index holds what Compile reads of an inventory, indexed, so that compiling one
// declaration after another over a large mesh does not scan every Service for each.
type Index struct {
	inv      *mesh.Inventory
	services map[string]*mesh.Service // by "namespace/name"
	// byNamespace are the Services of each namespace, for "ns/*" dependencies.
	byNamespace map[string][]*mesh.Service
	// namespaces are the inventory's namespaces, with or without a manifest.
	namespaces map[string]bool
}

// NewIndex indexes the inventory.
func NewIndex(inv *mesh.Inventory) *Index {
	c := &Index{inv: inv, services: make(map[string]*mesh.Service, len(inv.Services))}
	c.byNamespace = map[string][]*mesh.Service{}
	for _, svc := range inv.Services {
		c.services[svc.Namespace+"/"+svc.Name] = svc
		c.byNamespace[svc.Namespace] = append(c.byNamespace[svc.Namespace], svc)
	}
	c.namespaces = map[string]bool{}
	for _, ns := range inv.NamespaceNames() {
		c.namespaces[ns] = true
	}
	return c
}

// Inventory is the part of the inventory Compile reads for the declaration: the mesh
// settings, the namespaces, the Services a dependency may name and every ServiceEntry.
// Compiling against it gives what compiling against the whole inventory gives
// (TestIndexInventoryCompilesAsTheWhole), but for the did-you-mean of an unknown name, which
// draws on the names the slim inventory holds. Conflicts, which reads Sidecars and
// workloads, needs those of the namespace instead.
func (c *Index) Inventory(d Declaration) *mesh.Inventory {
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
	if c.namespaces[d.Namespace] {
		addNs(d.Namespace)
	}
	for _, se := range c.inv.ServiceEntries {
		addNs(se.Namespace)
	}
	for _, dep := range d.Dependencies {
		// A whole namespace: it and every Service in it (the ports it exposes).
		if ns, rest, ok := strings.Cut(strings.TrimSpace(dep.Service), "/"); ok {
			if rest == "*" && c.namespaces[ns] {
				addNs(ns)
				for _, svc := range c.byNamespace[ns] {
					if !slices.Contains(slim.Services, svc) {
						slim.Services = append(slim.Services, svc)
					}
				}
			}
			continue
		}
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
