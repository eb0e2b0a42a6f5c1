package mesh

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ProxyContainer is what a Pod's spec says about an Istio proxy, as injection leaves it.
type ProxyContainer int

const (
	// NoProxyContainer: the spec holds no `istio-proxy` container (a template before injection,
	// or a Pod the injector skipped).
	NoProxyContainer ProxyContainer = iota
	// SidecarContainer: an `istio-proxy` container.
	SidecarContainer
	// NativeSidecar: an `istio-proxy` init container with restartPolicy Always (native sidecar mode).
	NativeSidecar
)

// ProxyContainerName is the name the injector gives the proxy's container.
const ProxyContainerName = "istio-proxy"

// OwnerRef is the controller reference of an object.
type OwnerRef struct {
	APIVersion string
	Kind       string
	Name       string
}

// Autoscaler is a HorizontalPodAutoscaler: its target and replica bounds.
type Autoscaler struct {
	Meta
	TargetKind string
	TargetName string
	// Min is spec.minReplicas (1 when unset); Max is spec.maxReplicas.
	Min, Max int32
}

// InjectionWebhook is one webhook of an injection MutatingWebhookConfiguration
// (`istio-sidecar-injector[-REV]`, `istio-revision-tag-TAG`): the API server calls the
// injector for a Pod when both selectors match.
type InjectionWebhook struct {
	// Name is the webhook's name ("namespace.sidecar-injector.istio.io").
	Name string
	// Configuration is the name of the MutatingWebhookConfiguration that holds it.
	Configuration string
	// Revision is the istiod revision that injects through it: the configuration's istio.io/rev
	// label, as the charts set it ("default" for the default revision; a tag's points at its
	// revision).
	Revision          string
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
}

// InjectorConfig is the `config` of the injector's ConfigMap (`istio-sidecar-injector`).
type InjectorConfig struct {
	// Policy is "enabled" or "disabled" ("" when the ConfigMap does not set it: enabled).
	Policy               string                 `json:"policy"`
	NeverInjectSelector  []metav1.LabelSelector `json:"neverInjectSelector"`
	AlwaysInjectSelector []metav1.LabelSelector `json:"alwaysInjectSelector"`
	// Source names the ConfigMap.
	Source string `json:"-"`
}

// isInjectionWebhook says whether a MutatingWebhookConfiguration's webhook is Istio's sidecar
// injector: every webhook the injection charts render is named "*sidecar-injector.istio.io".
func isInjectionWebhook(name string) bool {
	return strings.HasSuffix(name, "sidecar-injector.istio.io")
}

func decodeWebhooks(js []byte) (object, bool, error) {
	var o admissionv1.MutatingWebhookConfiguration
	if err := json.Unmarshal(js, &o); err != nil {
		return object{}, false, err
	}
	var out []InjectionWebhook
	for _, w := range o.Webhooks {
		if !isInjectionWebhook(w.Name) {
			continue
		}
		for _, sel := range []*metav1.LabelSelector{w.NamespaceSelector, w.ObjectSelector} {
			if sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				return object{}, false, fmt.Errorf("webhook %s: %w", w.Name, err)
			}
		}
		out = append(out, InjectionWebhook{Name: w.Name, Configuration: o.Name, Revision: o.Labels["istio.io/rev"],
			NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector})
	}
	if len(out) == 0 {
		return object{}, false, nil
	}
	return object{webhooks: &webhookSet{config: o.Name, webhooks: out}}, true, nil
}

func decodeAutoscaler(js []byte, src string) (object, error) {
	var o autoscalingv2.HorizontalPodAutoscaler
	if err := json.Unmarshal(js, &o); err != nil {
		return object{}, err
	}
	a := &Autoscaler{Meta: meta("HorizontalPodAutoscaler", "autoscaling/v2", o.ObjectMeta, src),
		TargetKind: o.Spec.ScaleTargetRef.Kind, TargetName: o.Spec.ScaleTargetRef.Name, Min: 1, Max: o.Spec.MaxReplicas}
	if o.Spec.MinReplicas != nil {
		a.Min = *o.Spec.MinReplicas
	}
	if a.Max < a.Min {
		return object{}, fmt.Errorf("spec.maxReplicas %d is below spec.minReplicas %d", a.Max, a.Min)
	}
	return object{autoscaler: a}, nil
}

// parseInjectorConfig reads the `config` key of the injector's ConfigMap.
func parseInjectorConfig(data string) (InjectorConfig, error) {
	var c InjectorConfig
	if strings.TrimSpace(data) == "" {
		return c, nil
	}
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		return c, err
	}
	switch c.Policy {
	case "", "enabled", "disabled":
	default:
		return c, fmt.Errorf("policy %q: Istio's injector takes enabled or disabled (any other value turns injection off)", c.Policy)
	}
	for i := range c.NeverInjectSelector {
		if _, err := metav1.LabelSelectorAsSelector(&c.NeverInjectSelector[i]); err != nil {
			return c, fmt.Errorf("neverInjectSelector[%d]: %w", i, err)
		}
	}
	for i := range c.AlwaysInjectSelector {
		if _, err := metav1.LabelSelectorAsSelector(&c.AlwaysInjectSelector[i]); err != nil {
			return c, fmt.Errorf("alwaysInjectSelector[%d]: %w", i, err)
		}
	}
	return c, nil
}

// proxyContainer finds the proxy the injector adds to a Pod spec, and whether it runs as a
// gateway (the `router` proxy type).
func proxyContainer(spec corev1.PodSpec) (ProxyContainer, bool) {
	router := func(c corev1.Container) bool {
		for _, a := range c.Args {
			if a == "router" {
				return true
			}
		}
		return false
	}
	for _, c := range spec.Containers {
		if c.Name == ProxyContainerName {
			return SidecarContainer, router(c)
		}
	}
	for _, c := range spec.InitContainers {
		if c.Name == ProxyContainerName && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return NativeSidecar, router(c)
		}
	}
	return NoProxyContainer, false
}

func controllerOf(om metav1.ObjectMeta) *OwnerRef {
	for _, r := range om.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return &OwnerRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
		}
	}
	return nil
}

// VMProxy is a WorkloadEntry or WorkloadGroup: a VM proxy, of which meshscope reads the
// metadata and the labels its proxies carry (a WorkloadEntry's spec.labels, a WorkloadGroup's
// spec.metadata.labels), which a Sidecar's workloadSelector matches.
type VMProxy struct {
	Meta
	ProxyLabels map[string]string
}

// mainImage is the image of the container named "discovery" (istiod's), else of the first.
func mainImage(spec corev1.PodSpec) string {
	for _, c := range spec.Containers {
		if c.Name == "discovery" {
			return c.Image
		}
	}
	if len(spec.Containers) > 0 {
		return spec.Containers[0].Image
	}
	return ""
}

// credentialSocket reports whether a container mounts a volume at the proxy's credential socket
// directory.
func credentialSocket(spec corev1.PodSpec) bool {
	for _, c := range append(append([]corev1.Container(nil), spec.Containers...), spec.InitContainers...) {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/var/run/secrets/credential-uds") {
				return true
			}
		}
	}
	return false
}
