package scope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	goyaml "go.yaml.in/yaml/v2"
	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// Result is a compiled scope.
type Result struct {
	// Name is the Sidecar's metadata.name.
	Name string
	// Sidecar is the compiled object, ready for the predictor (mesh.Inventory.WithSidecars).
	Sidecar *mesh.Sidecar
	// Manifest is the networking.istio.io/v1 Sidecar YAML, byte-identical from run to run.
	Manifest string
	// EgressHosts are the sorted distinct egress hosts.
	EgressHosts []string
	// Calls are the declared dependencies that name one service host, resolved: what the
	// review follows through the proxy's listeners and routes. Whole namespaces and
	// ExternalName aliases are left out.
	Calls []Call
}

// Call is a declared dependency on one service host.
type Call struct {
	// Index is the dependency's position in the declaration.
	Index int
	// Host is the service's host: a Kubernetes FQDN or a ServiceEntry host.
	Host string
	// Ports are the declared ports; none means every port of the host.
	Ports []uint32
}

// target is a resolved dependency.
type target struct {
	index int
	host  string // egress host entry "ns/name"
	proto map[uint32]string
	ports []uint32
	// aliasOf is the external name of an ExternalName Service.
	aliasOf string
	// unexposed are declared ports of a "ns/*" dependency that no service there exposes.
	unexposed []uint32
}

// Compile resolves the declaration against the inventory and emits the smallest
// Sidecar that still lets every declared call through. Problems with
// Warning=false mean the Result is nil. It runs four steps: validate the declaration's
// own settings, resolve its dependencies, build the egress listeners, render the Sidecar.
func Compile(inv *mesh.Inventory, d Declaration, opts Options) (*Result, []Problem) {
	domain := opts.DomainSuffix
	if domain == "" {
		domain = mesh.DefaultDomainSuffix
	}
	own, probs := validate(inv, d)
	r := newResolver(inv, domain, d.Namespace)
	targets, more := r.resolveAll(d.Dependencies)
	probs = append(probs, more...)
	if hasError(probs) {
		return nil, probs
	}
	egress, more := r.egress(d, targets, opts)
	probs = append(probs, more...)
	if hasError(probs) {
		return nil, probs
	}
	res, p := render(d, own, egress)
	if p != nil {
		return nil, append(probs, *p)
	}
	for _, t := range targets {
		_, host, _ := strings.Cut(t.host, "/")
		if host == "*" || t.aliasOf != "" {
			continue
		}
		res.Calls = append(res.Calls, Call{Index: t.index, Host: host, Ports: t.ports})
	}
	return res, probs
}

// hasError reports whether some problem is an error rather than a warning.
func hasError(probs []Problem) bool {
	return slices.ContainsFunc(probs, func(p Problem) bool { return !p.Warning })
}

// settings are a declaration's own settings, validated: everything but its dependencies.
type settings struct {
	name    string
	policy  *networking.OutboundTrafficPolicy
	ingress []*networking.IstioIngressListener
}

