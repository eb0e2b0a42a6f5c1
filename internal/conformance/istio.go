// Package conformance checks the meshscope predictor against Istio's own
// config generator (istiod's CDS generation, run in-process through
// istio.io/istio/pilot/test/xds.FakeDiscoveryServer).
//
// This is a separate Go module: istio.io/istio pins Kubernetes and istio.io/api
// versions that conflict with the main module, so the predictor is exercised
// only through its CLI binary (see cli.go).
package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	meshconfig "istio.io/api/mesh/v1alpha1"
	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/labelselector"
	kubelib "istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/test"
)

const (
	// DomainSuffix is the cluster domain used everywhere (the fake hard-codes it too).
	DomainSuffix = "cluster.local"
	// SystemNamespace is where istiod runs and where its `istio` ConfigMap lives.
	SystemNamespace = "istio-system"
	// MeshConfigMapName is the name of istiod's mesh ConfigMap; key `mesh` holds MeshConfig YAML.
	MeshConfigMapName = "istio"
	// clusterID is the fake's default cluster name.
	clusterID = "Kubernetes"
)

// DefaultCreationTime is the creationTimestamp given to objects that have none.
// A real `kubectl apply` stamps every object with the time it was created; for an
// inventory without timestamps we treat all objects as created in the same second,
// so ordering ties are broken by name (then namespace), exactly as istiod does.
var DefaultCreationTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Proxy identifies one sidecar: the namespace and the full label set of its pod.
// Exactly one pod in Namespace must carry exactly these labels.
type Proxy struct {
	Namespace string
	Labels    map[string]string
}

// Key is a stable, human readable identifier for the proxy.
func (p Proxy) Key() string {
	return p.Namespace + "/" + LabelString(p.Labels)
}

// LabelString renders labels as sorted k=v,k=v (the CLI's --labels syntax).
func LabelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// Inventory is a parsed inventory, after the "real cluster" fix-ups have been
// applied (apiserver defaults, controller-manager expansion, discoverySelectors).
type Inventory struct {
	Mesh *meshconfig.MeshConfig
	// KubeObjects are the Kubernetes objects handed to the fake kube client
	// (Namespaces, Services, Pods; already filtered by discoverySelectors, except
	// Namespaces which are cluster scoped and always visible).
	KubeObjects []runtime.Object
	// Configs are the Istio configs (validated, Domain set, filtered).
	Configs []config.Config
	// Pods are all pods (including those in namespaces istiod cannot see).
	Pods []*corev1.Pod
	// Namespaces maps namespace name to its (defaulted) labels.
	Namespaces map[string]map[string]string
	// Discovered reports whether istiod can see a namespace (discoverySelectors).
	Discovered map[string]bool
	// istioDocs and configMaps are the inventory's Istio objects and ConfigMaps as written,
	// for ClusterStateYAML.
	istioDocs, configMaps []string
}

// SplitYAMLDocuments splits a multi-document YAML stream.
func SplitYAMLDocuments(s string) ([]string, error) {
	r := kubeyaml.NewYAMLReader(bufioReader(s))
	var out []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		out = append(out, string(doc))
	}
	return out, nil
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []any  `json:"items"`
}

