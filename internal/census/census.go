// Package census decides, as Istio does, which workloads of an inventory run an Istio proxy,
// of which kind, and how many proxies each has; and names each workload as Istio names it in
// its metrics (the `WORKLOAD_NAME` of its proxies). The rules are RULES.md's C1 to C12, each
// with the Istio source it follows. It imports nothing from Terraform.
package census

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Proxy is what a workload runs.
type Proxy string

// The kinds of proxy.
const (
	// Sidecar is an Envoy sidecar: the proxies a Sidecar resource configures.
	Sidecar Proxy = "sidecar"
	// Gateway is an Envoy gateway (the `router` proxy type). Sidecar resources do not apply to it.
	Gateway Proxy = "gateway"
	// Proxyless is a proxyless gRPC client: an agent, no Envoy; istiod serves it through
	// another generator.
	Proxyless Proxy = "proxyless-grpc"
	// Ztunnel is an ambient workload: its traffic goes through the node's ztunnel.
	Ztunnel Proxy = "ztunnel"
	// None runs no proxy.
	None Proxy = "none"
)

// Reason is a stable code for why a workload runs what it runs.
type Reason string

// The reasons.
const (
	Injected          Reason = "injected"           // an injection webhook selects its pods and the injector injects them
	AssumedInjected   Reason = "namespace-unknown"  // its Namespace is not in the inventory: injection is assumed
	RunsProxy         Reason = "pods-run-proxy"     // its Pods, read from a cluster, run an istio-proxy
	PodsWithoutProxy  Reason = "pods-without-proxy" // its Pods, read from a cluster, run none
	NotInjected       Reason = "not-injected"       // no injection webhook selects its pods
	InjectionDisabled Reason = "injection-disabled" // its namespace is labelled istio-injection=disabled
	OptedOut          Reason = "opted-out"          // sidecar.istio.io/inject=false on its pods
	NeverInject       Reason = "never-inject"       // the injector's neverInjectSelector matches its pods
	PolicyDisabled    Reason = "policy-disabled"    // the injector's policy is disabled and nothing asks for injection
	IgnoredNamespace  Reason = "ignored-namespace"  // the injector never injects kube-system and its like
	HostNetwork       Reason = "host-network"       // the injector skips host-network pods
	Ambient           Reason = "ambient"            // istio.io/dataplane-mode=ambient without a sidecar
	ProxylessGRPC     Reason = "proxyless-grpc"     // the grpc-agent template
	GatewayProxy      Reason = "gateway"            // a gateway: the gateway template, a Gateway API deployment or a router proxy
	NoReplicas        Reason = "no-replicas"        // replicas 0, or an autoscaler whose maximum is 0
)

// Replicas is how many proxies a workload runs: between Min and Max, or one per node.
type Replicas struct {
	Min, Max int
	// PerNode: a DaemonSet, one per eligible node; the count is not known from manifests.
	PerNode bool
}

// String is "3", "2-10" or "one per node".
func (r Replicas) String() string {
	switch {
	case r.PerNode:
		return "one per node"
	case r.Min == r.Max:
		return strconv.Itoa(r.Min)
	default:
		return fmt.Sprintf("%d-%d", r.Min, r.Max)
	}
}

// Workload is one workload as Istio names it, with the objects of the inventory it folds in.
type Workload struct {
	Namespace string
	// Kind and Name are Istio's (`GetDeployMetaFromPod`): the Pods of a Deployment's ReplicaSet
	// are the Deployment's, a CronJob's Jobs the CronJob's.
	Kind, Name string
	// Labels are the labels of its pods (a template's, or a Pod's).
	Labels map[string]string
	// Objects are the inventory's objects folded into it: its own first, when the inventory
	// holds it, then ReplicaSets, Jobs and Pods.
	Objects []*mesh.Workload
	Proxy   Proxy
	Reason  Reason
	// Why says, in a sentence, why the workload runs what it runs; for a workload without a
	// sidecar it names the fix when there is one.
	Why string
	// Rule is the RULES.md rule that decided.
	Rule     string
	Replicas Replicas
	// NotModelled name what istiod adds to its proxies that meshscope does not predict, with the
	// rule: an inbound HBONE cluster (R44), the sds-external cluster of a credential socket (R45).
	NotModelled []string
	// Revision is the istiod revision that injects (or injected) its sidecars, "" when not
	// known; Version is that revision's Istio release ("1.30"), "" when the inventory does not
	// say (C12).
	Revision, Version string
	asMesh            *mesh.Workload
}

