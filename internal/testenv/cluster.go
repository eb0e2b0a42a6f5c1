package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// FieldManager is the server-side apply field manager of everything the helpers write.
const FieldManager = "meshscope-testenv"

// ManagedByLabel marks the EndpointSlices the helpers write, as the endpoint-slice controller
// marks its own.
const ManagedByLabel = "testenv.meshscope.io"

// KeepEnv, when set to 1, keeps the namespaces UniqueNamespace creates, for debugging.
const KeepEnv = "MESHSCOPE_TESTENV_KEEP"

// Cluster is a client for the test control plane with the helpers tests need in place of the
// controllers it does not run.
type Cluster struct {
	Env     *Env
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	disc    discovery.DiscoveryInterface

	nodeOnce sync.Once // creates NodeName once
	nodeErr  error
}

// Connect returns a Cluster for the running test control plane, with the skip and fail rules of
// Require.
func Connect(t testing.TB) *Cluster {
	t.Helper()
	env := Require(t)
	c, err := NewCluster(env)
	if err != nil {
		t.Fatalf("connecting to the test control plane: %v", err)
	}
	return c
}

// NewCluster builds clients from env's admin kubeconfig.
func NewCluster(env *Env) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", env.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{
		Env:     env,
		Config:  cfg,
		Kube:    kube,
		Dynamic: dyn,
		disc:    disc,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}, nil
}

// RandomSuffix returns n lowercase letters and digits, for unique names.
func RandomSuffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// UniqueIP returns a random pod IP in 10.128.0.0/9. Pods need distinct IPs across the whole
// cluster, because istiod finds a proxy's pod by IP.
func UniqueIP() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	n := binary.BigEndian.Uint32(b[:])
	return fmt.Sprintf("10.%d.%d.%d", 128+(n>>24)%128, (n>>16)&0xff, 1+(n&0xff)%254)
}

// UniqueNamespace creates a namespace named <prefix>-<random> with the given labels (and
// istio-injection=enabled unless they set istio-injection or istio.io/rev) and returns its
// name. At the end of the test everything in it is deleted, then the namespace itself (which then
// stays Terminating, empty, since no controller finalizes it). Set MESHSCOPE_TESTENV_KEEP=1 to
// keep it.
func (c *Cluster) UniqueNamespace(t testing.TB, prefix string, lbls map[string]string) string {
	t.Helper()
	name := prefix + "-" + RandomSuffix(6)
	// An application namespace of a mesh is injected: label it so unless lbls decide.
	if _, ok := lbls["istio-injection"]; !ok && lbls["istio.io/rev"] == "" {
		lbls = maps.Clone(lbls)
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls["istio-injection"] = "enabled"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if os.Getenv(KeepEnv) == "1" {
			t.Logf("keeping namespace %s (%s=1)", name, KeepEnv)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.EmptyNamespace(ctx, name); err != nil {
			t.Errorf("emptying namespace %s: %v", name, err)
		}
		err := c.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// EmptyNamespace deletes every namespaced object in ns, doing the namespace controller's work.
func (c *Cluster) EmptyNamespace(ctx context.Context, ns string) error {
	lists, err := c.disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	zero := int64(0)
	var errs []error
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "deletecollection") ||
				(gv.Group == "" && r.Name == "events") || (gv.Group == "events.k8s.io") {
				continue
			}
			err := c.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(ns).DeleteCollection(ctx,
				metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				errs = append(errs, fmt.Errorf("%s %s: %w", list.GroupVersion, r.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// LabelNamespace sets label key=value on an existing namespace (for example istio-system, to let a
// private istiod's discoverySelectors see it) and removes it again at the end of the test.
func (c *Cluster) LabelNamespace(t testing.TB, ns, key, value string) {
	t.Helper()
	patch := func(ctx context.Context, v *string) error {
		body := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}}
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	if err := patch(context.Background(), &value); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := patch(ctx, nil); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing label %s from namespace %s: %v", key, ns, err)
		}
	})
}

// ApplyOption changes what ApplyYAML applies.
type ApplyOption func(*applyOptions)

type applyOptions struct {
	rename    map[string]string
	skip      func(*unstructured.Unstructured) bool
	namespace string
}

// InNamespace puts namespaced objects that name no namespace into ns (instead of "default").
func InNamespace(ns string) ApplyOption {
	return func(o *applyOptions) { o.namespace = ns }
}

// RenameNamespaces moves objects from namespace old to new, renaming Namespace objects too, so a
// fixed scenario (such as the seed's foo and bar) can be applied into unique namespaces.
func RenameNamespaces(oldToNew map[string]string) ApplyOption {
	return func(o *applyOptions) { o.rename = oldToNew }
}

// Skip leaves out the objects for which skip returns true (after renaming).
func Skip(skip func(*unstructured.Unstructured) bool) ApplyOption {
	return func(o *applyOptions) { o.skip = skip }
}

// ApplyYAML server-side applies every object of a multi-document YAML (or JSON) stream with
// FieldManager, forcing conflicts, and returns the objects as the API server stored them.
// Namespaced objects without a namespace go to "default" unless InNamespace says otherwise.
func (c *Cluster) ApplyYAML(t testing.TB, docs string, opts ...ApplyOption) []*unstructured.Unstructured {
	t.Helper()
	out, err := c.Apply(context.Background(), docs, opts...)
	if err != nil {
		t.Fatalf("applying YAML: %v", err)
	}
	return out
}

// InvalidHost is a ServiceEntry host that Istio's validation rejects.
const InvalidHost = "not a host!!"

// ApplyInvalidServiceEntry writes the ServiceEntry ns/name with the host InvalidHost, as a
// cluster without Istio's validating webhook would hold it (the test control plane runs none).
// Every live test reads the whole cluster, so the entry is deleted as soon as the test ends,
// before its namespace is emptied, whatever happens.
func (c *Cluster) ApplyInvalidServiceEntry(t testing.TB, ns, name string) {
	t.Helper()
	c.ApplyYAML(t, fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: %s}\n"+
		"spec: {hosts: [%q], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS}\n", name, InvalidHost), InNamespace(ns))
	gvr := schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "serviceentries"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Dynamic.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ServiceEntry %s/%s: %v", ns, name, err)
		}
	})
}