// expandLists flattens `kind: List` documents (kubectl get -o yaml output).
func expandLists(docs []string) ([]string, error) {
	var out []string
	for _, d := range docs {
		var tm typeMeta
		if err := sigsyaml.Unmarshal([]byte(d), &tm); err != nil {
			return nil, fmt.Errorf("parsing document: %v\n%s", err, d)
		}
		if tm.Kind == "" && tm.APIVersion == "" {
			continue // comment-only / empty document
		}
		if strings.HasSuffix(tm.Kind, "List") && tm.APIVersion == "v1" {
			for _, it := range tm.Items {
				b, err := sigsyaml.Marshal(it)
				if err != nil {
					return nil, err
				}
				sub, err := expandLists([]string{string(b)})
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseInventory parses inventory YAML and applies everything a real cluster
// would do before istiod sees the objects.
func ParseInventory(inventoryYAML string) (*Inventory, error) {
	docs, err := SplitYAMLDocuments(inventoryYAML)
	if err != nil {
		return nil, err
	}
	docs, err = expandLists(docs)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{Namespaces: map[string]map[string]string{}, Discovered: map[string]bool{}}
	var istioDocs []string
	var services []*corev1.Service
	var pods []*corev1.Pod
	var handSlices []*discoveryv1.EndpointSlice
	var meshYAML *string
	decode := kubelib.IstioCodec.UniversalDeserializer().Decode
	seen := map[string]bool{}
	unique := func(kind, ns, name string) error {
		k := kind + "/" + nsOrDefault(ns) + "/" + name
		if kind == "Namespace" {
			k = kind + "/" + name
		}
		if seen[k] {
			return fmt.Errorf("duplicate object %s: a cluster holds one object per kind/namespace/name", k)
		}
		seen[k] = true
		return nil
	}
	for _, d := range docs {
		var tm typeMeta
		_ = sigsyaml.Unmarshal([]byte(d), &tm)
		group := tm.APIVersion
		if i := strings.Index(group, "/"); i >= 0 {
			group = group[:i]
		} else {
			group = ""
		}
		if strings.HasSuffix(group, ".istio.io") {
			istioDocs = append(istioDocs, d)
			continue
		}
		if tm.Kind == "ConfigMap" {
			inv.configMaps = append(inv.configMaps, d)
		}
		obj, _, err := decode([]byte(d), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s %s: %v", tm.APIVersion, tm.Kind, err)
		}
		if mo, ok := obj.(metav1.Object); ok {
			if err := unique(tm.Kind, mo.GetNamespace(), mo.GetName()); err != nil {
				return nil, err
			}
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			inv.Namespaces[o.Name] = copyLabels(o.Labels)
		case *corev1.Service:
			services = append(services, o)
		case *corev1.Pod:
			pods = append(pods, o)
		case *discoveryv1.EndpointSlice:
			// Written by hand: the endpoints of a Service without selector.
			o.Namespace = nsOrDefault(o.Namespace)
			handSlices = append(handSlices, o)
		case *appsv1.Deployment:
			pods = append(pods, podsFromTemplate(o.ObjectMeta, o.Spec.Replicas, o.Spec.Template)...)
		case *appsv1.StatefulSet:
			pods = append(pods, podsFromTemplate(o.ObjectMeta, o.Spec.Replicas, o.Spec.Template)...)
		case *appsv1.ReplicaSet:
			pods = append(pods, podsFromTemplate(o.ObjectMeta, o.Spec.Replicas, o.Spec.Template)...)
		case *appsv1.DaemonSet:
			pods = append(pods, podsFromTemplate(o.ObjectMeta, nil, o.Spec.Template)...)
		case *corev1.ConfigMap:
			if o.Name == MeshConfigMapName && nsOrDefault(o.Namespace) == SystemNamespace {
				m := o.Data["mesh"]
				meshYAML = &m
			}
		default:
			// Other kinds (ServiceAccounts, ...) do not influence CDS for sidecars.
		}
	}

	// MeshConfig: istiod merges the `mesh` key over its defaults.
	if meshYAML != nil {
		m, err := mesh.ApplyMeshConfigDefaults(*meshYAML)
		if err != nil {
			return nil, fmt.Errorf("invalid mesh config: %v", err)
		}
		inv.Mesh = m
	} else {
		inv.Mesh = mesh.DefaultMeshConfig()
	}

	// Istio configs, through the same conversion + validation the webhook uses.
	for _, d := range istioDocs {
		cfgs, _, err := crd.ParseInputs(d)
		if err != nil {
			return nil, fmt.Errorf("istio config rejected (a real cluster would reject it too): %v\n%s", err, d)
		}
		for _, c := range cfgs {
			c.Namespace = nsOrDefault(c.Namespace)
			if err := unique(c.GroupVersionKind.Kind, c.Namespace, c.Name); err != nil {
				return nil, err
			}
			// crd.ParseInputs leaves Domain empty; istiod's CRD client sets the domain suffix.
			// Without it, short hosts (`reviews`) would expand to `reviews.<ns>` instead of
			// `reviews.<ns>.svc.cluster.local` (model.ResolveShortnameToFQDN).
			c.Domain = DomainSuffix
			if c.CreationTimestamp.IsZero() {
				c.CreationTimestamp = DefaultCreationTime
			}
			inv.Configs = append(inv.Configs, c)
		}
	}

	// Apiserver defaults for Services.
	for _, s := range services {
		s.Namespace = nsOrDefault(s.Namespace)
		defaultService(s)
	}
	allocateClusterIPs(services)
	// Pods: defaults and status (scheduler + kubelet).
	for _, p := range pods {
		p.Namespace = nsOrDefault(p.Namespace)
		defaultPod(p)
	}
	if err := assignPodIPs(pods); err != nil {
		return nil, err
	}
	inv.Pods = pods
	inv.istioDocs = istioDocs

	// Every namespace that holds an object exists in a real cluster.
	need := map[string]bool{}
	for _, s := range services {
		need[s.Namespace] = true
	}
	for _, p := range pods {
		need[p.Namespace] = true
	}
	for _, c := range inv.Configs {
		need[c.Namespace] = true
	}
	need[SystemNamespace] = true
	need[inv.Mesh.RootNamespace] = true
	for ns := range need {
		if _, ok := inv.Namespaces[ns]; !ok {
			inv.Namespaces[ns] = map[string]string{}
		}
	}
	// Apiserver: every namespace carries kubernetes.io/metadata.name=<name>.
	for ns, l := range inv.Namespaces {
		l["kubernetes.io/metadata.name"] = ns
	}

	// discoverySelectors.
	var selectors []klabels.Selector
	for _, ls := range inv.Mesh.GetDiscoverySelectors() {
		sel, err := labelselector.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("invalid discovery selector: %v", err)
		}
		selectors = append(selectors, sel)
	}
	for ns, l := range inv.Namespaces {
		ok := len(selectors) == 0
		for _, s := range selectors {
			if s.Matches(klabels.Set(l)) {
				ok = true
			}
		}
		inv.Discovered[ns] = ok
	}

	nsNames := make([]string, 0, len(inv.Namespaces))
	for ns := range inv.Namespaces {
		nsNames = append(nsNames, ns)
	}
	sort.Strings(nsNames)
	for _, ns := range nsNames {
		inv.KubeObjects = append(inv.KubeObjects, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: inv.Namespaces[ns], CreationTimestamp: metav1.NewTime(DefaultCreationTime)},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	for _, s := range services {
		if inv.Discovered[s.Namespace] {
			inv.KubeObjects = append(inv.KubeObjects, s)
		}
	}
	for _, p := range pods {
		if inv.Discovered[p.Namespace] {
			inv.KubeObjects = append(inv.KubeObjects, p)
		}
	}
	for _, es := range append(endpointSlices(services, pods), handSlices...) {
		if inv.Discovered[es.Namespace] {
			inv.KubeObjects = append(inv.KubeObjects, es)
		}
	}
	filtered := inv.Configs[:0]
	for _, c := range inv.Configs {
		if inv.Discovered[c.Namespace] {
			filtered = append(filtered, c)
		}
	}
	inv.Configs = filtered
	return inv, nil
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// defaultService applies the apiserver defaults that matter to istiod.
func defaultService(s *corev1.Service) {
	if s.CreationTimestamp.IsZero() {
		s.CreationTimestamp = metav1.NewTime(DefaultCreationTime)
	}
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		// targetPort defaults to port (an unset IntOrString is Int 0).
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

// allocateClusterIPs gives ClusterIP/NodePort/LoadBalancer services a VIP, as the apiserver does.
func allocateClusterIPs(services []*corev1.Service) {
	next := netip.MustParseAddr("10.96.0.10")
	for _, s := range services {
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		if s.Spec.ClusterIP == "" {
			s.Spec.ClusterIP = next.String()
			next = next.Next()
		}
		if len(s.Spec.ClusterIPs) == 0 {
			s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
		}
	}
}

func defaultPod(p *corev1.Pod) {
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(DefaultCreationTime)
	}
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			for j := range cs[i].Ports {
				if cs[i].Ports[j].Protocol == "" {
					cs[i].Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = "node-1"
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}
}

// assignPodIPs gives every pod a unique IP (keeping any IP already present).
func assignPodIPs(pods []*corev1.Pod) error {
	used := map[string]string{}
	for _, p := range pods {
		if p.Status.PodIP != "" {
			if other, dup := used[p.Status.PodIP]; dup {
				return fmt.Errorf("pods %s and %s/%s share IP %s", other, p.Namespace, p.Name, p.Status.PodIP)
			}
			used[p.Status.PodIP] = p.Namespace + "/" + p.Name
		}
	}
	next := netip.MustParseAddr("10.244.0.10")
	for _, p := range pods {
		if p.Status.PodIP == "" {
			for used[next.String()] != "" {
				next = next.Next()
			}
			p.Status.PodIP = next.String()
			used[next.String()] = p.Namespace + "/" + p.Name
		}
		if len(p.Status.PodIPs) == 0 {
			p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		p.Status.HostIP = "192.168.0.1"
	}
	return nil
}

// podsFromTemplate plays the controller-manager: it creates the pods of a workload.
func podsFromTemplate(owner metav1.ObjectMeta, replicas *int32, tmpl corev1.PodTemplateSpec) []*corev1.Pod {
	n := int32(1)
	if replicas != nil {
		n = *replicas
	}
	// One pod is enough to represent all replicas (they are identical for CDS), but
	// zero replicas means no pod at all (matters for ServiceEntry workloadSelectors).
	if n > 1 {
		n = 1
	}
	var out []*corev1.Pod
	for i := int32(0); i < n; i++ {
		p := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:              fmt.Sprintf("%s-%d", owner.Name, i),
				Namespace:         nsOrDefault(owner.Namespace),
				Labels:            copyLabels(tmpl.Labels),
				Annotations:       tmpl.Annotations,
				CreationTimestamp: owner.CreationTimestamp,
			},
			Spec: *tmpl.Spec.DeepCopy(),
		}
		out = append(out, p)
	}
	return out
}

// IstioResult holds the cluster names Istio generated, per proxy key.
type IstioResult map[string][]string

// IstioClusters runs Istio's own CDS generator on the inventory and returns the
// sorted CDS cluster names for every proxy (bootstrap clusters are not included).
func IstioClusters(t test.Failer, inventoryYAML string, proxies []Proxy) IstioResult {
	t.Helper()
	inv, err := ParseInventory(inventoryYAML)
	if err != nil {
		t.Fatalf("inventory: %v", err)
	}
	return IstioClustersFromInventory(t, inv, proxies)
}

// IstioClustersFromInventory is IstioClusters for an already parsed inventory.
func IstioClustersFromInventory(t test.Failer, inv *Inventory, proxies []Proxy) IstioResult {
	t.Helper()
	return eachProxy(t, inv, proxies, func(s *xds.FakeDiscoveryServer, p *model.Proxy, _ Proxy) []string {
		var names []string
		for _, c := range s.Clusters(p) {
			names = append(names, c.Name)
		}
		return names
	})
}

// eachProxy runs Istio's in-process istiod on the inventory and returns, for every proxy, the
// sorted names gen takes from its generator for the proxy as istiod sets it up on connection.
func eachProxy(t test.Failer, inv *Inventory, proxies []Proxy, gen func(*xds.FakeDiscoveryServer, *model.Proxy, Proxy) []string) IstioResult {
	t.Helper()
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		KubernetesObjects: inv.KubeObjects,
		Configs:           inv.Configs,
		MeshConfig:        inv.Mesh,
	})
	out := IstioResult{}
	for _, px := range proxies {
		pod, err := inv.FindPod(px)
		if err != nil {
			t.Fatalf("proxy %s: %v", px.Key(), err)
		}
		names := gen(s, setupProxy(s, pod), px)
		sort.Strings(names)
		out[px.Key()] = names
	}
	return out
}

// FindPod returns the one pod in the proxy's namespace whose labels equal the proxy's labels.
func (inv *Inventory) FindPod(px Proxy) (*corev1.Pod, error) {
	var found []*corev1.Pod
	for _, p := range inv.Pods {
		if p.Namespace == px.Namespace && LabelString(p.Labels) == LabelString(px.Labels) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no pod in %s with labels exactly %s", px.Namespace, LabelString(px.Labels))
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("%d pods in %s with labels %s; proxies must be unambiguous", len(found), px.Namespace, LabelString(px.Labels))
	}
}

// setupProxy initialises a sidecar proxy the way istiod does on connection
// (pilot/pkg/xds/ads.go: initializeProxy / computeProxyState).
func setupProxy(s *xds.FakeDiscoveryServer, pod *corev1.Pod) *model.Proxy {
	const istioVersion = "1.31.0"
	p := &model.Proxy{
		Type:            model.SidecarProxy,
		IPAddresses:     []string{pod.Status.PodIP},
		ID:              pod.Name + "." + pod.Namespace,
		ConfigNamespace: pod.Namespace,
		DNSDomain:       pod.Namespace + ".svc." + DomainSuffix,
		Labels:          copyLabels(pod.Labels),
		Metadata: &model.NodeMetadata{
			Namespace:    pod.Namespace,
			Labels:       copyLabels(pod.Labels),
			ClusterID:    clusterID,
			IstioVersion: istioVersion,
			// A real pilot-agent reports these; the listener generator keeps its outbound
			// listeners off them.
			EnvoyStatusPort:     15021,
			EnvoyPrometheusPort: 15090,
			InterceptionMode:    interceptionMode(pod),
		},
		IstioVersion: model.ParseIstioVersion(istioVersion),
	}
	env := s.Env()
	push := s.PushContext()
	p.SetWorkloadLabels(env)
	p.SetServiceTargets(env.ServiceDiscovery)
	p.SetSidecarScope(push)
	p.SetGatewaysForProxy(push)
	p.DiscoverIPMode()
	return p
}

func bufioReader(s string) *bufio.Reader {
	return bufio.NewReader(strings.NewReader(s))
}
