package mesh

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// The kinds meshscope reads, by API group.
var readKinds = map[string][]string{
	"":                    {"Namespace", "Service", "Pod", "ConfigMap"},
	"apps":                {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"},
	"batch":               {"Job", "CronJob"},
	"networking.istio.io": {"ServiceEntry", "DestinationRule", "VirtualService", "Sidecar"},
}

// otherKinds are the other kinds of those groups: ignored, never taken for a misspelling.
var otherKinds = map[string][]string{
	"": {"Binding", "ComponentStatus", "Endpoints", "Event", "LimitRange", "Node", "PersistentVolume",
		"PersistentVolumeClaim", "PodTemplate", "ReplicationController", "ResourceQuota", "Secret", "ServiceAccount"},
	"apps":                {"ControllerRevision"},
	"networking.istio.io": {"Gateway", "WorkloadEntry", "WorkloadGroup", "EnvoyFilter", "ProxyConfig"},
}

// checkKind returns an error for a kind meshscope does not read that looks like one it does
// ("Servic", "Sidecars", "service"), or that it reads in another API group ("Service" in
// networking.istio.io). Other kinds are nil: meshscope ignores them.
func checkKind(group, kind string) error {
	for _, k := range otherKinds[group] {
		if k == kind {
			return nil
		}
	}
	// didyoumean.Nearest's measure finds the kind; the tighter cut-off of two edits is not a second
	// "did you mean" rule but what makes an unknown kind an error rather than an ignored object:
	// a CRD's kind a few letters from "Service" must still load.
	if near := didyoumean.Nearest(kind, readKinds[group], 1); len(near) == 1 && didyoumean.Distance(strings.ToLower(kind), strings.ToLower(near[0])) <= 2 {
		return fmt.Errorf("unknown kind %q: did you mean %q? (meshscope would otherwise skip this object)", kind, near[0])
	}
	for g, kinds := range readKinds {
		for _, k := range kinds {
			if k == kind && g != group {
				return fmt.Errorf("%s is not a kind of API group %q: use apiVersion %s", kind, group, preferredVersion(g))
			}
		}
	}
	return nil
}

func preferredVersion(group string) string {
	if group == "" {
		return "v1"
	}
	return group + "/v1"
}

// validate applies the checks the API server (names, ports) and Istio's validation webhook
// (hosts, ports) make, so that meshscope never predicts from an object a cluster would refuse.
func (o object) validate() error {
	var errs []error
	name := func(m *Meta, check func(string) []string, what string) {
		if m.Name == "" {
			errs = append(errs, errors.New("metadata.name is empty"))
			return
		}
		if msgs := check(m.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("metadata.name %q is not a valid %s name (%s)", m.Name, what, strings.Join(msgs, "; ")))
		}
		if m.Namespace != "" {
			if msgs := validation.IsDNS1123Label(m.Namespace); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("metadata.namespace %q is not a valid namespace name (%s)", m.Namespace, strings.Join(msgs, "; ")))
			}
		}
	}
	port := func(field string, n int) {
		if err := istioconfig.ValidatePort(n); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	host := func(field, h string) {
		if err := istioconfig.ValidateWildcardDomain(h); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		}
	}
	switch {
	case o.namespace != nil:
		name(&o.namespace.Meta, validation.IsDNS1123Label, "Namespace")
	case o.service != nil:
		name(&o.service.Meta, validation.IsDNS1035Label, "Service")
		errs = append(errs, servicePorts(o.service.Spec.Ports)...)
	case o.workload != nil:
		name(&o.workload.Meta, validation.IsDNS1123Subdomain, o.workload.Kind)
		for i, p := range o.workload.Ports {
			port(fmt.Sprintf("container port %d (%q)", i, p.Name), int(p.Port))
		}
	case o.serviceEntry != nil:
		se := o.serviceEntry
		name(&se.Meta, validation.IsDNS1123Subdomain, "ServiceEntry")
		if len(se.Spec.GetHosts()) == 0 {
			errs = append(errs, errors.New("spec.hosts: a ServiceEntry must have at least one host"))
		}
		for i, h := range se.Spec.GetHosts() {
			if h == "*" {
				errs = append(errs, fmt.Errorf("spec.hosts[%d]: the full wildcard \"*\" is not allowed in a ServiceEntry", i))
				continue
			}
			host(fmt.Sprintf("spec.hosts[%d]", i), h)
		}
		numbers := map[uint32]bool{}
		for i, p := range se.Spec.GetPorts() {
			port(fmt.Sprintf("spec.ports[%d].number", i), int(p.GetNumber()))
			// Istio's validation: "service entry port %d already defined".
			if numbers[p.GetNumber()] {
				errs = append(errs, fmt.Errorf("spec.ports[%d].number %d: port already defined; Istio refuses a ServiceEntry that repeats a port number", i, p.GetNumber()))
			}
			numbers[p.GetNumber()] = true
			if p.GetTargetPort() != 0 {
				port(fmt.Sprintf("spec.ports[%d].targetPort", i), int(p.GetTargetPort()))
			}
		}
	case o.destinationRule != nil:
		name(&o.destinationRule.Meta, validation.IsDNS1123Subdomain, "DestinationRule")
		host("spec.host", o.destinationRule.Spec.GetHost())
	case o.virtualService != nil:
		name(&o.virtualService.Meta, validation.IsDNS1123Subdomain, "VirtualService")
		for i, h := range o.virtualService.Spec.GetHosts() {
			host(fmt.Sprintf("spec.hosts[%d]", i), h)
		}
	case o.sidecar != nil:
		sc := o.sidecar
		name(&sc.Meta, validation.IsDNS1123Subdomain, "Sidecar")
		for i, l := range sc.Spec.GetIngress() {
			port(fmt.Sprintf("spec.ingress[%d].port.number", i), int(l.GetPort().GetNumber()))
		}
		for i, l := range sc.Spec.GetEgress() {
			if l.GetPort() != nil {
				port(fmt.Sprintf("spec.egress[%d].port.number", i), int(l.GetPort().GetNumber()))
			}
		}
	}
	return errors.Join(errs...)
}

