package census

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The labels and annotations injection reads.
const (
	InjectionLabel    = "istio-injection"
	RevisionLabel     = "istio.io/rev"
	SidecarInject     = "sidecar.istio.io/inject"
	TemplatesKey      = "inject.istio.io/templates"
	DataplaneMode     = "istio.io/dataplane-mode"
	GatewayNameLabel  = "gateway.networking.k8s.io/gateway-name"
	namespaceNameKey  = "kubernetes.io/metadata.name"
	defaultRevision   = "default"
	gatewayTemplate   = "gateway"
	grpcAgentTemplate = "grpc-agent"
)

// IgnoredNamespaces are the namespaces Istio's injector never injects
// (`pkg/kube/inject/initializer.go` IgnoredNamespaces).
var IgnoredNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", "local-path-storage"}

// webhook is an injection webhook with parsed selectors.
type webhook struct {
	name, revision string
	ns, obj        labels.Selector
}

// DefaultWebhooks are the injection webhooks Istio's istio-discovery chart
// (`templates/mutatingwebhook.yaml`) renders for a revision: "" is the default revision,
// which also gets the `namespace.` and `object.` webhooks.
func DefaultWebhooks(revision string) []mesh.InjectionWebhook {
	rev := revision
	if rev == "" {
		rev = defaultRevision
	}
	sel := func(reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: reqs}
	}
	in := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	notIn := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: v}
	}
	absent := func(k string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpDoesNotExist}
	}
	config := "istio-sidecar-injector"
	if revision != "" {
		config += "-" + revision
	}
	out := []mesh.InjectionWebhook{
		{Name: "rev.namespace.sidecar-injector.istio.io", Configuration: config, Revision: rev,
			NamespaceSelector: sel(in(RevisionLabel, rev), absent(InjectionLabel)),
			ObjectSelector:    sel(notIn(SidecarInject, "false"))},
		{Name: "rev.object.sidecar-injector.istio.io", Configuration: config, Revision: rev,
			NamespaceSelector: sel(absent(RevisionLabel), absent(InjectionLabel)),
			ObjectSelector:    sel(notIn(SidecarInject, "false"), in(RevisionLabel, rev))},
	}
	if revision == "" {
		out = append(out,
			mesh.InjectionWebhook{Name: "namespace.sidecar-injector.istio.io", Configuration: config, Revision: rev,
				NamespaceSelector: sel(in(InjectionLabel, "enabled")),
				ObjectSelector:    sel(notIn(SidecarInject, "false"))},
			mesh.InjectionWebhook{Name: "object.sidecar-injector.istio.io", Configuration: config, Revision: rev,
				NamespaceSelector: sel(absent(InjectionLabel), absent(RevisionLabel)),
				ObjectSelector:    sel(in(SidecarInject, "true"), absent(RevisionLabel))})
	}
	return out
}

type decider struct {
	inv      *mesh.Inventory
	webhooks []webhook
	// assumed names where the webhooks came from when the inventory holds none.
	assumed  string
	injector mesh.InjectorConfig
	never    []labels.Selector
	always   []labels.Selector
	scalers  map[[3]string]*mesh.Autoscaler
	// revision is the revision of the webhook the last injected decision went through.
	revision string
}

func newDecider(inv *mesh.Inventory) *decider {
	d := &decider{inv: inv, scalers: map[[3]string]*mesh.Autoscaler{}}
	var hooks []mesh.InjectionWebhook
	if len(inv.Webhooks) > 0 {
		configs := make([]string, 0, len(inv.Webhooks))
		for c := range inv.Webhooks {
			configs = append(configs, c)
		}
		slices.Sort(configs)
		for _, c := range configs {
			hooks = append(hooks, inv.Webhooks[c]...)
		}
	} else {
		// C3: without the webhook configurations, Istio's default install, with one set of
		// revision webhooks per istiod revision the inventory runs.
		hooks = DefaultWebhooks("")
		var revs []string
		for name := range revisionsOf(inv) {
			if name != defaultRevision {
				revs = append(revs, name)
			}
		}
		slices.Sort(revs)
		for _, r := range revs {
			hooks = append(hooks, DefaultWebhooks(r)...)
		}
		d.assumed = "the injection webhooks of Istio's default install"
		if len(revs) > 0 {
			d.assumed += " and of revisions " + strings.Join(revs, ", ")
		}
	}
	for _, h := range hooks {
		d.webhooks = append(d.webhooks, webhook{name: h.Configuration + "/" + h.Name, revision: h.Revision,
			ns: selector(h.NamespaceSelector), obj: selector(h.ObjectSelector)})
	}
	if inv.Injector != nil {
		d.injector = *inv.Injector
	}
	for i := range d.injector.NeverInjectSelector {
		d.never = append(d.never, selector(&d.injector.NeverInjectSelector[i]))
	}
	for i := range d.injector.AlwaysInjectSelector {
		d.always = append(d.always, selector(&d.injector.AlwaysInjectSelector[i]))
	}
	for _, a := range inv.Autoscalers {
		d.scalers[[3]string{a.Namespace, a.TargetKind, a.TargetName}] = a
	}
	return d
}

