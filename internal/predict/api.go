// Package predict computes the Envoy CDS clusters, LDS listeners, RDS routes and EDS endpoints istiod pushes to a sidecar
// proxy, as istiod builds them (Istio 1.31 by default), from an inventory.
// It imports nothing from Terraform.
//
// Each rule of istiod it models has an ID (R1 to R62), an entry in the rule catalogue,
// RULES.md beside this file (what istiod does, the Istio function, ours, the tests),
// and a tag at its code.
package predict

import (
	"sort"
)

// Options select the Istio release whose behaviour is predicted.
type Options struct {
	// IstioVersion is "MAJOR.MINOR", default istioconfig.DefaultVersion.
	IstioVersion string
	// DomainSuffix is the cluster domain, default "cluster.local".
	DomainSuffix string
}

// Proxy identifies a sidecar proxy: its namespace and pod labels.
type Proxy struct {
	Namespace string
	Labels    map[string]string
	// Version is the Istio release of the revision that injected the proxy ("1.30"), when the
	// inventory says (census, C12); "" predicts with the Predictor's release.
	Version string
}

// Directions and discovery types, as istioctl prints them.
const (
	Outbound = "outbound"
	Inbound  = "inbound"

	TypeEDS         = "EDS"
	TypeStrictDNS   = "STRICT_DNS"
	TypeLogicalDNS  = "LOGICAL_DNS"
	TypeOriginalDst = "ORIGINAL_DST"
	TypeStatic      = "STATIC"
)

// Cluster is one row of `istioctl proxy-config cluster`.
type Cluster struct {
	Name      string `json:"name"`
	FQDN      string `json:"service_fqdn"`
	Port      int    `json:"port"`
	Subset    string `json:"subset"`
	Direction string `json:"direction"`
	Type      string `json:"type"`
	// DestinationRule is "name.namespace" of the rule that contributed subsets or settings, or "".
	DestinationRule string `json:"destination_rule"`
}

// Result is the prediction for one proxy.
type Result struct {
	Proxy Proxy `json:"-"`
	// Sidecar is "namespace/name" of the Sidecar that applies, or "" for the default scope.
	Sidecar string `json:"sidecar"`
	// Clusters are the CDS clusters, sorted by name.
	Clusters []Cluster `json:"clusters"`
	// Bootstrap are the static clusters istioctl also lists (not from CDS).
	Bootstrap []Cluster `json:"bootstrap"`

	// outbound are the outbound clusters of Clusters, sorted by name, and rest the others
	// (fixed and inbound). With shared, outbound is the list every proxy of the scope gets,
	// the same slice for each of them, so work on it can be shared too.
	outbound, rest []Cluster
	shared         bool
	// facts are the names and hosts of a shared outbound list, computed once for every
	// proxy that shares it.
	facts *listFacts
}

// Names returns the sorted CDS cluster names.
func (r *Result) Names() []string {
	out := make([]string, len(r.Clusters))
	for i, c := range r.Clusters {
		out[i] = c.Name
	}
	return out
}

// Count returns the number of CDS clusters of each direction ("" for fixed clusters).
func (r *Result) Count(direction string) int {
	n := 0
	for _, c := range r.Clusters {
		if c.Direction == direction {
			n++
		}
	}
	return n
}

// IstioctlRows returns CDS plus bootstrap clusters in `istioctl proxy-config cluster` order (R47).
func (r *Result) IstioctlRows() []Cluster {
	rows := append(append([]Cluster(nil), r.Clusters...), r.Bootstrap...)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		ka, kb := a.FQDN, b.FQDN
		if a.Direction == "" {
			ka = a.Name
		}
		if b.Direction == "" {
			kb = b.Name
		}
		if ka != kb {
			return ka < kb
		}
		if a.Subset != b.Subset {
			return a.Subset < b.Subset
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Direction < b.Direction
	})
	return rows
}