// servicePorts checks a Service's ports as the API server does.
func servicePorts(ports []corev1.ServicePort) []error {
	var errs []error
	names := map[string]bool{}
	seen := map[string]bool{} // port/protocol
	for i, p := range ports {
		field := fmt.Sprintf("spec.ports[%d]", i)
		if key := fmt.Sprintf("%d/%s", p.Port, p.Protocol); seen[key] {
			errs = append(errs, fmt.Errorf("%s: duplicate port %s; the API server refuses two ports of one number and protocol", field, key))
		} else {
			seen[key] = true
		}
		if msgs := validation.IsValidPortNum(int(p.Port)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.port %d: %s", field, p.Port, strings.Join(msgs, "; ")))
		}
		if p.TargetPort.IntValue() == 0 && p.TargetPort.StrVal != "" {
			if msgs := validation.IsValidPortName(p.TargetPort.StrVal); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.targetPort %q: %s", field, p.TargetPort.StrVal, strings.Join(msgs, "; ")))
			}
		} else if msgs := validation.IsValidPortNum(p.TargetPort.IntValue()); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.targetPort %d: %s", field, p.TargetPort.IntValue(), strings.Join(msgs, "; ")))
		}
		switch {
		case p.Name == "" && len(ports) > 1:
			errs = append(errs, fmt.Errorf("%s.name: a Service with more than one port must name each", field))
		case p.Name != "":
			if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.name %q: %s", field, p.Name, strings.Join(msgs, "; ")))
			}
			if names[p.Name] {
				errs = append(errs, fmt.Errorf("%s.name %q: duplicate port name", field, p.Name))
			}
			names[p.Name] = true
		}
		switch p.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, fmt.Errorf("%s.protocol %q: use TCP, UDP or SCTP", field, p.Protocol))
		}
	}
	return errs
}