// selector converts a label selector; nil matches everything, as the API server treats a
// webhook without one. The inventory checked every selector when it read it.
func selector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

func (d *decider) decide(w *Workload) {
	tpl := w.Objects[0]
	d.revision = ""
	defer func() {
		// C12: the revision that injected it, as its proxy says, else the webhook's.
		w.Revision = d.revision
		for _, o := range w.Objects {
			if r := injectedRevision(o); r != "" {
				w.Revision = r
				break
			}
		}
	}()
	w.Replicas = d.replicas(w, tpl)
	if pods := observedPods(w); len(pods) > 0 {
		d.fromPods(w, tpl, pods)
		return
	}
	d.fromTemplate(w, tpl)
	if w.Proxy != None && w.Proxy != Ztunnel && w.Replicas.Max == 0 && !w.Replicas.PerNode {
		// C10: a workload with no replicas runs no proxy.
		w.Proxy, w.Reason, w.Rule = None, NoReplicas, "C10"
		w.Why = fmt.Sprintf("%s %s has 0 replicas, so it runs no proxy", w.Kind, w.Name)
	}
}

// observedPods are the workload's Pods read from a cluster (they carry a status) that have not
// finished: a Succeeded or Failed Pod runs no proxy any more.
func observedPods(w *Workload) []*mesh.Workload {
	var out []*mesh.Workload
	for _, o := range w.Objects {
		if o.Kind == "Pod" && o.Phase != "" && o.Phase != "Succeeded" && o.Phase != "Failed" {
			out = append(out, o)
		}
	}
	return out
}

// fromPods takes the truth from Pods read from a cluster (C9): the proxies are the Pods that run one.
func (d *decider) fromPods(w *Workload, tpl *mesh.Workload, pods []*mesh.Workload) {
	n, router := 0, false
	for _, p := range pods {
		if p.Proxy != mesh.NoProxyContainer {
			n++
			router = router || p.Router
		}
	}
	w.Replicas = Replicas{Min: n, Max: n}
	w.Rule = "C9"
	if n == 0 {
		// The template says why, unless it says a sidecar: then the Pods predate injection.
		d.fromTemplate(w, tpl)
		if w.Proxy == Sidecar || w.Proxy == Gateway || w.Proxy == Proxyless {
			w.Proxy, w.Reason, w.Rule = None, PodsWithoutProxy, "C9"
			w.Why = fmt.Sprintf("none of its %d Pods runs an %s container, though Istio would inject them now: restart them to inject them", len(pods), mesh.ProxyContainerName)
		}
		return
	}
	w.Reason = RunsProxy
	w.Why = fmt.Sprintf("%d of its %d Pods run an %s container", n, len(pods), mesh.ProxyContainerName)
	if router || isGateway(tpl) {
		w.Proxy = Gateway
		w.Why += " as a gateway; Sidecar resources do not apply to gateways"
		return
	}
	w.Proxy = Sidecar
}

func isGateway(o *mesh.Workload) bool {
	return o.Router || o.PodLabels[GatewayNameLabel] != "" || hasTemplate(o, gatewayTemplate)
}

func hasTemplate(o *mesh.Workload, name string) bool {
	for _, t := range strings.Split(o.PodAnnotations[TemplatesKey], ",") {
		if strings.TrimSpace(t) == name {
			return true
		}
	}
	return false
}

// fromTemplate decides from the pod template, as the API server and the injector would.
func (d *decider) fromTemplate(w *Workload, o *mesh.Workload) {
	set := func(p Proxy, r Reason, rule, why string) { w.Proxy, w.Reason, w.Rule, w.Why = p, r, rule, why }
	if o.Proxy != mesh.NoProxyContainer {
		// C8: a manifest rendered after injection (istioctl kube-inject) holds the proxy itself.
		if o.Router || isGateway(o) {
			set(Gateway, GatewayProxy, "C7", "it runs a gateway proxy; Sidecar resources do not apply to gateways")
			return
		}
		set(Sidecar, Injected, "C8", "its pod template holds an "+mesh.ProxyContainerName+" container")
		return
	}
	if o.PodLabels[GatewayNameLabel] != "" {
		set(Gateway, GatewayProxy, "C7", fmt.Sprintf("it is the deployment of Gateway %s (label %s); Sidecar resources do not apply to gateways", o.PodLabels[GatewayNameLabel], GatewayNameLabel))
		return
	}
	nsObj := d.inv.Namespaces[w.Namespace]
	ambient := o.PodLabels[DataplaneMode] == "ambient" ||
		(nsObj != nil && nsObj.Labels[DataplaneMode] == "ambient" && o.PodLabels[DataplaneMode] != "none")
	injected, reason, rule, why := d.injected(w.Namespace, nsObj, o)
	if !injected {
		if ambient && reason != HostNetwork {
			set(Ztunnel, Ambient, "C6", "it is in ambient mode (istio.io/dataplane-mode=ambient) without a sidecar: its traffic goes through ztunnel, which Sidecar resources do not configure")
			return
		}
		set(None, reason, rule, why)
		return
	}
	switch {
	case hasTemplate(o, gatewayTemplate):
		set(Gateway, GatewayProxy, "C7", "it is injected with the gateway template ("+TemplatesKey+": gateway); Sidecar resources do not apply to gateways")
	case hasTemplate(o, grpcAgentTemplate):
		set(Proxyless, ProxylessGRPC, "C7", "it is injected with the grpc-agent template: a proxyless gRPC client with no Envoy, which istiod serves through its gRPC generator; meshscope predicts Envoy clusters only")
	default:
		set(Sidecar, reason, rule, why)
	}
}