// validate checks the declaration's namespace, workload selector, name, outbound traffic
// policy and ingress listeners.
func validate(inv *mesh.Inventory, d Declaration) (settings, []Problem) {
	var probs []Problem
	errf := func(attr string, idx int, key string, code problem.Code, format string, a ...any) {
		p := newProblem(code, attr, idx, fmt.Sprintf(format, a...))
		p.Key = key
		probs = append(probs, p)
	}
	var out settings

	// namespace
	if errs := validation.IsDNS1123Label(d.Namespace); len(errs) > 0 {
		errf(AttrNamespace, -1, "", CodeInvalidNamespace, "The namespace %q is not a valid Kubernetes namespace name: %s.", d.Namespace, strings.Join(errs, "; "))
	} else if !inv.HasNamespace(d.Namespace) {
		hint := didyoumean.DidYouMean(d.Namespace, inv.NamespaceNames())
		if inv.Empty() {
			hint = mesh.EmptyHint
		}
		errf(AttrNamespace, -1, "", CodeUnknownNamespace,
			"The namespace %q is not in the inventory.%s",
			d.Namespace, hint)
	}

	// selector
	for _, k := range sortedKeys(d.Selector) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			errf(AttrWorkloadSelector, -1, k, CodeInvalidLabelKey, "The workload_selector key %q is not a valid Kubernetes label key: %s.", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(d.Selector[k]); len(errs) > 0 {
			errf(AttrWorkloadSelector, -1, k, CodeInvalidLabelValue, "The workload_selector value %q (key %q) is not a valid Kubernetes label value: %s.", d.Selector[k], k, strings.Join(errs, "; "))
		}
	}

	// name
	out.name = d.Name
	if out.name == "" {
		out.name = DefaultName(d.Selector)
	} else if errs := validation.IsDNS1123Subdomain(out.name); len(errs) > 0 {
		errf(AttrName, -1, "", CodeInvalidName, "The Sidecar name %q is not a valid Kubernetes object name: %s. Use lowercase letters, digits, '-' and '.', at most 253 characters.", out.name, strings.Join(errs, "; "))
	}

	// outbound traffic policy
	switch d.OutboundTrafficPolicy {
	case "":
	case "ALLOW_ANY":
		out.policy = &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_ALLOW_ANY}
	case "REGISTRY_ONLY":
		out.policy = &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY}
	default:
		errf(AttrOutboundTrafficPolicy, -1, "", CodeInvalidOutboundPolicy, "The outbound_traffic_policy %q is not one of ALLOW_ANY, REGISTRY_ONLY.", d.OutboundTrafficPolicy)
	}

	// ingress
	for i, in := range d.Ingress {
		if in.Port == 0 || in.Port > 65535 {
			errf(AttrIngress, i, "", CodeInvalidIngressPort, "The ingress port %d is not between 1 and 65535.", in.Port)
			continue
		}
		proto := istioconfig.SidecarListenerProtocol(in.Protocol)
		if proto == "" {
			errf(AttrIngress, i, "", CodeInvalidIngressProtocol, "The ingress protocol %q is not an Istio protocol. Use one of %s.", in.Protocol, strings.Join(istioconfig.SidecarListenerProtocols(), ", "))
			continue
		}
		if in.DefaultEndpoint != "" && !validDefaultEndpoint(in.DefaultEndpoint) {
			errf(AttrIngress, i, "", CodeInvalidDefaultEndpoint, "The default_endpoint %q is not 127.0.0.1:PORT, 0.0.0.0:PORT, [::1]:PORT, [::]:PORT or unix:///path.", in.DefaultEndpoint)
			continue
		}
		out.ingress = append(out.ingress, &networking.IstioIngressListener{
			Port:            &networking.SidecarPort{Number: in.Port, Protocol: proto, Name: strings.ToLower(proto) + "-" + strconv.Itoa(int(in.Port))},
			DefaultEndpoint: in.DefaultEndpoint,
		})
	}
	return out, probs
}

// resolveAll resolves each dependency to its egress host and ports. A dependency that does
// not resolve is a problem at its index and has no target.
func (r *resolver) resolveAll(deps []Dependency) ([]target, []Problem) {
	var targets []target
	var probs []Problem
	for i, dep := range deps {
		t, p := r.resolve(dep)
		t.index = i
		if p != nil {
			p.Index = i
			p.Attribute = AttrDependencies
			probs = append(probs, *p)
			continue
		}
		targets = append(targets, t)
	}
	return targets, probs
}

