package predict

import (
	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// index is the PushContext-like view of an inventory: what istiod computes once per push
// and every Sidecar scope reads. It is built by buildIndex, one init step per kind of config
// (services.go, virtualservices.go, destinationrules.go, sidecars.go), and never changed
// after, except for the visible cache.
type index struct {
	// inv is the inventory the index was built from.
	inv *mesh.Inventory
	// ver is the Istio release whose rules apply (its switches: istioconfig.Version).
	ver istioconfig.Version
	// domain is the cluster domain suffix, such as "cluster.local".
	domain string
	// root is the mesh root namespace (meshConfig.rootNamespace, default istio-system).
	root string
	// defSvc is meshConfig.defaultServiceExportTo, public when unset (R9).
	defSvc []string
	// defDR is meshConfig.defaultDestinationRuleExportTo as a set, public when unset (R33).
	defDR map[string]bool
	// defVS is meshConfig.defaultVirtualServiceExportTo, public when unset (R23).
	defVS []string
	// visible caches, per namespace, whether istiod sees it (discoverySelectors, R6).
	visible map[string]bool

	// services are the services of every visible namespace, Kubernetes Services and
	// ServiceEntry hosts, in creation order (R1, R3, R7).
	services []*service
	// public are the services exported to "*", in creation order (R10).
	public []*service
	// publicByNs are the public services by their own namespace, in creation order.
	publicByNs map[string][]*service
	// exportedTo are, per namespace, the services that are not public but exported to it
	// by name or, for their own namespace, by "." (R10), in creation order.
	exportedTo map[string][]*service
	// byHostNs is, per hostname and namespace, the one service istiod keeps there: the
	// Kubernetes Service over a ServiceEntry, else the oldest (R8).
	byHostNs map[string]map[string]*service

	// aliases maps a concrete host to its ExternalName aliases (R60), built once and shared
	// by the copies withInventory makes (they differ in Sidecars only).
	aliases *aliasCache
	// routeCounts are virtual host counts by route name, shared by the scopes whose routes
	// are built from the same services and VirtualServices (RouteCount).
	routeCounts *routeCountCache
	// ldsCounts are the scopes' outbound listener counts, shared likewise (ldsSummary).
	ldsCounts *ldsCountCache
	// eps are the endpoints of service ports, computed on first use (R57).
	eps *epCache

	// vsPrivate are, per namespace, its own VirtualServices exported to it (R23).
	vsPrivate map[string][]*vsEntry
	// vsExported are, per namespace, the VirtualServices of other namespaces exported to it
	// by name (R23).
	vsExported map[string][]*vsEntry
	// vsPublic are the VirtualServices exported to "*" (R23).
	vsPublic []*vsEntry

	// drLocal are, per namespace, its DestinationRules visible in it: no exportTo, "*",
	// "." or its name; those with a workloadSelector are always local (R33).
	drLocal map[string]*drSet
	// drExported are, per namespace, its DestinationRules exported beyond it, for the
	// namespaces their exportTo names (R33, R34).
	drExported map[string]*drSet
	// drRoot are the root namespace's DestinationRules visible only in it (R34).
	drRoot *drSet

	// sidecarsByNs are, per namespace, its Sidecars: those with a workloadSelector first,
	// each group in creation order (R13).
	sidecarsByNs map[string][]*mesh.Sidecar
	// rootSidecar is the oldest selector-less Sidecar of the root namespace, the default
	// of namespaces without their own (R14), or nil.
	rootSidecar *mesh.Sidecar

	// kubeByNs are the Kubernetes Services per visible namespace, for the inbound
	// clusters (R40).
	kubeByNs map[string][]*mesh.Service
	// census names the workloads as Istio does and says which run sidecars.
	census *census.Census
	// workloadsByNs holds the workloads that run pods, per visible namespace.
	workloadsByNs map[string][]*mesh.Workload
	// slicesByService holds the EndpointSlices by "namespace/service" (R57).
	slicesByService map[string][]*mesh.EndpointSlice
	// selectorSEsByNs holds the ServiceEntries with a workloadSelector, per namespace.
	selectorSEsByNs map[string][]*mesh.ServiceEntry
}

// nsVisible reports whether istiod sees namespace ns (R6), caching the answer.
func (ix *index) nsVisible(ns string) bool {
	v, ok := ix.visible[ns]
	if !ok {
		v = ix.inv.NamespaceVisible(ns)
		ix.visible[ns] = v
	}
	return v
}

// buildIndex indexes inv as istiod's initPushContext does: services, then VirtualServices,
// DestinationRules and Sidecars.
func buildIndex(inv *mesh.Inventory, ver istioconfig.Version, domain string) *index {
	ix := &index{
		inv: inv, ver: ver, domain: domain, root: inv.Mesh.RootNamespace, aliases: &aliasCache{}, routeCounts: &routeCountCache{}, ldsCounts: &ldsCountCache{}, eps: &epCache{},
		defSvc:  istioconfig.DefaultExportTo(inv.Mesh.DefaultServiceExportTo),
		defVS:   istioconfig.DefaultExportTo(inv.Mesh.DefaultVirtualServiceExportTo),
		defDR:   map[string]bool{},
		visible: map[string]bool{},
	}
	if ix.root == "" {
		ix.root = mesh.DefaultRootNamespace
	}
	for _, e := range istioconfig.DefaultExportTo(inv.Mesh.DefaultDestinationRuleExportTo) {
		ix.defDR[e] = true
	}
	for _, n := range inv.NamespaceNames() {
		ix.nsVisible(n)
	}
	ix.census = census.Take(inv)
	ix.workloadsByNs = map[string][]*mesh.Workload{}
	for _, w := range inv.Workloads {
		if ix.nsVisible(w.Namespace) && w.HasPods() {
			ix.workloadsByNs[w.Namespace] = append(ix.workloadsByNs[w.Namespace], w)
		}
	}
	ix.slicesByService = map[string][]*mesh.EndpointSlice{}
	for _, es := range inv.EndpointSlices {
		if es.Service != "" {
			k := es.Namespace + "/" + es.Service
			ix.slicesByService[k] = append(ix.slicesByService[k], es)
		}
	}
	ix.initServices()
	ix.initVirtualServices()
	ix.initDestinationRules()
	ix.initSidecars()
	return ix
}

// compareMeta orders configs as istiod does (R13, R23, R33).
func compareMeta(a, b *mesh.Meta) int {
	return istioconfig.CompareCreation(istioconfig.Creation{Created: a.Created, Name: a.Name, Namespace: a.Namespace},
		istioconfig.Creation{Created: b.Created, Name: b.Name, Namespace: b.Namespace})
}