// injected decides whether Istio injects a pod: the webhooks' selectors (C3, C4), then the
// injector's own `injectRequired` (C5).
func (d *decider) injected(ns string, nsObj *mesh.Namespace, o *mesh.Workload) (bool, Reason, string, string) {
	podLabels := labels.Set(o.PodLabels)
	reason, rule, why := Injected, "C5", ""
	if nsObj == nil {
		// The namespace's labels are not known: the selectors cannot be evaluated.
		reason, rule = AssumedInjected, "C4"
		why = fmt.Sprintf("namespace %s is not in the inventory, so its injection labels are not known; a sidecar is assumed (add the Namespace manifest)", ns)
	} else {
		nsLabels := labels.Set{namespaceNameKey: ns}
		for k, v := range nsObj.Labels {
			nsLabels[k] = v
		}
		var by string
		for _, h := range d.webhooks {
			if h.ns.Matches(nsLabels) && h.obj.Matches(podLabels) {
				by, d.revision = h.name, h.revision
				break
			}
		}
		if by == "" {
			switch {
			case nsLabels[InjectionLabel] == "disabled":
				return false, InjectionDisabled, "C3", fmt.Sprintf("namespace %s is labelled %s=disabled", ns, InjectionLabel)
			case podLabels[SidecarInject] == "false":
				return false, OptedOut, "C3", fmt.Sprintf("its pods are labelled %s=false", SidecarInject)
			}
			src := d.assumed
			if src == "" {
				src = "the injection webhooks of the inventory"
			}
			return false, NotInjected, "C3", fmt.Sprintf("no injection webhook selects its pods (%s); label namespace %s %s=enabled, or its pods %s=true, to inject them", src, ns, InjectionLabel, SidecarInject)
		}
		why = "injected through webhook " + by
	}
	// C5: the injector's injectRequired.
	if o.HostNetwork {
		return false, HostNetwork, "C5", "its pods use the host network (spec.hostNetwork), which Istio's injector never injects"
	}
	if slices.Contains(IgnoredNamespaces, ns) {
		return false, IgnoredNamespace, "C5", fmt.Sprintf("Istio's injector never injects namespace %s", ns)
	}
	value, useDefault := o.PodAnnotations[SidecarInject], false
	if l, ok := o.PodLabels[SidecarInject]; ok {
		value = l
	}
	inject := false
	switch value {
	case "true":
		inject = true
	case "false":
	default:
		useDefault = true
	}
	if useDefault {
		for _, s := range d.never {
			if !s.Empty() && s.Matches(podLabels) {
				return false, NeverInject, "C5", "its pod labels match the injector's neverInjectSelector " + s.String()
			}
		}
		for _, s := range d.always {
			if !s.Empty() && s.Matches(podLabels) {
				useDefault, inject = false, true
				break
			}
		}
	}
	switch {
	case !useDefault && !inject:
		return false, OptedOut, "C5", fmt.Sprintf("its pods are labelled or annotated %s=false", SidecarInject)
	case useDefault && d.injector.Policy == "disabled":
		return false, PolicyDisabled, "C5", fmt.Sprintf("the injector's policy is disabled (%s) and its pods do not ask for injection with %s=true", d.injector.Source, SidecarInject)
	}
	return true, reason, rule, why
}

// replicas is how many proxies a workload's template runs (C10, C11).
func (d *decider) replicas(w *Workload, tpl *mesh.Workload) Replicas {
	if a := d.scalers[[3]string{w.Namespace, w.Kind, w.Name}]; a != nil {
		return Replicas{Min: int(a.Min), Max: int(a.Max)}
	}
	switch tpl.Kind {
	case "DaemonSet":
		return Replicas{PerNode: true}
	case "CronJob":
		// A CronJob's pods run while a Job runs: none between runs.
		n := 1
		if tpl.Replicas != nil {
			n = int(*tpl.Replicas)
		}
		return Replicas{Min: 0, Max: n}
	}
	n := 1
	if tpl.Replicas != nil {
		n = int(*tpl.Replicas)
	}
	return Replicas{Min: n, Max: n}
}
