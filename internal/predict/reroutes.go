package predict

import (
	"slices"
	"strings"
)

// Reroute is a VirtualService route that sends the calls an application makes to one host of
// the registry to another. Istio's metrics name the cluster after routing (destination_service),
// so the calls to From are counted as calls to To; and a Sidecar that imports To but not From
// drops From's VirtualService with it, and the calls to From lose their route.
type Reroute struct {
	// From is the VirtualService's host, the one the application calls.
	From string
	// To is a destination the VirtualService's routes, mirrors or delegates send calls to.
	To string
	// VirtualService is the VirtualService, "namespace/name".
	VirtualService string
	// FromService is "name.namespace" when From is a Kubernetes Service, "" when it is a
	// ServiceEntry host.
	FromService string
	// FromNamespaces are the namespaces of the services of From.
	FromNamespaces []string
	// FromPorts are the port numbers of From, sorted.
	FromPorts []int
}

// Reroutes returns, by destination host, the reroutes a proxy of namespace ns follows: the
// VirtualServices bound to the mesh gateway and visible in ns (R23), each of their hosts that
// is a host of the registry, and each other host of the registry their routes send to (R24).
// The map is shared: it must not be changed.
func (p *Predictor) Reroutes(ns string) map[string][]Reroute {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.reroutes[ns]; ok {
		return r
	}
	if p.reroutes == nil {
		p.reroutes = map[string]map[string][]Reroute{}
	}
	r := p.ix.reroutes(ns)
	p.reroutes[ns] = r
	return r
}

func (ix *index) reroutes(ns string) map[string][]Reroute {
	out := map[string][]Reroute{}
	for _, list := range [][]*vsEntry{ix.vsPrivate[ns], ix.vsExported[ns], ix.vsPublic} {
		for _, e := range list {
			_, dests := ix.destinations(e, ns)
			for _, from := range e.hosts {
				svcs := ix.byHostNs[from]
				if len(svcs) == 0 {
					continue // a wildcard host, or one that is no service
				}
				r := Reroute{From: from, VirtualService: e.cfg.Namespace + "/" + e.cfg.Name}
				for svcNs, s := range svcs {
					r.FromNamespaces = append(r.FromNamespaces, svcNs)
					if s.k8s {
						r.FromService = s.attrName + "." + svcNs
					}
					for _, pt := range s.ports {
						r.FromPorts = append(r.FromPorts, pt.num)
					}
				}
				slices.Sort(r.FromNamespaces)
				slices.Sort(r.FromPorts)
				r.FromPorts = slices.Compact(r.FromPorts)
				for _, to := range dests {
					if to == from || len(ix.byHostNs[to]) == 0 {
						continue
					}
					r := r
					r.To = to
					if !slices.ContainsFunc(out[to], func(o Reroute) bool { return o.From == from && o.VirtualService == r.VirtualService }) {
						out[to] = append(out[to], r)
					}
				}
			}
		}
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b Reroute) int {
			if c := strings.Compare(a.From, b.From); c != 0 {
				return c
			}
			return strings.Compare(a.VirtualService, b.VirtualService)
		})
	}
	return out
}
