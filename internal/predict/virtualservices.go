package predict

import (
	"slices"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// VirtualServices as istiod indexes them for Sidecar scopes (R23, R24).

type vsEntry struct {
	cfg   *mesh.VirtualService
	ns    string
	hosts []string // resolved
}

// initVirtualServices indexes the VirtualServices bound to the mesh gateway by the
// namespaces they are exported to (R23).
func (ix *index) initVirtualServices() {
	ix.vsPrivate = map[string][]*vsEntry{}
	ix.vsExported = map[string][]*vsEntry{}
	vss := slices.Clone(ix.inv.VirtualServices)
	slices.SortStableFunc(vss, func(a, b *mesh.VirtualService) int { return compareMeta(&a.Meta, &b.Meta) })
	for _, vs := range vss {
		if !ix.nsVisible(vs.Namespace) || len(vs.Spec.GetHosts()) == 0 {
			continue // delegate VirtualServices are merged into their parents and never selected directly
		}
		bindsMesh := len(vs.Spec.GetGateways()) == 0 || slices.Contains(vs.Spec.GetGateways(), "mesh")
		if !bindsMesh {
			continue
		}
		e := &vsEntry{cfg: vs, ns: vs.Namespace}
		for _, h := range vs.Spec.GetHosts() {
			e.hosts = append(e.hosts, istioconfig.ResolveShortName(h, vs.Namespace, ix.domain))
		}
		var exp []string
		if len(vs.Spec.GetExportTo()) > 0 {
			for _, x := range vs.Spec.GetExportTo() {
				if x == "." {
					x = vs.Namespace
				}
				exp = append(exp, x)
			}
		} else {
			// The merged VirtualService controller copies the mesh default with "." made the namespace.
			for _, x := range ix.defVS {
				if x == "." {
					x = vs.Namespace
				}
				exp = append(exp, x)
			}
		}
		exp = istioconfig.ExportToSet(exp)
		switch {
		case slices.Contains(exp, "*"):
			ix.vsPublic = append(ix.vsPublic, e)
		case slices.Contains(exp, "~"):
		default:
			for _, x := range exp {
				if x == vs.Namespace {
					ix.vsPrivate[x] = append(ix.vsPrivate[x], e)
				} else {
					ix.vsExported[x] = append(ix.vsExported[x], e)
				}
			}
		}
	}
}

// destinations (R24) mirrors virtualServiceDestinationsFilteredBySourceNamespace, with
// destination hosts resolved against the VirtualService's namespace.
func (ix *index) destinations(e *vsEntry, configNs string) (map[string]map[int]bool, []string) {
	out := map[string]map[int]bool{}
	var order []string
	add := func(d *networking.Destination, ns string) {
		if d == nil {
			return
		}
		h := istioconfig.ResolveShortName(d.GetHost(), ns, ix.domain)
		pn := int(d.GetPort().GetNumber())
		if out[h] == nil {
			out[h] = map[int]bool{}
			order = append(order, h)
		}
		out[h][pn] = true
	}
	matched := func(h *networking.HTTPRoute) bool {
		ok := true
		for _, m := range h.GetMatch() {
			if m.GetSourceNamespace() != "" {
				if m.GetSourceNamespace() == configNs {
					return true
				}
				ok = false
			}
		}
		return ok
	}
	httpRoute := func(h *networking.HTTPRoute, ns string) {
		for _, r := range h.GetRoute() {
			add(r.GetDestination(), ns)
		}
		if h.GetMirror() != nil {
			add(h.GetMirror(), ns)
		}
		for _, m := range h.GetMirrors() {
			add(m.GetDestination(), ns)
		}
	}
	v := e.cfg.Spec
	for _, h := range v.GetHttp() {
		if !matched(h) {
			continue
		}
		if d := h.GetDelegate(); d != nil {
			// istiod merges the delegate's routes into the root's (R24): their destinations are
			// the root's, resolved in the delegate's namespace.
			if del := ix.delegate(d, e.ns); del != nil {
				for _, dh := range del.Spec.GetHttp() {
					if matched(dh) {
						httpRoute(dh, del.Namespace)
					}
				}
			}
			continue
		}
		httpRoute(h, e.ns)
	}
	for _, t := range v.GetTcp() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination(), e.ns)
		}
	}
	for _, t := range v.GetTls() {
		for _, r := range t.GetRoute() {
			add(r.GetDestination(), e.ns)
		}
	}
	return out, order
}

// delegate finds the delegate VirtualService a root of namespace rootNs names: one without
// hosts, of the namespace named (the root's when none), exported to the root's namespace
// (its exportTo, else meshConfig.defaultVirtualServiceExportTo). nil when there is none, as
// istiod then drops the route. Istio: pilot/pkg/model.mergeVirtualServicesIfNeeded.
func (ix *index) delegate(d *networking.Delegate, rootNs string) *mesh.VirtualService {
	ns := d.GetNamespace()
	if ns == "" {
		ns = rootNs
	}
	for _, vs := range ix.inv.VirtualServices {
		if vs.Name != d.GetName() || vs.Namespace != ns || len(vs.Spec.GetHosts()) > 0 {
			continue
		}
		exp := vs.Spec.GetExportTo()
		if len(exp) == 0 {
			exp = ix.defVS
		}
		if istioconfig.ExportedTo(exp, vs.Namespace, rootNs) {
			return vs
		}
	}
	return nil
}