// Apply is ApplyYAML returning an error.
func (c *Cluster) Apply(ctx context.Context, docs string, opts ...ApplyOption) ([]*unstructured.Unstructured, error) {
	var o applyOptions
	for _, opt := range opts {
		opt(&o)
	}
	objs, err := decodeYAML(docs)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if n, ok := o.rename[u.GetNamespace()]; ok && u.GetNamespace() != "" {
			u.SetNamespace(n)
		}
		if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
			if n, ok := o.rename[u.GetName()]; ok {
				u.SetName(n)
			}
		}
		if o.skip != nil && o.skip(u) {
			continue
		}
		applied, err := c.applyOne(ctx, u, o.namespace)
		if err != nil {
			return out, err
		}
		out = append(out, applied)
	}
	return out, nil
}

func (c *Cluster) applyOne(ctx context.Context, u *unstructured.Unstructured, defaultNS string) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset() // CRDs installed since the last discovery
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
	}
	var ri dynamic.ResourceInterface = c.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(defaultNS)
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(metav1.NamespaceDefault)
		}
		ri = c.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	applied, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return applied, nil
}

func decodeYAML(docs string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(docs), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding YAML: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("decoding YAML: object without apiVersion, kind or metadata.name: %v", obj)
		}
		out = append(out, u)
	}
}

// CreatePodRunning creates a Pod, as Istio's injector leaves it (an istio-proxy container beside
// the app's), and marks it as a kubelet would once it runs: phase Running,
// the given IP, and the PodScheduled, Initialized, ContainersReady and Ready conditions true.
// The pod is never scheduled, so nothing else touches it. ports are its container's ports.
func (c *Cluster) CreatePodRunning(t testing.TB, ns, name string, lbls map[string]string, ip string, ports ...corev1.ContainerPort) *corev1.Pod {
	t.Helper()
	pod, err := c.CreatePodRunningE(context.Background(), ns, name, lbls, ip, ports...)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// CreatePodRunningE is CreatePodRunning returning an error.
func (c *Cluster) CreatePodRunningE(ctx context.Context, ns, name string, lbls map[string]string, ip string, ports ...corev1.ContainerPort) (*corev1.Pod, error) {
	if err := c.ensureNode(ctx); err != nil {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
		Spec: corev1.PodSpec{
			NodeName: NodeName, // scheduled: as in a cluster, deleting it leaves it Terminating
			// The proxy container Istio's injector adds: the Pod stands for an injected one.
			Containers: []corev1.Container{{Name: "app", Image: "testenv.invalid/app:0", Ports: ports},
				{Name: "istio-proxy", Image: "testenv.invalid/proxyv2:0"}},
		},
	}
	created, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
	}
	now := metav1.Now()
	cond := func(ct corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	created.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		HostIP:    "127.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "127.0.0.1"}},
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled), cond(corev1.PodInitialized),
			cond(corev1.ContainersReady), cond(corev1.PodReady),
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: "testenv.invalid/app:0", Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}, {
			Name: "istio-proxy", Image: "testenv.invalid/proxyv2:0", Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	running, err := c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("marking pod %s/%s running: %w", ns, name, err)
	}
	return running, nil
}