// Mesh is the workload as one inventory object: its own object (or the first folded in) under
// Istio's kind and name, with its pod labels. Code that lists workloads reads these, so that a
// Deployment listed with its ReplicaSet and Pods is one workload everywhere.
func (w *Workload) Mesh() *mesh.Workload {
	if w.asMesh == nil {
		cp := *w.Objects[0]
		cp.Kind, cp.Name, cp.PodLabels = w.Kind, w.Name, w.Labels
		w.asMesh = &cp
	}
	return w.asMesh
}

// Key is "namespace/Kind/name".
func (w *Workload) Key() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// ID is "Kind/name".
func (w *Workload) ID() string { return w.Kind + "/" + w.Name }

// RunsSidecar reports whether the workload runs Envoy sidecars: the proxies meshscope predicts.
func (w *Workload) RunsSidecar() bool { return w.Proxy == Sidecar }

// Census is the workloads of an inventory.
type Census struct {
	all  []*Workload
	byNS map[string][]*Workload
	// byName finds a workload by its Istio name or by the name of any object folded into it.
	byName    map[[2]string]*Workload
	vms       []*mesh.VMProxy
	revisions map[string]Revision
}

// Take reads the inventory's workloads.
func Take(inv *mesh.Inventory) *Census {
	c := &Census{byNS: map[string][]*Workload{}, byName: map[[2]string]*Workload{}, vms: inv.VMProxies, revisions: revisionsOf(inv)}
	type key struct{ ns, kind, name string }
	groups := map[key]*Workload{}
	for _, o := range inv.Workloads {
		kind, name := Identity(o)
		k := key{o.Namespace, kind, name}
		w := groups[k]
		if w == nil {
			w = &Workload{Namespace: o.Namespace, Kind: kind, Name: name}
			groups[k] = w
			c.all = append(c.all, w)
		}
		w.Objects = append(w.Objects, o)
	}
	d := newDecider(inv)
	for _, w := range c.all {
		slices.SortStableFunc(w.Objects, func(a, b *mesh.Workload) int { return rank(w, a) - rank(w, b) })
		w.Labels = w.Objects[0].PodLabels
		d.decide(w)
		if w.RunsSidecar() {
			w.Version = c.revisions[w.Revision].Version
			w.NotModelled = notModelled(w.Objects)
		}
		c.byNS[w.Namespace] = append(c.byNS[w.Namespace], w)
		for _, o := range w.Objects {
			c.byName[[2]string{o.Namespace, o.Name}] = w
		}
	}
	for _, w := range c.all {
		c.byName[[2]string{w.Namespace, w.Name}] = w
	}
	order := func(a, b *Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	}
	slices.SortFunc(c.all, order)
	for _, ws := range c.byNS {
		slices.SortFunc(ws, order)
	}
	return c
}

// rank orders the objects of a workload: the workload's own object, then controllers, then Pods.
func rank(w *Workload, o *mesh.Workload) int {
	switch {
	case o.Kind == w.Kind && o.Name == w.Name:
		return 0
	case o.Kind != "Pod":
		return 1
	default:
		return 2
	}
}

// VMs are the inventory's WorkloadEntries and WorkloadGroups: VM proxies, sidecars that
// meshscope does not predict (C11).
func (c *Census) VMs() []*mesh.VMProxy { return c.vms }