// egress builds the egress listeners from the targets and the system hosts, with the
// warnings about what the scope imports: the mesh root namespace left out, ExternalName
// aliases that REGISTRY_ONLY blocks, declared ports nothing exposes, and port-less
// dependencies that widen the others. Malformed system hosts are errors, and then there are
// no listeners.
func (r *resolver) egress(d Declaration, targets []target, opts Options) ([]*networking.IstioEgressListener, []Problem) {
	inv := r.inv
	root := inv.Mesh.RootNamespace
	if root == "" {
		root = mesh.DefaultRootNamespace
	}
	system := opts.SystemHosts
	if system == nil {
		system = []string{root + "/*"}
	}
	probs := ValidateSystemHosts(system, opts.IstioVersion)
	if hasError(probs) {
		return nil, probs
	}
	imported := slices.Clone(system)
	for _, t := range targets {
		imported = append(imported, t.host)
	}
	if !coversNamespace(imported, root) {
		probs = append(probs, Problem{Attribute: AttrNone, Index: -1, Warning: true, Code: CodeSystemHostsMissing, Summary: CodeSystemHostsMissing.Summary(),
			Detail: fmt.Sprintf("The scope imports no service of the mesh root namespace %q (the provider's system_hosts are %q). "+
				"Proxies reach istiod, telemetry and tracing through it; without it they are at risk. Add \"%s/*\" to system_hosts, "+
				"or declare those services as dependencies.", root, system, root)})
	}
	policy := d.OutboundTrafficPolicy
	if policy == "" {
		policy = inv.Mesh.OutboundTrafficPolicy
	}
	if policy == "REGISTRY_ONLY" {
		for _, t := range targets {
			if t.aliasOf != "" && !r.seCovers(t.aliasOf) {
				probs = append(probs, Problem{Attribute: AttrDependencies, Index: t.index, Warning: true, Code: CodeExternalHostNotInRegistry, Summary: CodeExternalHostNotInRegistry.Summary(),
					Detail: fmt.Sprintf("The dependency %q is an ExternalName alias for %q, and the outbound traffic policy is REGISTRY_ONLY, "+
						"but no ServiceEntry covers %q: calls to it will be blocked. Add a ServiceEntry for %q.", d.Dependencies[t.index].Service, t.aliasOf, t.aliasOf, t.aliasOf)})
			}
		}
	}
	for _, t := range targets {
		for _, p := range t.unexposed {
			probs = append(probs, Problem{Attribute: AttrDependencies, Index: t.index, Warning: true, Code: CodeNamespacePortNotExposed, Summary: CodeNamespacePortNotExposed.Summary(),
				Detail: fmt.Sprintf("The dependency %q declares port %d, but no service in namespace %q exposes it, so the port imports nothing.",
					d.Dependencies[t.index].Service, p, strings.TrimSuffix(t.host, "/*"))})
		}
	}
	probs = append(probs, portlessProblems(d, targets)...)
	probs = append(probs, mixedProtocolProblems(d, targets)...)
	return buildEgress(targets, system), probs
}

// render makes the Sidecar of the settings and egress listeners, and its manifest.
func render(d Declaration, s settings, egress []*networking.IstioEgressListener) (*Result, *Problem) {
	spec := &networking.Sidecar{Ingress: s.ingress, Egress: egress, OutboundTrafficPolicy: s.policy}
	if len(d.Selector) > 0 {
		spec.WorkloadSelector = &networking.WorkloadSelector{Labels: d.Selector}
	}
	labels := map[string]string{mesh.ManagedByLabel: mesh.ManagedByValue}
	manifest, err := sidecarManifest(s.name, d.Namespace, labels, spec)
	if err != nil {
		return nil, &Problem{Attribute: AttrDependencies, Index: -1, Code: CodeCannotRenderSidecar, Summary: CodeCannotRenderSidecar.Summary(), Detail: fmt.Sprintf("Rendering the Sidecar failed: %v", err)}
	}
	sc := &mesh.Sidecar{
		Meta: mesh.Meta{Kind: "Sidecar", APIVersion: "networking.istio.io/v1", Name: s.name, Namespace: d.Namespace, Labels: labels, Source: "meshscope"},
		Spec: spec,
	}
	var hosts []string
	for _, l := range egress {
		hosts = append(hosts, l.Hosts...)
	}
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	return &Result{Name: s.name, Sidecar: sc, Manifest: manifest, EgressHosts: hosts}, nil
}

// portlessProblems warns, on each dependency that imports every port, when other dependencies
// list theirs: a Sidecar scopes by port only when every dependency does (buildEgress), so one
// port-less dependency silently widens all the others to every port.
func portlessProblems(d Declaration, targets []target) []Problem {
	var withPorts []string
	for _, t := range targets {
		if len(t.ports) > 0 {
			withPorts = append(withPorts, d.Dependencies[t.index].Service)
		}
	}
	if len(withPorts) == 0 {
		return nil
	}
	var probs []Problem
	for _, t := range targets {
		if len(t.ports) > 0 {
			continue
		}
		dep := d.Dependencies[t.index]
		why := fmt.Sprintf("The dependency %q lists no ports", dep.Service)
		if len(dep.Ports) > 0 {
			why = fmt.Sprintf("The dependency %q lists ports, but a port it lists is also a UDP port of the same number, which "+
				"Istio's port listener would take instead, so it imports every port", dep.Service)
		}
		probs = append(probs, Problem{Attribute: AttrDependencies, Index: t.index, Warning: true, Code: CodeDependencyWidensEveryPort, Summary: CodeDependencyWidensEveryPort.Summary(),
			Detail: fmt.Sprintf("%s, while %s list theirs. A Sidecar narrows by port only when every dependency does, so this "+
				"dependency makes the whole Sidecar import every port of every dependency. List its ports, or drop ports "+
				"from the others to say so.", why, quoteList(withPorts, 3))})
	}
	return probs
}

