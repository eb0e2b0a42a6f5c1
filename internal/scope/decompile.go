package scope

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Decompile turns an existing Sidecar back into declarations (for import):
// dependencies are recovered from the egress hosts, less the system hosts;
// ports from port-level listeners. Compile(Decompile(sc)) gives back an
// equivalent Sidecar when sc has the shape Compile emits.
func Decompile(sc *mesh.Sidecar, opts Options, rootNamespace string) (Declaration, []Problem) {
	d := Declaration{Name: sc.Name, Namespace: sc.Namespace}
	var probs []Problem
	domain := opts.DomainSuffix
	if domain == "" {
		domain = mesh.DefaultDomainSuffix
	}
	if ws := sc.Spec.GetWorkloadSelector(); ws != nil {
		d.Selector = ws.GetLabels()
	}
	system := opts.SystemHosts
	if system == nil {
		if rootNamespace == "" {
			rootNamespace = mesh.DefaultRootNamespace
		}
		system = []string{rootNamespace + "/*"}
	}
	type acc struct {
		ports []uint32
		any   bool // imported by a port-less listener: every port
	}
	deps := map[string]*acc{}
	var order []string
	for _, l := range sc.Spec.GetEgress() {
		port := l.GetPort().GetNumber()
		for _, h := range l.GetHosts() {
			if slices.Contains(system, h) || h == "~/*" {
				continue
			}
			svc, err := hostToDependency(h, sc.Namespace, domain)
			if err != nil {
				probs = append(probs, Problem{Attribute: AttrDependencies, Index: -1, Code: CodeEgressHostNotImportable, Summary: CodeEgressHostNotImportable.Summary(),
					Detail: fmt.Sprintf("Sidecar %s/%s: %v", sc.Namespace, sc.Name, err)})
				continue
			}
			a := deps[svc]
			if a == nil {
				a = &acc{}
				deps[svc] = a
				order = append(order, svc)
			}
			if port == 0 {
				a.any = true
			} else if !slices.Contains(a.ports, port) {
				a.ports = append(a.ports, port)
			}
		}
	}
	slices.Sort(order)
	for _, svc := range order {
		a := deps[svc]
		dep := Dependency{Service: svc}
		if !a.any {
			slices.Sort(a.ports)
			dep.Ports = a.ports
		}
		d.Dependencies = append(d.Dependencies, dep)
	}
	for _, in := range sc.Spec.GetIngress() {
		d.Ingress = append(d.Ingress, Ingress{Port: in.GetPort().GetNumber(), Protocol: in.GetPort().GetProtocol(), DefaultEndpoint: in.GetDefaultEndpoint()})
	}
	if otp := sc.Spec.GetOutboundTrafficPolicy(); otp != nil {
		d.OutboundTrafficPolicy = otp.GetMode().String()
	}
	return d, probs
}

// hostToDependency maps an egress host "ns/name" to a dependency string.
func hostToDependency(h, ns, domain string) (string, error) {
	hns, name, ok := strings.Cut(h, "/")
	if !ok {
		return "", fmt.Errorf("egress host %q is not namespace/dnsName", h)
	}
	if hns == "." {
		hns = ns
	}
	if hns == "*" || strings.HasPrefix(hns, "~") {
		return "", fmt.Errorf("egress host %q imports from every namespace or excludes hosts; meshscope declares dependencies per namespace or service, so rewrite it before importing", h)
	}
	if name == "*" {
		return hns + "/*", nil
	}
	suffix := ".svc." + domain
	if strings.HasSuffix(name, suffix) {
		parts := strings.Split(strings.TrimSuffix(name, suffix), ".")
		if len(parts) == 2 && parts[1] == hns {
			return parts[0] + "." + parts[1], nil
		}
	}
	return name, nil
}