// AssumedSentence says which workloads are counted as sidecars only because their Namespace
// is not in the inventory (C4); "" when there are none.
func (c *Census) AssumedSentence() string {
	n := 0
	var nss []string
	seen := map[string]bool{}
	for _, w := range c.all {
		if w.Reason == AssumedInjected {
			n++
			if !seen[w.Namespace] {
				seen[w.Namespace] = true
				nss = append(nss, w.Namespace)
			}
		}
	}
	if n == 0 {
		return ""
	}
	if len(nss) > 3 {
		nss = append(nss[:3], fmt.Sprintf("and %d more", len(nss)-3))
	}
	return fmt.Sprintf("%d workloads are counted as sidecars without knowing it: the inventory lacks their namespaces (%s), "+
		"whose injection labels decide; add the Namespace manifests.", n, strings.Join(nss, ", "))
}

// VMSentence says that the VM proxies are not modelled, naming up to three; "" without any.
func (c *Census) VMSentence() string {
	if len(c.vms) == 0 {
		return ""
	}
	var names []string
	for i, v := range c.vms {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(c.vms)-i))
			break
		}
		names = append(names, v.Kind+" "+v.Key())
	}
	what := "objects describe VM proxies"
	if len(c.vms) == 1 {
		what = "object describes VM proxies"
	}
	return fmt.Sprintf("%d %s (%s): they are sidecars that meshscope does not model, so they are not reviewed.", len(c.vms), what, strings.Join(names, ", "))
}

// All returns every workload, sorted by namespace, name and kind.
func (c *Census) All() []*Workload { return c.all }

// In returns the workloads of a namespace, sorted by name and kind.
func (c *Census) In(namespace string) []*Workload { return c.byNS[namespace] }

// Lookup finds a workload by its name as Istio names it, or by the name of an object it folds
// in (a Pod, a ReplicaSet, a Job).
func (c *Census) Lookup(namespace, name string) *Workload {
	return c.byName[[2]string{namespace, name}]
}

// Sidecars returns the workloads that run sidecars, of one namespace ("": of every namespace).
func (c *Census) Sidecars(namespace string) []*Workload {
	ws := c.all
	if namespace != "" {
		ws = c.byNS[namespace]
	}
	var out []*Workload
	for _, w := range ws {
		if w.RunsSidecar() {
			out = append(out, w)
		}
	}
	return out
}

// LeftOut counts the workloads that run no sidecar, by reason.
type LeftOut map[Reason]int

// Total is the number of workloads left out.
func (l LeftOut) Total() int {
	n := 0
	for _, v := range l {
		n += v
	}
	return n
}

// String is "412 workloads run no sidecar (not injected: 380, ambient: 30, host network: 2)",
// largest first; "" when none is left out.
func (l LeftOut) String() string {
	if l.Total() == 0 {
		return ""
	}
	reasons := slices.Collect(maps.Keys(l))
	slices.SortFunc(reasons, func(a, b Reason) int { return cmp.Or(l[b]-l[a], strings.Compare(string(a), string(b))) })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s: %d", r.Words(), l[r])
	}
	what := "workloads run"
	if l.Total() == 1 {
		what = "workload runs"
	}
	return fmt.Sprintf("%d %s no sidecar (%s)", l.Total(), what, strings.Join(parts, ", "))
}

// LeftOut counts the workloads that run no sidecar, by reason.
func (c *Census) LeftOut() LeftOut {
	out := LeftOut{}
	for _, w := range c.all {
		if !w.RunsSidecar() {
			out[w.Reason]++
		}
	}
	return out
}

// Words is the reason as a summary says it.
func (r Reason) Words() string {
	switch r {
	case NotInjected:
		return "not injected"
	case InjectionDisabled:
		return "injection disabled"
	case OptedOut:
		return "opted out"
	case NeverInject:
		return "never-inject selector"
	case PolicyDisabled:
		return "injection policy disabled"
	case IgnoredNamespace:
		return "system namespace"
	case HostNetwork:
		return "host network"
	case Ambient:
		return "ambient"
	case ProxylessGRPC:
		return "proxyless gRPC"
	case GatewayProxy:
		return "gateway"
	case NoReplicas:
		return "no replicas"
	case PodsWithoutProxy:
		return "Pods without a proxy"
	default:
		return string(r)
	}
}