// mixedProtocolProblems warns, on each dependency whose port is HTTP or detected, when
// another dependency makes that port's listener TCP (portListenerProtocol): the one listener
// of the port then proxies its calls as TCP, without their VirtualService routes.
func mixedProtocolProblems(d Declaration, targets []target) []Problem {
	protos := map[uint32]map[string]bool{}
	for _, t := range targets {
		if len(t.ports) == 0 {
			return nil // not port-level: each service keeps its own protocol
		}
		for _, p := range t.ports {
			if protos[p] == nil {
				protos[p] = map[string]bool{}
			}
			protos[p][t.proto[p]] = true
		}
	}
	var probs []Problem
	for _, t := range targets {
		for _, p := range t.ports {
			mine := t.proto[p]
			if portListenerProtocol(protos[p]) != istioconfig.TCP || (mine != "" && !istioconfig.HTTPListener(mine)) {
				continue
			}
			var tcp []string
			for _, o := range targets {
				if op, ok := o.proto[p]; ok && slices.Contains(o.ports, p) && op != "" && !istioconfig.HTTPListener(op) {
					tcp = append(tcp, d.Dependencies[o.index].Service)
				}
			}
			kind := "HTTP"
			if mine == "" {
				kind = "detected (its name names no protocol)"
			}
			probs = append(probs, Problem{Attribute: AttrDependencies, Index: t.index, Warning: true, Code: CodePortListenerIsTCP, Summary: CodePortListenerIsTCP.Summary(),
				Detail: fmt.Sprintf("The dependency %q calls port %d, whose protocol is %s, but %s on the same port is %s. A Sidecar has one "+
					"listener per port, which meshscope makes TCP, so calls to %q on port %d are proxied as TCP only: its "+
					"VirtualService routes and HTTP telemetry do not apply. Drop ports from the dependencies, so that each "+
					"service keeps its own protocol, or give the ports one protocol.",
					d.Dependencies[t.index].Service, p, kind, quoteList(tcp, 3), istioconfig.TCP, d.Dependencies[t.index].Service, p)})
		}
	}
	return probs
}

// quoteList quotes at most n names, then counts the rest.
func quoteList(names []string, n int) string {
	var q []string
	for i, s := range names {
		if i == n {
			q = append(q, fmt.Sprintf("%d more", len(names)-n))
			break
		}
		q = append(q, strconv.Quote(s))
	}
	return strings.Join(q, ", ")
}

