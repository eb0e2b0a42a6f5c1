package predict

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// clusterPatch is a CLUSTER patch of an EnvoyFilter that reaches a sidecar (R39).
type clusterPatch struct {
	filter string // namespace/name
	op     networking.EnvoyFilter_Patch_Operation
	ctx    networking.EnvoyFilter_PatchContext
	match  *networking.EnvoyFilter_ClusterMatch
	// add is the name of the cluster an ADD inserts.
	add string
	// why is set when meshscope cannot apply the patch exactly: it is then named, not applied.
	why string
}

// envoyFilterOrder is istiod's order of the EnvoyFilters of a proxy (`PushContext.EnvoyFilters`):
// priority, the root namespace's first, creation time, then name.namespace.
func (ix *index) envoyFilterOrder(a, b *mesh.EnvoyFilter) int {
	if c := cmp.Compare(a.Spec.GetPriority(), b.Spec.GetPriority()); c != 0 {
		return c
	}
	if a.Namespace != b.Namespace && (a.Namespace == ix.root || b.Namespace == ix.root) {
		if a.Namespace == ix.root {
			return -1
		}
		return 1
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.Name+"."+a.Namespace, b.Name+"."+b.Namespace)
}

// clusterPatches returns the CLUSTER patches of the EnvoyFilters that reach a sidecar proxy, in
// istiod's order (R39): EnvoyFilters of the root namespace and of the proxy's namespace whose
// workloadSelector selects the proxy (one with targetRefs never attaches to a sidecar), patches
// in a context other than GATEWAY whose proxy match holds.
func (ix *index) clusterPatches(proxy Proxy) []clusterPatch {
	var out []clusterPatch
	for _, ef := range ix.envoyFiltersFor(proxy) {
		for _, cp := range ef.Spec.GetConfigPatches() {
			if cp.GetApplyTo() != networking.EnvoyFilter_CLUSTER || cp.GetPatch() == nil {
				continue
			}
			ctx := cp.GetMatch().GetContext()
			if ctx == networking.EnvoyFilter_GATEWAY {
				continue
			}
			p := clusterPatch{filter: ef.Key(), op: cp.GetPatch().GetOperation(), ctx: ctx, match: cp.GetMatch().GetCluster()}
			applies, why := ix.proxyMatch(cp.GetMatch().GetProxy())
			if !applies {
				continue
			}
			p.why = why
			switch p.op {
			case networking.EnvoyFilter_Patch_ADD:
				name := cp.GetPatch().GetValue().GetFields()["name"]
				if name == nil || name.GetStringValue() == "" {
					p.why = cmp.Or(p.why, "an ADD whose value has no name")
				}
				p.add = name.GetStringValue()
			case networking.EnvoyFilter_Patch_REMOVE:
				if p.match.GetService() != "" && ctx != networking.EnvoyFilter_SIDECAR_OUTBOUND {
					p.why = cmp.Or(p.why, "a REMOVE by service that can reach inbound clusters, whose services meshscope does not track")
				}
			default:
				p.why = cmp.Or(p.why, "a "+p.op.String()+", which changes clusters meshscope does not model")
			}
			out = append(out, p)
		}
	}
	return out
}

// envoyFiltersFor are the EnvoyFilters that reach a sidecar proxy, in istiod's order: those of
// the root namespace and of the proxy's namespace whose workloadSelector selects the proxy (one
// with targetRefs never attaches to a sidecar).
func (ix *index) envoyFiltersFor(proxy Proxy) []*mesh.EnvoyFilter {
	var efs []*mesh.EnvoyFilter
	for _, ef := range ix.inv.EnvoyFilters {
		if ef.Namespace != ix.root && ef.Namespace != proxy.Namespace {
			continue
		}
		if len(ef.Spec.GetTargetRefs()) > 0 {
			continue
		}
		if sel := ef.Spec.GetWorkloadSelector(); sel != nil && !istioconfig.LabelsSubset(sel.GetLabels(), proxy.Labels) {
			continue
		}
		efs = append(efs, ef)
	}
	slices.SortStableFunc(efs, ix.envoyFilterOrder)
	return efs
}

