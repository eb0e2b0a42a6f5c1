package conformance

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/test"
)

// controllerManagedBy is the managed-by label of the slices Kubernetes' EndpointSlice controller writes.
const controllerManagedBy = "endpointslice-controller.k8s.io"

// endpointSlices plays Kubernetes' EndpointSlice controller: for every Service with a selector,
// the pods of its namespace that the selector matches, one slice per set of resolved target
// ports (a named target port resolves per pod, to the container port of that name and
// protocol; a pod without it is left out of that port's slice). Every harness pod is running
// and ready.
func endpointSlices(services []*corev1.Service, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range services {
		if len(s.Spec.Selector) == 0 || s.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		sel := klabels.SelectorFromSet(s.Spec.Selector)
		bySet := map[string]*discoveryv1.EndpointSlice{}
		var order []string
		for _, p := range pods {
			if p.Namespace != s.Namespace || !sel.Matches(klabels.Set(p.Labels)) || p.Status.PodIP == "" {
				continue
			}
			var ports []discoveryv1.EndpointPort
			var key strings.Builder
			for _, sp := range s.Spec.Ports {
				n, ok := findPort(p, sp)
				if !ok {
					continue
				}
				name, proto := sp.Name, sp.Protocol
				ports = append(ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &n, AppProtocol: sp.AppProtocol})
				fmt.Fprintf(&key, "%s/%s/%d;", name, proto, n)
			}
			es := bySet[key.String()]
			if es == nil {
				es = &discoveryv1.EndpointSlice{
					TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
					ObjectMeta: metav1.ObjectMeta{
						Name:              fmt.Sprintf("%s-%d", s.Name, len(order)),
						Namespace:         s.Namespace,
						CreationTimestamp: metav1.NewTime(DefaultCreationTime),
						Labels: map[string]string{
							discoveryv1.LabelServiceName: s.Name,
							discoveryv1.LabelManagedBy:   controllerManagedBy,
						},
					},
					AddressType: discoveryv1.AddressTypeIPv4,
					Ports:       ports,
				}
				bySet[key.String()] = es
				order = append(order, key.String())
			}
			ready, serving, terminating := true, true, false
			node := p.Spec.NodeName
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{p.Status.PodIP},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
				NodeName:   &node,
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
			})
		}
		for _, k := range order {
			out = append(out, bySet[k])
		}
	}
	return out
}