// buildEgress emits one catch-all listener, or, when every dependency names its
// ports, one listener per port (plus a catch-all for the system hosts).
func buildEgress(targets []target, system []string) []*networking.IstioEgressListener {
	portLevel := len(targets) > 0
	for _, t := range targets {
		if len(t.ports) == 0 {
			portLevel = false
		}
	}
	if !portLevel {
		hosts := slices.Clone(system)
		for _, t := range targets {
			hosts = append(hosts, t.host)
		}
		return []*networking.IstioEgressListener{{Hosts: hostsOrNone(hosts)}}
	}
	byPort := map[uint32][]string{}
	protos := map[uint32]map[string]bool{}
	for _, t := range targets {
		for _, p := range t.ports {
			byPort[p] = append(byPort[p], t.host)
			if protos[p] == nil {
				protos[p] = map[string]bool{}
			}
			protos[p][t.proto[p]] = true
		}
	}
	ports := make([]uint32, 0, len(byPort))
	for p := range byPort {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	var out []*networking.IstioEgressListener
	for _, p := range ports {
		proto := portListenerProtocol(protos[p])
		name := "port-" + strconv.Itoa(int(p))
		if proto != "" {
			name = strings.ToLower(proto) + "-" + strconv.Itoa(int(p))
		}
		// System hosts are repeated on each port listener so that calls to them on
		// this port keep their route; the clusters are the same ones the
		// catch-all listener imports, so the count does not grow.
		hosts := append(slices.Clone(system), byPort[p]...)
		out = append(out, &networking.IstioEgressListener{
			Port:  &networking.SidecarPort{Number: p, Protocol: proto, Name: name},
			Hosts: hostsOrNone(hosts),
		})
	}
	if len(system) > 0 {
		out = append(out, &networking.IstioEgressListener{Hosts: hostsOrNone(slices.Clone(system))})
	}
	return out
}

// portListenerProtocol is the protocol of a port listener whose hosts' ports have the
// listener protocols protos ("" where Istio detects the protocol). istiod gives every host
// of a port listener the listener's protocol (buildSidecarOutboundListeners), so the
// listener keeps the one protocol the hosts agree on, "" included: TCP on a port istiod
// would detect turns its HTTP calls into TCP proxying and drops their VirtualService
// routes. Hosts that disagree get detection when each is HTTP or detected, and TCP
// otherwise, since detection would stall a server-first TCP protocol
// (mixedProtocolProblems warns about the HTTP calls that then go through TCP).
func portListenerProtocol(protos map[string]bool) string {
	if len(protos) == 1 {
		for p := range protos {
			return p
		}
	}
	for p := range protos {
		if p != "" && !istioconfig.HTTPListener(p) {
			return istioconfig.TCP
		}
	}
	return ""
}

// hostsOrNone sorts and dedups hosts; no host at all becomes "~/*" (import nothing).
func hostsOrNone(hosts []string) []string {
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	if len(hosts) == 0 {
		return []string{"~/*"}
	}
	return hosts
}

func validDefaultEndpoint(s string) bool {
	if strings.HasPrefix(s, "unix://") {
		return len(s) > len("unix://")
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return false
	}
	switch h {
	case "127.0.0.1", "0.0.0.0", "::1", "::":
		return true
	}
	return false
}

// DefaultName derives a deterministic Sidecar name from the selector: "default"
// for a namespace default, else the selector values joined by "-".
func DefaultName(sel map[string]string) string {
	if len(sel) == 0 {
		return "default"
	}
	var parts []string
	for _, k := range sortedKeys(sel) {
		parts = append(parts, sanitize(sel[k]))
	}
	name := strings.Trim(strings.Join(parts, "-"), "-.")
	if name == "" {
		name = "workload"
	}
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(name))
		name = strings.Trim(name[:54], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Marshal renders a networking.istio.io/v1 Sidecar as YAML with sorted keys.
func Marshal(name, namespace string, labels map[string]string, spec *networking.Sidecar) (string, error) {
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	var specMap map[string]any
	if err := json.Unmarshal(specJSON, &specMap); err != nil {
		return "", err
	}
	if otp := spec.GetOutboundTrafficPolicy(); otp != nil {
		// jsonpb drops the enum's zero value (REGISTRY_ONLY); spell the mode out for reviewers.
		specMap["outboundTrafficPolicy"] = map[string]any{"mode": otp.GetMode().String()}
	}
	obj := map[string]any{
		"apiVersion": "networking.istio.io/v1",
		"kind":       "Sidecar",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": labels},
		"spec":       specMap,
	}
	// What sigs.k8s.io/yaml's JSONToYAML would print for the JSON of obj, without printing
	// and parsing that JSON: a plan renders one manifest per scope.
	y, err := goyaml.Marshal(yamlNumbers(obj))
	if err != nil {
		return "", err
	}
	return string(y), nil
}

// yamlNumbers turns the float64s of a decoded JSON value that are integers into ints, as the
// YAML parser types the numbers of JSON it reads, and returns the value.
func yamlNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = yamlNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = yamlNumbers(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}

// ---- dependency resolution ----

type resolver struct {
	inv    *mesh.Inventory
	domain string
	ns     string
}

func newResolver(inv *mesh.Inventory, domain, ns string) *resolver {
	return &resolver{inv: inv, domain: domain, ns: ns}
}

func (r *resolver) knownNames() []string {
	var out []string
	for _, s := range r.inv.Services {
		out = append(out, s.Name+"."+s.Namespace)
	}
	for _, se := range r.inv.ServiceEntries {
		out = append(out, se.Spec.GetHosts()...)
	}
	for _, n := range r.inv.NamespaceNames() {
		out = append(out, n+"/*")
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func (r *resolver) resolve(dep Dependency) (target, *Problem) {
	s := strings.TrimSpace(dep.Service)
	bad := func(code problem.Code, format string, a ...any) (target, *Problem) {
		p := newProblem(code, AttrDependencies, -1, fmt.Sprintf(format, a...))
		return target{}, &p
	}
	if s == "" {
		return bad(CodeMalformedHost, "A dependency has an empty service. Give a Kubernetes service (\"name\", \"name.namespace\" or its FQDN), a ServiceEntry host, or a whole namespace (\"ns/*\").")
	}
	if ns, rest, ok := strings.Cut(s, "/"); ok {
		if rest != "*" || strings.Contains(ns, "/") || len(validation.IsDNS1123Label(ns)) > 0 {
			return bad(CodeMalformedHost, "The dependency %q is not a Kubernetes service, a ServiceEntry host or a whole namespace. A namespace is written \"ns/*\" with a valid namespace name.", s)
		}
		if !r.inv.HasNamespace(ns) {
			return bad(CodeUnknownNamespace, "The dependency %q names the namespace %q, which is not in the inventory.%s", s, ns, didyoumean.DidYouMean(s, r.knownNames()))
		}
		t := target{host: ns + "/*"}
		if len(dep.Ports) > 0 {
			t.ports, t.proto = dep.Ports, map[uint32]string{}
			for _, p := range dep.Ports {
				if !r.namespaceExposes(ns, p) {
					t.unexposed = append(t.unexposed, p)
				}
			}
		}
		return t, nil
	}
	host := strings.TrimSuffix(strings.ToLower(s), ".")
	wild := strings.HasPrefix(host, "*.")
	check := host
	if wild {
		check = host[2:]
	}
	if errs := validation.IsDNS1123Subdomain(check); len(errs) > 0 || strings.Contains(check, "*") {
		return bad(CodeMalformedHost, "The dependency %q is not a valid host name. Use \"name\", \"name.namespace\", \"name.namespace.svc.%s\", a ServiceEntry host such as \"api.example.com\", or \"ns/*\".", s, r.domain)
	}
	// Kubernetes services first.
	if svc := r.kubeService(host); svc != nil {
		return r.kubeTarget(s, svc, dep.Ports)
	}
	// ServiceEntry hosts: exact, then the most specific wildcard that covers the name.
	if t, p, ok := r.serviceEntryTarget(s, host, dep.Ports); ok {
		return t, p
	}
	return bad(CodeUnknownService, "The dependency %q matches no Kubernetes Service and no ServiceEntry host in the inventory.%s", s, r.didYouMean(s, host))
}

// didYouMean suggests the known names nearest to a dependency. A Kubernetes FQDN
// ("name.ns.svc.cluster.local") is compared as "name.ns" and suggested in the form it was written.
func (r *resolver) didYouMean(raw, host string) string {
	parts := strings.Split(host, ".")
	if len(parts) < 3 || parts[2] != "svc" {
		return didyoumean.DidYouMean(raw, r.knownNames())
	}
	suffix := "." + strings.Join(parts[2:], ".")
	var short []string
	for _, svc := range r.inv.Services {
		short = append(short, svc.Name+"."+svc.Namespace)
	}
	names := didyoumean.Nearest(parts[0]+"."+parts[1], short, 3)
	for i := range names {
		names[i] += suffix
	}
	return didyoumean.DidYouMean(raw, names)
}

func (r *resolver) kubeService(host string) *mesh.Service {
	parts := strings.Split(host, ".")
	switch {
	case len(parts) == 1:
		return r.inv.Service(r.ns, parts[0])
	case len(parts) == 2:
		return r.inv.Service(parts[1], parts[0])
	case len(parts) == 3 && parts[2] == "svc":
		return r.inv.Service(parts[1], parts[0])
	case len(parts) > 3 && parts[2] == "svc" && strings.Join(parts[3:], ".") == r.domain:
		return r.inv.Service(parts[1], parts[0])
	}
	return nil
}

func (r *resolver) kubeTarget(raw string, svc *mesh.Service, ports []uint32) (target, *Problem) {
	fqdn := svc.Name + "." + svc.Namespace + ".svc." + r.domain
	if !r.inv.NamespaceVisible(svc.Namespace) {
		return target{}, &Problem{Code: CodeServiceNotVisible, Summary: CodeServiceNotVisible.Summary(), Detail: fmt.Sprintf(
			"The dependency %q resolves to %s, but its namespace %q is outside the mesh's discoverySelectors, so istiod never sees it. Label the namespace to match meshConfig.discoverySelectors.", raw, fqdn, svc.Namespace)}
	}
	// R9, R12: visible to the scope's namespace as the predictor sees it.
	if !istioconfig.ExportedTo(istioconfig.EffectiveExportTo(istioconfig.AnnotationExportTo(svc.Annotations), r.inv.Mesh.DefaultServiceExportTo), svc.Namespace, r.ns) {
		return target{}, &Problem{Code: CodeServiceNotVisible, Summary: CodeServiceNotVisible.Summary(), Detail: fmt.Sprintf(
			"The dependency %q resolves to %s, which is not exported to namespace %q (annotation %s or meshConfig.defaultServiceExportTo). Export it to %q, or remove the dependency.", raw, fqdn, r.ns, istioconfig.ExportToAnnotation, r.ns)}
	}
	t := target{host: svc.Namespace + "/" + fqdn, proto: map[uint32]string{}}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		t.aliasOf = svc.Spec.ExternalName
	}
	var avail []string
	for _, p := range svc.Spec.Ports {
		avail = append(avail, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	for _, want := range ports {
		var first *corev1.ServicePort
		hasTCP := false
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if uint32(p.Port) != want {
				continue
			}
			if first == nil {
				first = p
			}
			if p.Protocol != corev1.ProtocolUDP {
				hasTCP = true
			}
		}
		if first == nil {
			return target{}, &Problem{Code: CodePortNotExposed, Summary: CodePortNotExposed.Summary(), Detail: fmt.Sprintf(
				"The dependency %q declares port %d, but Service %s/%s exposes only %s. Use one of those ports, or drop ports to allow every port.", raw, want, svc.Namespace, svc.Name, strings.Join(avail, ", "))}
		}
		if !hasTCP {
			return target{}, &Problem{Code: CodePortNotExposed, Summary: CodePortNotExposed.Summary(), Detail: fmt.Sprintf(
				"The dependency %q declares port %d, which Service %s/%s exposes only as UDP. Istio builds no cluster for UDP ports; drop the port or the dependency.", raw, want, svc.Namespace, svc.Name)}
		}
		if first.Protocol == corev1.ProtocolUDP {
			// A port listener keeps only the first port with this number (UDP here),
			// so port-level scoping would drop the TCP cluster: import every port.
			t.ports = nil
			return t, nil
		}
		t.proto[want] = istioconfig.SidecarListenerProtocol(istioconfig.ConvertKubeProtocol(first.Port, first.Name, first.Protocol, first.AppProtocol))
		t.ports = append(t.ports, want)
	}
	return t, nil
}

func (r *resolver) serviceEntryTarget(raw, host string, ports []uint32) (target, *Problem, bool) {
	var best *mesh.ServiceEntry
	bestHost := ""
	for _, se := range r.inv.ServiceEntries {
		// R6, R9, R12: a ServiceEntry istiod shows the scope's namespace.
		if !r.inv.NamespaceVisible(se.Namespace) || !istioconfig.ExportedTo(istioconfig.EffectiveExportTo(se.Spec.GetExportTo(), r.inv.Mesh.DefaultServiceExportTo), se.Namespace, r.ns) {
			continue
		}
		for _, h := range se.Spec.GetHosts() {
			h = strings.ToLower(h)
			// R19: the host is one the ServiceEntry host covers.
			if !istioconfig.HostSubsetOf(host, h) {
				continue
			}
			// Exact beats wildcard, a longer wildcard beats a shorter one, and the
			// workload's own namespace breaks ties; otherwise the first (oldest) wins.
			better := best == nil || seRank(h, host, se.Namespace, r.ns) > seRank(bestHost, host, best.Namespace, r.ns)
			if better {
				best, bestHost = se, h
			}
		}
	}
	if best == nil {
		return target{}, nil, false
	}
	t := target{host: best.Namespace + "/" + bestHost, proto: map[uint32]string{}}
	var avail []string
	for _, p := range best.Spec.GetPorts() {
		avail = append(avail, fmt.Sprintf("%d/%s", p.GetNumber(), p.GetProtocol()))
	}
	for _, want := range ports {
		var found bool
		for _, p := range best.Spec.GetPorts() {
			if p.GetNumber() == want {
				found = true
				proto := istioconfig.SidecarListenerProtocol(p.GetProtocol())
				if _, ok := t.proto[want]; !ok {
					t.proto[want] = proto
				}
			}
		}
		if !found {
			return target{}, &Problem{Code: CodePortNotExposed, Summary: CodePortNotExposed.Summary(), Detail: fmt.Sprintf(
				"The dependency %q declares port %d, but ServiceEntry %s/%s exposes only %s. Use one of those ports, or drop ports to allow every port.", raw, want, best.Namespace, best.Name, strings.Join(avail, ", "))}, true
		}
		t.ports = append(t.ports, want)
	}
	return t, nil, true
}

func seRank(h, want, seNs, ns string) int {
	rank := len(h) * 2
	if h == want {
		rank += 1 << 20
	}
	if seNs == ns {
		rank++
	}
	return rank
}

// namespaceExposes reports whether a Service or ServiceEntry of ns has a port numbered p.
func (r *resolver) namespaceExposes(ns string, p uint32) bool {
	for _, s := range r.inv.Services {
		if s.Namespace == ns && slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return uint32(sp.Port) == p }) {
			return true
		}
	}
	for _, se := range r.inv.ServiceEntries {
		if se.Namespace == ns && slices.ContainsFunc(se.Spec.GetPorts(), func(sp *networking.ServicePort) bool { return sp.GetNumber() == p }) {
			return true
		}
	}
	return false
}

// seCovers reports whether a ServiceEntry host equals or covers h.
func (r *resolver) seCovers(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	for _, se := range r.inv.ServiceEntries {
		for _, sh := range se.Spec.GetHosts() {
			sh = strings.ToLower(sh)
			if istioconfig.HostSubsetOf(h, sh) {
				return true
			}
		}
	}
	return false
}

// coversNamespace reports whether the egress hosts import some service of ns.
func coversNamespace(hosts []string, ns string) bool {
	for _, h := range hosts {
		hns, _, ok := strings.Cut(h, "/")
		if ok && (hns == ns || hns == "*") {
			return true
		}
	}
	return false
}

// ValidateSystemHosts checks Sidecar egress host syntax ("ns/dnsName", "~ns/dnsName" on 1.31+).
func ValidateSystemHosts(hosts []string, istioVersion string) []Problem {
	var probs []Problem
	ver, err := istioconfig.ParseVersion(istioVersion)
	exclusion := err != nil || ver.EgressExclusions() // an unparseable version is the provider's error
	for i, h := range hosts {
		if !exclusion && strings.HasPrefix(h, "~") && h != "~/*" { // "~/*" imports nothing on every release
			probs = append(probs, Problem{Attribute: AttrSystemHosts, Index: i, Code: CodeExclusionNotSupported, Summary: CodeExclusionNotSupported.Summary(),
				Detail: fmt.Sprintf("The host %q uses the \"~\" exclusion syntax, which Istio understands from %s on; istio_version is %q, where it matches nothing. Remove the entry or raise istio_version.", h, istioconfig.EgressExclusionsSince, istioVersion)})
			continue
		}
		// Past the check above, a "~" host is an exclusion on every release it can reach.
		// R17: parsed as the predictor parses egress hosts.
		eh, ok := istioconfig.ParseEgressHost(h, true)
		ns, name := eh.Namespace, eh.Name
		bad := !ok || name == ""
		if !bad && ns != "*" && ns != "." && len(validation.IsDNS1123Label(ns)) > 0 {
			bad = true
		}
		if !bad && name != "*" {
			check := strings.TrimPrefix(name, "*.")
			bad = len(validation.IsDNS1123Subdomain(strings.ToLower(check))) > 0
		}
		if bad {
			probs = append(probs, Problem{Attribute: AttrSystemHosts, Index: i, Code: CodeMalformedHost, Summary: CodeMalformedHost.Summary(),
				Detail: fmt.Sprintf("The system host %q is not a Sidecar egress host. Use \"namespace/dnsName\", for example \"istio-system/*\".", h)})
		}
	}
	return probs
}