// UpdatePodStatus changes a Pod's status with change, as a kubelet would, and returns the Pod.
func (c *Cluster) UpdatePodStatus(t testing.TB, pod *corev1.Pod, change func(*corev1.PodStatus)) *corev1.Pod {
	t.Helper()
	p := pod.DeepCopy()
	change(&p.Status)
	updated, err := c.Kube.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		t.Fatalf("updating the status of pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return updated
}

// SetPodCondition sets a condition of a Pod's status (PodReady, ContainersReady...).
func SetPodCondition(st *corev1.PodStatus, ct corev1.PodConditionType, status corev1.ConditionStatus) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == ct {
			st.Conditions[i].Status = status
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: ct, Status: status, LastTransitionTime: metav1.Now()})
}

// CreateEndpointSlice writes the EndpointSlice the endpoint-slice controller would write for
// Service ns/service with the given pods as ready endpoints: one slice named <service>-testenv,
// with the Service's ports resolved to target ports (a named targetPort is looked up in the
// first pod's container ports).
func (c *Cluster) CreateEndpointSlice(t testing.TB, ns, service string, pods ...*corev1.Pod) *discoveryv1.EndpointSlice {
	t.Helper()
	es, err := c.WriteEndpointSlice(context.Background(), ns, service, pods...)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// WriteEndpointSlice is CreateEndpointSlice returning an error. It creates or replaces the slice.
func (c *Cluster) WriteEndpointSlice(ctx context.Context, ns, service string, pods ...*corev1.Pod) (*discoveryv1.EndpointSlice, error) {
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("endpoint slice for service %s/%s: %w", ns, service, err)
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      service + "-testenv",
			Namespace: ns,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   ManagedByLabel,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, sp := range svc.Spec.Ports {
		port := targetPort(sp, pods)
		if port == 0 {
			continue
		}
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{
			Name: ptr(sp.Name), Protocol: ptr(protocolOr(sp.Protocol)), Port: ptr(port), AppProtocol: sp.AppProtocol,
		})
	}
	for _, p := range pods {
		if p.Status.PodIP == "" {
			continue
		}
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	client := c.Kube.DiscoveryV1().EndpointSlices(ns)
	existing, err := client.Get(ctx, es.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return client.Create(ctx, es, metav1.CreateOptions{FieldManager: FieldManager})
	case err != nil:
		return nil, err
	default:
		es.ResourceVersion = existing.ResourceVersion
		return client.Update(ctx, es, metav1.UpdateOptions{FieldManager: FieldManager})
	}
}

// SyncEndpointSlices does the endpoint-slice controller's work once for the given namespaces:
// for every Service with a selector, it writes a slice of the Running pods with an IP that the
// selector matches. Call it again after adding or removing pods.
func (c *Cluster) SyncEndpointSlices(t testing.TB, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		svcs, err := c.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing services in %s: %v", ns, err)
		}
		for _, svc := range svcs.Items {
			if len(svc.Spec.Selector) == 0 {
				continue
			}
			pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
				LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String(),
			})
			if err != nil {
				t.Fatalf("listing pods for service %s/%s: %v", ns, svc.Name, err)
			}
			var ready []*corev1.Pod
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
					ready = append(ready, p)
				}
			}
			if _, err := c.WriteEndpointSlice(ctx, ns, svc.Name, ready...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func targetPort(sp corev1.ServicePort, pods []*corev1.Pod) int32 {
	switch {
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, p := range pods {
			for _, ctr := range p.Spec.Containers {
				for _, cp := range ctr.Ports {
					if cp.Name == sp.TargetPort.StrVal && protocolOr(cp.Protocol) == protocolOr(sp.Protocol) {
						return cp.ContainerPort
					}
				}
			}
		}
		return 0
	default:
		return sp.Port
	}
}

func protocolOr(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// WaitAllowed waits until the API server's authorizer lets user do verb on resource (of group,
// in namespace ns; "" for cluster-wide), as a SubjectAccessReview answers it. The RBAC
// authorizer reads roles and bindings through informers, so a grant just written can take a
// moment to count; a test that writes one waits here rather than racing it or sleeping.
func (c *Cluster) WaitAllowed(t testing.TB, user, verb, group, resource, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), PushTimeout)
	defer cancel()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: group, Resource: resource,
		},
	}}
	for {
		res, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && res.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s is still not allowed to %s %s.%s in %q after %s (last answer: %+v, %v)", user, verb, resource, group, ns, PushTimeout, res, err)
		case <-time.After(pollInterval):
		}
	}
}

// ServiceAccountToken returns an hour-long token for service account ns/name, for a test that
// talks to the API server as that account.
func (c *Cluster) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}
