// Package mesh holds the inventory that meshscope reads: the Kubernetes and Istio
// objects of a mesh, loaded from YAML (or, later, from a live cluster), plus the
// mesh-wide settings of the `istio` ConfigMap. It imports nothing from Terraform.
package mesh

import (
	"sort"
	"time"

	networking "istio.io/api/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default names and values used when the inventory does not set them.
const (
	DefaultRootNamespace = "istio-system"
	DefaultDomainSuffix  = "cluster.local"
	ManagedByLabel       = "app.kubernetes.io/managed-by"
	ManagedByValue       = "meshscope"
)

// Meta is the part of an object's metadata the predictor and compiler use.
type Meta struct {
	Kind        string
	APIVersion  string
	Name        string
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	Created     time.Time
	// Source names where the object came from: "file.yaml#2" or "cluster".
	Source string
}

func (m *Meta) meta() *Meta { return m }

// Key returns "namespace/name".
func (m *Meta) Key() string { return m.Namespace + "/" + m.Name }

// Namespace is a Kubernetes namespace and its labels.
type Namespace struct {
	Meta
}

// ContainerPort is a named container port of a workload, used to resolve named targetPorts.
type ContainerPort struct {
	Name     string
	Port     int32
	Protocol corev1.Protocol
}

// Workload is a set of pods that share labels: a Pod, or the pod template of a
// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob.
type Workload struct {
	Meta
	// PodLabels are the labels of the pods (the template labels for controllers).
	PodLabels map[string]string
	// PodAnnotations are the annotations of the pods (the template's for controllers).
	PodAnnotations map[string]string
	Ports          []ContainerPort
	// PodIP is set for Pods that carry status.podIP.
	PodIP string
	// Replicas is spec.replicas of a Deployment, StatefulSet, ReplicaSet or Rollout (nil: unset,
	// 1), and spec.parallelism of a Job or of a CronJob's job template (nil: unset, 1).
	Replicas *int32
	// TemplateRef is, for a Rollout with spec.workloadRef, the Deployment whose pod template it
	// runs; the pod fields above are that template's once the inventory holds the Deployment.
	TemplateRef string
	// HostNetwork is spec.hostNetwork of the pods.
	HostNetwork bool
	// Proxy is the Istio proxy the pod spec holds (a Pod read from a cluster, or a manifest
	// rendered after injection), and Router whether it runs as a gateway.
	Proxy  ProxyContainer
	Router bool
	// Owner is the controller reference of the object, if any.
	Owner *OwnerRef
	// GenerateName is metadata.generateName (of a Pod).
	GenerateName string
	// CredentialSocket: a container mounts a volume at /var/run/secrets/credential-uds, where
	// the proxy finds a credential socket.
	CredentialSocket bool
	// Image is the image of the first container named "discovery", else of the first
	// container (an istiod Deployment's says its Istio release).
	Image string
	// Phase is a Pod's status.phase: set when the Pod was read from a cluster (or a dump of
	// one), so that its containers are what runs.
	Phase string
	// NotReady is set for a Pod with a status whose Ready condition is not True. A Pod without
	// a status (a manifest) and a controller's pods count as ready.
	NotReady bool
	// Terminating is set for a Pod with metadata.deletionTimestamp.
	Terminating bool
}

// Terminal reports whether a Pod has completed (phase Succeeded or Failed).
func (w *Workload) Terminal() bool { return w.Phase == "Succeeded" || w.Phase == "Failed" }

// HasPods reports whether the workload runs at least one pod (replicas is not 0).
func (w *Workload) HasPods() bool { return w.Replicas == nil || *w.Replicas > 0 }

// Service is a Kubernetes Service with apiserver defaults applied
// (targetPort = port, protocol = TCP).
type Service struct {
	Meta
	Spec corev1.ServiceSpec
}

// EndpointSlice is a discovery.k8s.io/v1 EndpointSlice. meshscope reads the endpoints of a
// Service without a selector from them (R57): those of a Service with one, Kubernetes' controller
// writes from its Pods, which the inventory holds.
type EndpointSlice struct {
	Meta
	// Service is the kubernetes.io/service-name label: the Service the slice belongs to.
	Service     string
	AddressType discoveryv1.AddressType
	Endpoints   []discoveryv1.Endpoint
	Ports       []discoveryv1.EndpointPort
}

// ServiceEntry is an Istio ServiceEntry.
type ServiceEntry struct {
	Meta
	Spec *networking.ServiceEntry
}

// DestinationRule is an Istio DestinationRule.
type DestinationRule struct {
	Meta
	Spec *networking.DestinationRule
}

// VirtualService is an Istio VirtualService.
type VirtualService struct {
	Meta
	Spec *networking.VirtualService
}

// EnvoyFilter is an Istio EnvoyFilter.
type EnvoyFilter struct {
	Meta
	Spec *networking.EnvoyFilter
}

// Sidecar is an Istio Sidecar.
type Sidecar struct {
	Meta
	Spec *networking.Sidecar
}

// MeshSettings are the MeshConfig fields that decide cluster visibility.
type MeshSettings struct {
	RootNamespace                  string
	DefaultServiceExportTo         []string
	DefaultDestinationRuleExportTo []string
	DefaultVirtualServiceExportTo  []string
	DiscoverySelectors             []metav1.LabelSelector
	// OutboundTrafficPolicy is ALLOW_ANY, REGISTRY_ONLY or ALLOW_ANY_DYNAMIC_DNS.
	OutboundTrafficPolicy string
	// Tracer is the bootstrap tracer cluster name ("zipkin", "lightstep", "datadog_agent") or "".
	Tracer string
	// Source names the ConfigMap the settings came from, or "" for defaults.
	Source string
}

// DefaultMeshSettings returns Istio's defaults.
func DefaultMeshSettings() MeshSettings {
	return MeshSettings{
		RootNamespace:                  DefaultRootNamespace,
		DefaultServiceExportTo:         []string{"*"},
		DefaultDestinationRuleExportTo: []string{"*"},
		DefaultVirtualServiceExportTo:  []string{"*"},
		OutboundTrafficPolicy:          "ALLOW_ANY",
	}
}

// Inventory is the set of objects meshscope reasons about.
type Inventory struct {
	Namespaces       map[string]*Namespace
	Services         []*Service
	Workloads        []*Workload
	ServiceEntries   []*ServiceEntry
	DestinationRules []*DestinationRule
	VirtualServices  []*VirtualService
	Sidecars         []*Sidecar
	Autoscalers      []*Autoscaler
	EndpointSlices   []*EndpointSlice
	// EndpointSlicesListed is set when the slices were listed from a cluster: a Service
	// without a selector and without one then has no endpoints, rather than unknown ones.
	EndpointSlicesListed bool
	// VMProxies are the WorkloadEntries and WorkloadGroups: VM proxies, which meshscope does
	// not predict (C11) but reports.
	VMProxies []*VMProxy
	// EnvoyFilters can patch a proxy's clusters, which the predictor does not model (R39): the
	// surfaces name those that reach a proxy.
	EnvoyFilters []*EnvoyFilter
	// Webhooks are the sidecar-injection webhooks of the MutatingWebhookConfigurations read,
	// by configuration name; none: Istio's default install is assumed.
	Webhooks map[string][]InjectionWebhook
	// Injector is the injector's ConfigMap `config`, nil when none was read.
	Injector *InjectorConfig
	Mesh     MeshSettings
	// meshSet records that an `istio` ConfigMap was loaded.
	meshSet bool
	// seq gives objects without a creationTimestamp a stable, increasing creation order.
	seq int
	// pos finds an object loaded earlier with the same kind, namespace and name
	// without scanning its list (see upsert). Clone starts the copy without it.
	pos listIndexes
	// workloadRefs are the Rollouts whose pod template is a Deployment's (resolveWorkloadRefs).
	workloadRefs []*Workload
}

// listIndexes holds one listIndex per object list.
type listIndexes struct {
	services, workloads, serviceEntries, destinationRules, virtualServices, sidecars, autoscalers, endpointSlices, vms, envoyFilters *listIndex
}

// New returns an empty inventory with default mesh settings.
func New() *Inventory {
	return &Inventory{Namespaces: map[string]*Namespace{}, Mesh: DefaultMeshSettings()}
}

// HasMeshConfig reports whether an `istio` ConfigMap was loaded.
func (inv *Inventory) HasMeshConfig() bool { return inv.meshSet }

// ObjectCount is the number of objects the inventory holds (the mesh ConfigMap counts as one).
func (inv *Inventory) ObjectCount() int {
	n := len(inv.Namespaces) + len(inv.Services) + len(inv.Workloads) + len(inv.ServiceEntries) +
		len(inv.DestinationRules) + len(inv.VirtualServices) + len(inv.Sidecars) + len(inv.Autoscalers) + len(inv.Webhooks) + len(inv.VMProxies) + len(inv.EnvoyFilters)
	if inv.Injector != nil {
		n++
	}
	if inv.meshSet {
		n++
	}
	return n
}

// Empty reports whether the inventory holds no object of a kind meshscope reads: no manifests,
// or none of those kinds in them.
func (inv *Inventory) Empty() bool { return inv.ObjectCount() == 0 }

// EmptyHint is the sentence an error about a name the inventory lacks adds when the inventory
// is empty, so that the cause is named rather than the symptom.
const EmptyHint = " The inventory is empty: no Namespace, Service, workload, ServiceEntry, DestinationRule, " +
	"VirtualService, Sidecar or istio ConfigMap was read. Check that the manifests are given (and not empty), " +
	"and hold the Kubernetes and Istio objects of the mesh."

// Clone returns a shallow copy whose object lists can be changed independently.
func (inv *Inventory) Clone() *Inventory {
	out := *inv
	out.pos = listIndexes{}
	out.Namespaces = make(map[string]*Namespace, len(inv.Namespaces))
	for k, v := range inv.Namespaces {
		out.Namespaces[k] = v
	}
	out.Services = append([]*Service(nil), inv.Services...)
	out.Workloads = append([]*Workload(nil), inv.Workloads...)
	out.ServiceEntries = append([]*ServiceEntry(nil), inv.ServiceEntries...)
	out.DestinationRules = append([]*DestinationRule(nil), inv.DestinationRules...)
	out.VirtualServices = append([]*VirtualService(nil), inv.VirtualServices...)
	out.Sidecars = append([]*Sidecar(nil), inv.Sidecars...)
	out.Autoscalers = append([]*Autoscaler(nil), inv.Autoscalers...)
	out.EndpointSlices = append([]*EndpointSlice(nil), inv.EndpointSlices...)
	out.VMProxies = append([]*VMProxy(nil), inv.VMProxies...)
	out.EnvoyFilters = append([]*EnvoyFilter(nil), inv.EnvoyFilters...)
	out.workloadRefs = append([]*Workload(nil), inv.workloadRefs...)
	return &out
}

// WithSidecars returns a copy of the inventory in which each given Sidecar
// replaces the Sidecar with the same namespace and name, or is added.
func (inv *Inventory) WithSidecars(sidecars ...*Sidecar) *Inventory {
	out := inv.Clone()
	for _, sc := range sidecars {
		replaced := false
		for i, old := range out.Sidecars {
			if old.Namespace == sc.Namespace && old.Name == sc.Name {
				cp := *sc
				if cp.Created.IsZero() {
					cp.Created = old.Created
				}
				out.Sidecars[i] = &cp
				replaced = true
				break
			}
		}
		if !replaced {
			cp := *sc
			if cp.Created.IsZero() {
				cp.Created = out.nextCreated()
			}
			out.Sidecars = append(out.Sidecars, &cp)
		}
	}
	return out
}

// WithoutSidecars returns a copy of the inventory without the Sidecars for which drop returns true.
func (inv *Inventory) WithoutSidecars(drop func(*Sidecar) bool) *Inventory {
	out := inv.Clone()
	kept := out.Sidecars[:0]
	for _, sc := range out.Sidecars {
		if !drop(sc) {
			kept = append(kept, sc)
		}
	}
	out.Sidecars = kept
	return out
}

// nextCreated gives objects without a creationTimestamp a deterministic time that
// sorts after every explicit timestamp, in load order, like objects created later.
func (inv *Inventory) nextCreated() time.Time {
	inv.seq++
	return time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(inv.seq) * time.Second)
}

