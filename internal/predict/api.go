// Package predict computes the Envoy CDS clusters istiod pushes to a sidecar
// proxy, as istiod builds them (Istio 1.31 by default), from an inventory.
// The rules and their Istio sources are in ../shared/reference/istio-cluster-semantics.md.
// It imports nothing from Terraform.
package predict

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Options select the Istio release whose behaviour is predicted.
type Options struct {
	// IstioVersion is "MAJOR.MINOR", default "1.31".
	IstioVersion string
	// DomainSuffix is the cluster domain, default "cluster.local".
	DomainSuffix string
}

// Version is a parsed Istio minor release.
type Version struct{ Major, Minor int }

// ParseVersion parses "1.31" or "1.31.2".
func ParseVersion(s string) (Version, error) {
	if s == "" {
		return Version{1, 31}, nil
	}
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("istio version %q is not MAJOR.MINOR (for example \"1.31\")", s)
	}
	maj, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj != 1 || minor < 8 {
		return Version{}, fmt.Errorf("istio version %q is not supported: use 1.8 or later, as MAJOR.MINOR (for example \"1.31\")", s)
	}
	return Version{maj, minor}, nil
}

// AtLeast reports whether v >= 1.minor.
func (v Version) AtLeast(minor int) bool { return v.Minor >= minor }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Proxy identifies a sidecar proxy: its namespace and pod labels.
type Proxy struct {
	Namespace string
	Labels    map[string]string
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

// IstioctlRows returns CDS plus bootstrap clusters in `istioctl proxy-config cluster` order.
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