// ListenerPatches names the EnvoyFilters whose LISTENER patches reach a sidecar proxy and can
// add, remove or rename its listeners, as "namespace/name (OPERATION)", in istiod's order:
// meshscope applies none of them (R56), so a surface must say that the proxy's listeners may
// differ by what they do. Patches of a listener's filter chains or filters change no name and
// are not named.
func (p *Predictor) ListenerPatches(proxy Proxy) []string {
	ix := p.forProxy(proxy).ix
	var out []string
	for _, ef := range ix.envoyFiltersFor(proxy) {
		for _, cp := range ef.Spec.GetConfigPatches() {
			if cp.GetApplyTo() != networking.EnvoyFilter_LISTENER || cp.GetPatch() == nil ||
				cp.GetMatch().GetContext() == networking.EnvoyFilter_GATEWAY {
				continue
			}
			op := cp.GetPatch().GetOperation()
			switch op {
			case networking.EnvoyFilter_Patch_ADD, networking.EnvoyFilter_Patch_REMOVE:
			case networking.EnvoyFilter_Patch_MERGE:
				if cp.GetPatch().GetValue().GetFields()["name"] == nil {
					continue
				}
			default:
				continue
			}
			if applies, _ := ix.proxyMatch(cp.GetMatch().GetProxy()); !applies {
				continue
			}
			if s := fmt.Sprintf("%s (%s)", ef.Key(), op); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// proxyMatch evaluates a patch's proxy match for a proxy of the predicted Istio release: a
// proxyVersion that every patch release of it matches, or none does, is decided; a metadata
// match or a version some patch releases match is not (why says so).
func (ix *index) proxyMatch(m *networking.EnvoyFilter_ProxyMatch) (applies bool, why string) {
	if m == nil {
		return true, ""
	}
	if len(m.GetMetadata()) > 0 {
		return true, "a proxy metadata match, which meshscope cannot evaluate"
	}
	if v := m.GetProxyVersion(); v != "" {
		re, err := regexp.Compile(v)
		if err != nil {
			return false, "" // istiod fails such a match closed
		}
		first, last := re.MatchString(ix.ver.String()+".0"), re.MatchString(ix.ver.String()+".99")
		if first != last {
			return true, fmt.Sprintf("a proxyVersion %q that only some %s patch releases match", v, ix.ver)
		}
		return first, ""
	}
	return true, ""
}

// contextMatch is istiod's patchContextMatch.
func contextMatch(pctx, ctx networking.EnvoyFilter_PatchContext) bool {
	return ctx == networking.EnvoyFilter_ANY || ctx == pctx
}

// clusterMatch is istiod's `envoyfilter.clusterMatch` on a cluster's name.
func clusterMatch(name string, m *networking.EnvoyFilter_ClusterMatch) bool {
	if m == nil {
		return true
	}
	if m.GetName() != "" {
		return m.GetName() == name
	}
	subset, host, port := parseClusterName(name)
	if m.GetSubset() != "" && m.GetSubset() != subset {
		return false
	}
	if m.GetService() != "" && m.GetService() != host {
		return false
	}
	return m.GetPortNumber() == 0 || int(m.GetPortNumber()) == port
}

// parseClusterName is istiod's ParseSubsetKey for "dir|port|subset|host" names: the parts a
// name has (BlackHoleCluster has none).
func parseClusterName(name string) (subset, host string, port int) {
	_, s, ok := strings.Cut(name, "|")
	if !ok {
		return "", "", 0
	}
	p, s, ok := strings.Cut(s, "|")
	if !ok {
		return "", "", 0
	}
	port, _ = strconv.Atoi(p)
	subset, s, ok = strings.Cut(s, "|")
	if !ok {
		return "", "", port
	}
	if strings.Contains(s, "|") {
		return subset, "", port
	}
	return subset, s, port
}

// applyClusterPatches applies the patches meshscope models to a proxy's clusters, as istiod's
// cluster builder does: REMOVE drops the matching clusters of its context (outbound: the
// services' clusters, BlackHoleCluster, PassthroughCluster and the dynamic DNS one; inbound:
// the inbound clusters and InboundPassthroughCluster), then ADD appends its cluster, ANY
// counting as outbound. It returns the patched lists, or ok false when none applies.
func applyClusterPatches(patches []clusterPatch, outbound, rest []Cluster) (o, r []Cluster, ok bool) {
	var apply []clusterPatch
	for _, p := range patches {
		if p.why == "" {
			apply = append(apply, p)
		}
	}
	if len(apply) == 0 {
		return outbound, rest, false
	}
	removed := func(c Cluster) bool {
		pctx := networking.EnvoyFilter_SIDECAR_OUTBOUND
		if c.Direction == Inbound || strings.HasPrefix(c.Name, "InboundPassthroughCluster") {
			pctx = networking.EnvoyFilter_SIDECAR_INBOUND
		}
		for _, p := range apply {
			if p.op == networking.EnvoyFilter_Patch_REMOVE && contextMatch(pctx, p.ctx) && clusterMatch(c.Name, p.match) {
				return true
			}
		}
		return false
	}
	o = make([]Cluster, 0, len(outbound))
	for _, c := range outbound {
		if !removed(c) {
			o = append(o, c)
		}
	}
	r = make([]Cluster, 0, len(rest)+len(apply))
	for _, c := range rest {
		if !removed(c) {
			r = append(r, c)
		}
	}
	for _, p := range apply {
		if p.op == networking.EnvoyFilter_Patch_ADD {
			r = append(r, Cluster{Name: p.add, Type: "ENVOY_FILTER"})
		}
	}
	slices.SortStableFunc(r, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	return o, r, true
}

// ClusterPatches names the EnvoyFilters whose CLUSTER patches reach a sidecar proxy and that
// meshscope does not apply exactly (R39), as "namespace/name (OPERATION: why)", in istiod's
// order: MERGE patches, and ADD or REMOVE patches it cannot decide. A surface must say that the
// proxy's prediction leaves them out. The ADD and REMOVE patches it applies are not named.
func (p *Predictor) ClusterPatches(proxy Proxy) []string {
	var out []string
	for _, cp := range p.forProxy(proxy).ix.clusterPatches(proxy) {
		if cp.why == "" {
			continue
		}
		if s := fmt.Sprintf("%s (%s: %s)", cp.filter, cp.op, cp.why); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