// NamespaceNames returns the sorted names of every namespace that is declared or
// that holds an object.
func (inv *Inventory) NamespaceNames() []string {
	seen := make(map[string]bool, len(inv.Namespaces))
	for n := range inv.Namespaces {
		seen[n] = true
	}
	// Objects come grouped by namespace: hash a namespace only when it changes.
	last, started := "", false
	add := func(ns string) {
		if !started || ns != last {
			seen[ns] = true
			last, started = ns, true
		}
	}
	for _, s := range inv.Services {
		add(s.Namespace)
	}
	for _, w := range inv.Workloads {
		add(w.Namespace)
	}
	for _, s := range inv.ServiceEntries {
		add(s.Namespace)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HasNamespace reports whether ns is declared or holds an object: whether NamespaceNames
// lists it, without building the list.
func (inv *Inventory) HasNamespace(ns string) bool {
	if _, ok := inv.Namespaces[ns]; ok {
		return true
	}
	for _, s := range inv.Services {
		if s.Namespace == ns {
			return true
		}
	}
	for _, w := range inv.Workloads {
		if w.Namespace == ns {
			return true
		}
	}
	for _, s := range inv.ServiceEntries {
		if s.Namespace == ns {
			return true
		}
	}
	return false
}

// NamespaceVisible applies meshConfig.discoverySelectors (rule R6): with selectors
// set, only namespaces whose labels match one of them are seen by istiod.
func (inv *Inventory) NamespaceVisible(ns string) bool {
	if len(inv.Mesh.DiscoverySelectors) == 0 {
		return true
	}
	var lbls map[string]string
	if n, ok := inv.Namespaces[ns]; ok {
		lbls = n.Labels
	}
	// The apiserver adds this label to every namespace.
	all := map[string]string{"kubernetes.io/metadata.name": ns}
	for k, v := range lbls {
		all[k] = v
	}
	for i := range inv.Mesh.DiscoverySelectors {
		sel, err := metav1.LabelSelectorAsSelector(&inv.Mesh.DiscoverySelectors[i])
		if err != nil {
			continue
		}
		if sel.Matches(labelSet(all)) {
			return true
		}
	}
	return false
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// Service looks up a Kubernetes Service by namespace and name.
func (inv *Inventory) Service(ns, name string) *Service {
	for _, s := range inv.Services {
		if s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

// WorkloadByName looks up a workload (Pod or controller) by namespace and name.
func (inv *Inventory) WorkloadByName(ns, name string) *Workload {
	for _, w := range inv.Workloads {
		if w.Namespace == ns && w.Name == name {
			return w
		}
	}
	return nil
}

// GetSpecIngress returns the Sidecar's ingress listeners; nil-safe.
func (s *Sidecar) GetSpecIngress() []*networking.IstioIngressListener {
	if s == nil || s.Spec == nil {
		return nil
	}
	return s.Spec.GetIngress()
}
