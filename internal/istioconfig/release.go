package istioconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an Istio minor release, such as 1.31.
type Version struct{ Major, Minor int }

// DefaultVersion is the release predicted when none is given: Newest.
const DefaultVersion = "1.31"

var (
	// Oldest is the oldest release whose rules are modelled: 1.8 named inbound clusters as
	// today's releases do.
	Oldest = Version{1, 8}
	// Newest is the newest release whose rules are modelled, the Istio source the predictor is
	// checked against. A newer release is predicted with its rules (see Modelled).
	Newest = Version{1, 31}
)

// ParseVersion parses "MAJOR.MINOR" or "MAJOR.MINOR.PATCH", such as "1.31" or "1.31.2"; ""
// is DefaultVersion. Releases older than Oldest, other majors than 1 and anything else that is
// not a release number are errors that say which releases are modelled. A release newer than
// Newest parses: the caller warns that it is predicted with Newest's rules.
func ParseVersion(s string) (Version, error) {
	if s == "" {
		s = DefaultVersion
	}
	parts := strings.Split(s, ".")
	nums := make([]int, 0, len(parts))
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			nums = nil
			break
		}
		nums = append(nums, n)
	}
	if len(nums) < 2 || len(nums) > 3 {
		hint := ""
		if strings.HasPrefix(s, "v") {
			hint = fmt.Sprintf(" (without the \"v\": %q)", strings.TrimPrefix(s, "v"))
		}
		return Version{}, fmt.Errorf("istio version %q is not a release number MAJOR.MINOR, such as %q%s; meshscope models Istio %s to %s", s, DefaultVersion, hint, Oldest, Newest)
	}
	v := Version{nums[0], nums[1]}
	if v.Major != 1 || v.Minor < Oldest.Minor {
		return Version{}, fmt.Errorf("istio version %q is not modelled: meshscope models Istio %s to %s (newer 1.x releases are predicted with %s's rules)", s, Oldest, Newest, Newest)
	}
	return v, nil
}

// Modelled reports whether v's rules are modelled. A newer release is predicted with Newest's
// rules, which may differ from what its istiod does.
func (v Version) Modelled() bool { return !Newest.Less(v) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

func (v Version) atLeast(minor int) bool { return v.Major > 1 || v.Minor >= minor }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Release behaviour, one switch per change, as Istio names its own in pilot/pkg/features. Each
// carries the rule it changes and the Istio change that made it.

// ExternalNameAlias: a Kubernetes ExternalName Service is an alias of the host it names and has
// no cluster of its own (rule R27). Before, it was a STRICT_DNS cluster per port. Istio 1.20 had
// the alias behind ENABLE_EXTERNAL_NAME_ALIAS=true, off by default ("no behavioral changes by
// default", 1.20 upgrade notes); 1.21 turned it on by default (istio#46332); 1.24 removed the
// flag. Istio: pilot/pkg/serviceregistry/kube/conversion.go.
func (v Version) ExternalNameAlias() bool { return v.atLeast(21) }

// UnifiedInboundPassthrough: one InboundPassthroughCluster for both IP families (rule R43).
// Before 1.23, InboundPassthroughClusterIpv4 (and ...Ipv6 on an IPv6 proxy). Istio: istio#51503,
// pilot/pkg/networking/core/cluster_builder.go.
func (v Version) UnifiedInboundPassthrough() bool { return v.atLeast(23) }

// UnifiedSidecarScope: PILOT_UNIFIED_SIDECAR_SCOPE, on from 1.23, decides which service a
// hostname several namespaces define resolves to (rule R21). Istio: istio#51776,
// pilot/pkg/model/sidecar.go.
func (v Version) UnifiedSidecarScope() bool { return v.atLeast(23) }

// EgressExclusions: a "~" namespace prefix in a Sidecar egress host excludes the hosts it
// names (rule R17), from 1.31. Before, "~ns/x" named a namespace "~ns" and matched nothing.
// Istio: release note 60139, pilot/pkg/model/sidecar.go hostClassification.
func (v Version) EgressExclusions() bool { return !v.Less(EgressExclusionsSince) }

// EgressExclusionsSince is the release from which EgressExclusions holds, for messages.
var EgressExclusionsSince = Version{1, 31}

// ExactHostIndexOneAddress: when every host of a Sidecar egress listener is exact and
// namespaced, istiod takes its services from the index of one service per host and namespace,
// so a ServiceEntry with several addresses gets one outbound listener, on its first address
// (rule R50), from 1.31. Before, one per address. Istio: pilot/pkg/model/sidecar.go
// servicesForExactHosts.
func (v Version) ExactHostIndexOneAddress() bool { return v.atLeast(31) }
