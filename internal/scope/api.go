// Package scope compiles declared service dependencies into Istio Sidecar
// resources: the smallest egress scope that still lets every declared call
// through. It imports nothing from Terraform.
package scope

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// Dependency is one declared call target.
type Dependency struct {
	// Service is a Kubernetes service ("name.namespace", a bare "name" in the
	// scope's namespace, or "name.namespace.svc.<suffix>"), a ServiceEntry host,
	// or a whole namespace ("ns/*").
	Service string
	// Ports optionally restricts the call to these service ports.
	Ports []uint32
}

// Element is the dependency as an element of a scope's dependencies, in Terraform's syntax:
// `{ service = "foo.foo", ports = [80] }`. Both surfaces advise it in that form.
func (d Dependency) Element() string {
	if len(d.Ports) == 0 {
		return fmt.Sprintf("{ service = %q }", d.Service)
	}
	ports := make([]string, len(d.Ports))
	for i, p := range d.Ports {
		ports[i] = strconv.FormatUint(uint64(p), 10)
	}
	return fmt.Sprintf("{ service = %q, ports = [%s] }", d.Service, strings.Join(ports, ", "))
}

// Ingress is one Sidecar ingress listener.
type Ingress struct {
	Port            uint32
	Protocol        string
	DefaultEndpoint string
}

// Declaration is what a team declares for one workload (or a namespace default).
type Declaration struct {
	// Name of the Sidecar; empty means a deterministic name derived from the selector.
	Name      string
	Namespace string
	// Selector labels; empty means the namespace default Sidecar.
	Selector     map[string]string
	Dependencies []Dependency
	Ingress      []Ingress
	// OutboundTrafficPolicy is "", "ALLOW_ANY" or "REGISTRY_ONLY".
	OutboundTrafficPolicy string
}

// Options are provider-wide compiler settings.
type Options struct {
	// SystemHosts are egress hosts added to every scope; nil means ["istio-system/*"]
	// (the root namespace); an empty non-nil slice adds none.
	SystemHosts  []string
	DomainSuffix string
	// IstioVersion is "MAJOR.MINOR" of the target release; "" means the newest.
	// It decides whether "~" exclusions in system hosts are understood (1.31+).
	IstioVersion string
}

// Attribute names used in Problem.Attribute, matching the Terraform schema.
const (
	AttrName                  = "name"
	AttrNamespace             = "namespace"
	AttrWorkloadSelector      = "workload_selector"
	AttrDependencies          = "dependencies"
	AttrIngress               = "ingress"
	AttrOutboundTrafficPolicy = "outbound_traffic_policy"
	// AttrNone marks a problem of the scope as a whole.
	AttrNone = ""
	// AttrSystemHosts is the provider's system_hosts attribute.
	AttrSystemHosts = "system_hosts"
)

// Problem is a diagnostic tied to one input attribute.
type Problem struct {
	// Code says what the problem is (codes.go); callers match it, never Summary or Detail.
	Code problem.Code
	// Attribute is one of the Attr* names.
	Attribute string
	// Index is the position within Declaration.Dependencies or .Ingress, or -1.
	Index int
	// Key is the map key for workload_selector problems.
	Key     string
	Summary string
	// Detail says what is wrong, with the offending value. A remedy that depends on the
	// surface (how the inventory is given: the provider's manifests, or -f PATH) is left to
	// the surface, by Code: CodeUnknownNamespace and CodeUnknownService.
	Detail  string
	Warning bool
}