// findPort is Kubernetes' podutil.FindPort: a numeric target port, or the container port
// with the target port's name and the Service port's protocol.
func findPort(p *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	if sp.TargetPort.Type == intstr.Int {
		return sp.TargetPort.IntVal, true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// ClusterStateYAML is the inventory as a cluster's API server holds it once created: the
// Namespaces, the Services with the cluster IPs allocated, the Pods (one per workload) with
// their IPs and status, and the Istio objects and ConfigMaps as written. Given it, meshscope
// knows every address istiod names a listener by, as it does from a live cluster.
func (inv *Inventory) ClusterStateYAML() (string, error) {
	var docs []string
	for _, o := range inv.KubeObjects {
		switch o := o.(type) {
		case *corev1.Namespace, *corev1.Service, *corev1.Pod:
		case *discoveryv1.EndpointSlice:
			// The slices written by hand; Kubernetes' controller writes the others from the Pods.
			if o.Labels[discoveryv1.LabelManagedBy] == controllerManagedBy {
				continue
			}
		default:
			continue
		}
		b, err := marshalObject(o)
		if err != nil {
			return "", err
		}
		docs = append(docs, b)
	}
	docs = append(docs, inv.configMaps...)
	docs = append(docs, inv.istioDocs...)
	return strings.Join(docs, "\n---\n"), nil
}

func marshalObject(o runtime.Object) (string, error) {
	switch v := o.(type) {
	case *corev1.Service:
		v.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	case *discoveryv1.EndpointSlice:
		v.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
	case *corev1.Pod:
		// Without its phase, the Pod reads as a manifest before injection, as the proxies of
		// the conformance meshes are written; its IP stays.
		c := v.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		c.Status = corev1.PodStatus{PodIP: v.Status.PodIP, PodIPs: v.Status.PodIPs}
		o = c
	}
	b, err := sigsyaml.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("marshal %T: %v", o, err)
	}
	return string(b), nil
}

// IstioListeners runs Istio's own LDS generator (ConfigGeneratorImpl.BuildListeners) on the
// inventory and returns every proxy's listener names, sorted, a repeated name as many times
// as istiod builds it.
func IstioListeners(t test.Failer, inv *Inventory, proxies []Proxy) IstioResult {
	t.Helper()
	return eachProxy(t, inv, proxies, func(s *xds.FakeDiscoveryServer, p *model.Proxy, _ Proxy) []string {
		var names []string
		for _, l := range s.Listeners(p) {
			names = append(names, l.GetName())
		}
		return names
	})
}

// IstioRoutes runs Istio's RDS generator (ConfigGeneratorImpl.BuildHTTPRoutes) on the route
// names the proxy's listeners ask for, each name once as Envoy subscribes to it, and returns
// every proxy's routes as RouteLines prints them.
func IstioRoutes(t test.Failer, inv *Inventory, proxies []Proxy) IstioResult {
	t.Helper()
	return eachProxy(t, inv, proxies, func(s *xds.FakeDiscoveryServer, p *model.Proxy, _ Proxy) []string {
		var out []string
		seen := map[string]bool{}
		for _, rc := range s.Routes(p) {
			if seen[rc.GetName()] {
				continue
			}
			seen[rc.GetName()] = true
			var vhosts []RouteVirtualHost
			for _, vh := range rc.GetVirtualHosts() {
				vhosts = append(vhosts, RouteVirtualHost{Name: vh.GetName(), Domains: vh.GetDomains()})
			}
			out = append(out, RouteLines(rc.GetName(), vhosts)...)
		}
		return out
	})
}

// RouteVirtualHost is a virtual host as the route comparison reads it.
type RouteVirtualHost struct {
	Name    string   `json:"name"`
	Domains []string `json:"domains"`
}

// RouteLines are the comparison lines of one route configuration: "ROUTE<TAB>VHOST<TAB>DOMAINS"
// per virtual host, its domains comma-joined in their order, or "ROUTE<TAB>-" when it has none.
func RouteLines(route string, vhosts []RouteVirtualHost) []string {
	if len(vhosts) == 0 {
		return []string{route + "\t-"}
	}
	out := make([]string, 0, len(vhosts))
	for _, vh := range vhosts {
		out = append(out, route+"\t"+vh.Name+"\t"+strings.Join(vh.Domains, ","))
	}
	return out
}

// IstioEndpoints runs Istio's endpoint builder on every EDS cluster Istio's CDS generator gives
// each proxy (FakeDiscoveryServer.Endpoints) and returns its endpoints as
// "CLUSTER<TAB>ADDRESS:PORT", sorted.
//
// As in a cluster, the EndpointSlices are written once istiod knows the Pods: istiod parks an
// endpoint whose Pod its informer has not delivered, and given both at start-up in either
// order, its answer varies from run to run. Then, for a proxy in want, it looks every 20ms for
// up to converge until Istio's list is that one (istiod applies the slices in the
// background), and returns the last list it saw; without want, the first look stands.
func IstioEndpoints(t test.Failer, inv *Inventory, proxies []Proxy, want IstioResult, converge time.Duration) IstioResult {
	t.Helper()
	var later []*discoveryv1.EndpointSlice
	objs := make([]runtime.Object, 0, len(inv.KubeObjects))
	for _, o := range inv.KubeObjects {
		if es, ok := o.(*discoveryv1.EndpointSlice); ok {
			later = append(later, es)
			continue
		}
		objs = append(objs, o)
	}
	withoutSlices := *inv
	withoutSlices.KubeObjects = objs
	created := false
	return eachProxy(t, &withoutSlices, proxies, func(s *xds.FakeDiscoveryServer, p *model.Proxy, px Proxy) []string {
		if !created {
			created = true
			for _, es := range later {
				if _, err := s.KubeClient().Kube().DiscoveryV1().EndpointSlices(es.Namespace).Create(context.Background(), es, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create EndpointSlice %s/%s: %v", es.Namespace, es.Name, err)
				}
			}
		}
		s.EnsureSynced(t)
		deadline := time.Now().Add(converge)
		for {
			got := endpointNames(s, p)
			w, ok := want[px.Key()]
			if !ok || slices.Equal(got, w) || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// endpointNames are Istio's endpoints for the proxy, "CLUSTER<TAB>ADDRESS:PORT", sorted.
func endpointNames(s *xds.FakeDiscoveryServer, p *model.Proxy) []string {
	var out []string
	for _, cla := range s.Endpoints(p) {
		for _, loc := range cla.GetEndpoints() {
			for _, lb := range loc.GetLbEndpoints() {
				sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
				out = append(out, fmt.Sprintf("%s\t%s:%d", cla.GetClusterName(), sa.GetAddress(), sa.GetPortValue()))
			}
		}
	}
	sort.Strings(out)
	return out
}

// interceptionMode is the proxy metadata the injector takes from the pod's annotation.
func interceptionMode(pod *corev1.Pod) model.TrafficInterceptionMode {
	if m := pod.Annotations["sidecar.istio.io/interceptionMode"]; m != "" {
		return model.TrafficInterceptionMode(m)
	}
	return model.InterceptionRedirect
}