// cronJobName is Istio's `cronJobNameRegexp`: a Job named NAME-<8 to 10 digits> is a CronJob's.
var cronJobName = regexp.MustCompile(`(.+)-\d{8,10}$`)

// Identity names the workload an object belongs to as Istio names it (C1, C2): Istio's
// `GetDeployMetaFromPod` for a Pod, and the same rules for the ReplicaSets and Jobs a
// manifest or a cluster lists beside their Pods.
func Identity(o *mesh.Workload) (kind, name string) {
	switch o.Kind {
	case "Pod":
		if o.GenerateName == "" || o.Owner == nil {
			return "Pod", o.Name
		}
		return ownedName(o.Owner.Kind, o.Owner.Name, o.PodLabels)
	case "ReplicaSet", "Job":
		return ownedName(o.Kind, o.Name, o.PodLabels)
	}
	return o.Kind, o.Name
}

// ownedName is Istio's heuristic for the Pods of a controller named kind/name.
func ownedName(kind, name string, podLabels map[string]string) (string, string) {
	switch {
	case kind == "ReplicaSet" && podLabels["pod-template-hash"] != "" && strings.HasSuffix(name, podLabels["pod-template-hash"]):
		return "Deployment", strings.TrimSuffix(name, "-"+podLabels["pod-template-hash"])
	case kind == "ReplicaSet" && podLabels["rollouts-pod-template-hash"] != "" && strings.HasSuffix(name, podLabels["rollouts-pod-template-hash"]):
		return "Rollout", strings.TrimSuffix(name, "-"+podLabels["rollouts-pod-template-hash"])
	case kind == "ReplicationController" && podLabels["deploymentconfig"] != "":
		return "DeploymentConfig", podLabels["deploymentconfig"]
	case kind == "Job":
		if m := cronJobName.FindStringSubmatch(name); len(m) == 2 {
			return "CronJob", m[1]
		}
	}
	return kind, name
}

// Pod decides for one pod that the inventory does not hold, in namespace with labels: what
// `clusters --namespace NS --labels L` predicts for.
func Pod(inv *mesh.Inventory, namespace string, labels map[string]string) *Workload {
	o := &mesh.Workload{Meta: mesh.Meta{Kind: "Pod", Namespace: namespace}, PodLabels: labels}
	w := &Workload{Namespace: namespace, Kind: "Pod", Labels: labels, Objects: []*mesh.Workload{o}}
	newDecider(inv).decide(w)
	if w.RunsSidecar() {
		w.Version = revisionsOf(inv)[w.Revision].Version
	}
	return w
}

// notModelled names what istiod adds to a sidecar that the predictor does not model, as the pod
// asks for it: HBONE listening through the proxy metadata ISTIO_META_ENABLE_HBONE (R44), a
// credential socket mounted into the proxy (R45).
func notModelled(objs []*mesh.Workload) []string {
	hbone, socket := false, false
	for _, o := range objs {
		hbone = hbone || strings.Contains(o.PodAnnotations["proxy.istio.io/config"], "ISTIO_META_ENABLE_HBONE")
		socket = socket || o.CredentialSocket || strings.Contains(o.PodAnnotations["sidecar.istio.io/userVolumeMount"], "credential-uds")
	}
	var out []string
	if hbone {
		out = append(out, "R44: its proxy.istio.io/config sets ISTIO_META_ENABLE_HBONE; an istiod with sidecar HBONE listening adds an inbound HBONE cluster meshscope does not predict")
	}
	if socket {
		out = append(out, "R45: its proxy mounts a credential socket (/var/run/secrets/credential-uds), which adds the sds-external cluster meshscope does not predict")
	}
	return out
}
