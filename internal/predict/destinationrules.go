package predict

import (
	"maps"
	"slices"

	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// DestinationRules as istiod indexes and merges them (R33).

type consolidatedDR struct {
	rule *mesh.DestinationRule
	// name is "name.namespace" of rule.
	name     string
	exportTo map[string]bool
	selector map[string]string
	hasSel   bool
	subsets  []*networking.Subset
	policy   *networking.TrafficPolicy
	from     []string
}

type drSet struct {
	specific map[string][]*consolidatedDR
	wildcard map[string][]*consolidatedDR
}

func newDRSet() *drSet {
	return &drSet{specific: map[string][]*consolidatedDR{}, wildcard: map[string][]*consolidatedDR{}}
}

// hasDRs reports whether any DestinationRule is indexed.
func (ix *index) hasDRs() bool {
	return len(ix.drLocal) > 0 || len(ix.drExported) > 0 || len(ix.drRoot.specific) > 0 || len(ix.drRoot.wildcard) > 0
}

// initDestinationRules indexes the DestinationRules in istiod's buckets (R33): local to
// their namespace, exported beyond it, and the root namespace's private ones.
func (ix *index) initDestinationRules() {
	ix.drLocal = map[string]*drSet{}
	ix.drExported = map[string]*drSet{}
	ix.drRoot = newDRSet()
	drs := make([]*mesh.DestinationRule, 0, len(ix.inv.DestinationRules))
	for _, dr := range ix.inv.DestinationRules {
		if ix.nsVisible(dr.Namespace) {
			drs = append(drs, dr)
		}
	}
	slices.SortStableFunc(drs, func(a, b *mesh.DestinationRule) int {
		as, bs := a.Spec.GetWorkloadSelector() != nil, b.Spec.GetWorkloadSelector() != nil
		if as != bs {
			if as {
				return -1
			}
			return 1
		}
		return compareMeta(&a.Meta, &b.Meta)
	})
	for _, dr := range drs {
		h := istioconfig.ResolveShortName(dr.Spec.GetHost(), dr.Namespace, ix.domain)
		exp := map[string]bool{}
		if dr.Spec.GetWorkloadSelector() == nil {
			for _, e := range dr.Spec.GetExportTo() {
				exp[e] = true
			}
		} else {
			exp["."] = true
		}
		if len(exp) == 0 || exp["*"] || exp["."] || exp[dr.Namespace] {
			set := ix.drLocal[dr.Namespace]
			if set == nil {
				set = newDRSet()
				ix.drLocal[dr.Namespace] = set
			}
			mergeDR(set, dr, h, exp)
		}
		privateOnly := (len(exp) == 0 && ix.defDR["."]) || (len(exp) == 1 && (exp["."] || exp[dr.Namespace]))
		if !privateOnly {
			set := ix.drExported[dr.Namespace]
			if set == nil {
				set = newDRSet()
				ix.drExported[dr.Namespace] = set
			}
			mergeDR(set, dr, h, exp)
		} else if dr.Namespace == ix.root {
			mergeDR(ix.drRoot, dr, h, exp)
		}
	}
}

func setEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func supersetOf(a, b map[string]bool) bool {
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}

// mergeDR mirrors PushContext.mergeDestinationRule with enhanced merge on (R33).
func mergeDR(set *drSet, dr *mesh.DestinationRule, h string, exp map[string]bool) {
	m := set.specific
	if istioconfig.IsWildcard(h) {
		m = set.wildcard
	}
	var sel map[string]string
	if ws := dr.Spec.GetWorkloadSelector(); ws != nil {
		sel = ws.GetMatchLabels()
	}
	hasSel := dr.Spec.GetWorkloadSelector() != nil
	fresh := func() *consolidatedDR {
		return &consolidatedDR{rule: dr, name: dr.Name + "." + dr.Namespace, exportTo: exp, selector: sel, hasSel: hasSel,
			subsets: slices.Clone(dr.Spec.GetSubsets()), policy: dr.Spec.GetTrafficPolicy(), from: []string{dr.Key()}}
	}
	list, exists := m[h]
	if !exists {
		m[h] = []*consolidatedDR{fresh()}
		return
	}
	appendSeparately := true
	for i, mdr := range list {
		switch {
		case setEqual(exp, mdr.exportTo):
			appendSeparately = false
		case len(mdr.exportTo) > 0 && supersetOf(exp, mdr.exportTo):
			appendSeparately = true
		default:
			appendSeparately = true
			continue
		}
		bothWithout := !hasSel && !mdr.hasSel
		bothWith := hasSel && mdr.hasSel
		selMatch := maps.Equal(mdr.selector, sel)
		if bothWith && !selMatch {
			appendSeparately = true
			continue
		}
		if bothWithout || (bothWith && selMatch) {
			appendSeparately = false
		}
		merged := *mdr
		merged.from = append(slices.Clone(mdr.from), dr.Key())
		merged.subsets = slices.Clone(mdr.subsets)
		for _, ss := range dr.Spec.GetSubsets() {
			if !slices.ContainsFunc(merged.subsets, func(x *networking.Subset) bool { return x.GetName() == ss.GetName() }) {
				merged.subsets = append(merged.subsets, ss)
			}
		}
		if merged.policy == nil && dr.Spec.GetTrafficPolicy() != nil {
			merged.policy = dr.Spec.GetTrafficPolicy()
		}
		list[i] = &merged
	}
	if appendSeparately {
		m[h] = append(list, fresh())
	}
}
