package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Resources the live inventory lists (all with verb "list"). The README's
// ClusterRole grants exactly these, plus the Sidecar verbs of SidecarGVR.
var (
	NamespaceGVR       = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ServiceGVR         = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	PodGVR             = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ConfigMapGVR       = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	DeploymentGVR      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	StatefulSetGVR     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	DaemonSetGVR       = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	ReplicaSetGVR      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	JobGVR             = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	ServiceEntryGVR    = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "serviceentries"}
	DestinationRuleGVR = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "destinationrules"}
	VirtualServiceGVR  = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}
	SidecarGVR         = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "sidecars"}
)

// inventoryKinds lists what LoadInventory reads, in order.
var inventoryKinds = []struct {
	gvr        schema.GroupVersionResource
	apiVersion string
	kind       string
}{
	{NamespaceGVR, "v1", "Namespace"},
	{ServiceGVR, "v1", "Service"},
	{DeploymentGVR, "apps/v1", "Deployment"},
	{StatefulSetGVR, "apps/v1", "StatefulSet"},
	{DaemonSetGVR, "apps/v1", "DaemonSet"},
	{ReplicaSetGVR, "apps/v1", "ReplicaSet"},
	{JobGVR, "batch/v1", "Job"},
	{PodGVR, "v1", "Pod"},
	{ServiceEntryGVR, "networking.istio.io/v1", "ServiceEntry"},
	{DestinationRuleGVR, "networking.istio.io/v1", "DestinationRule"},
	{VirtualServiceGVR, "networking.istio.io/v1", "VirtualService"},
	{SidecarGVR, "networking.istio.io/v1", "Sidecar"},
}

// LoadInventory adds the cluster's objects to inv: namespaces, services,
// workloads, pods, ServiceEntries, DestinationRules, VirtualServices, Sidecars
// and the `istio` ConfigMap of rootNamespace. Pods owned by a controller are
// represented by their controller; ReplicaSets owned by a Deployment likewise.
func (c *Client) LoadInventory(ctx context.Context, inv *mesh.Inventory, rootNamespace string) error {
	if err := c.init(); err != nil {
		return err
	}
	pageSize := c.cfg.ListPageSize
	if pageSize <= 0 {
		pageSize = DefaultListPageSize
	}
	for _, k := range inventoryKinds {
		// The pager lists a page at a time (limit and continue), and lists again
		// without pages when a continue token expires.
		p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
			return c.dyn.Resource(k.gvr).List(ctx, opts)
		}))
		p.PageSize = pageSize
		// addErr is an object the inventory refuses: not an API error.
		var addErr error
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
			obj, ok := o.(*unstructured.Unstructured)
			if !ok {
				addErr = fmt.Errorf("listing %s: got a %T, not an unstructured object", k.gvr.Resource, o)
				return addErr
			}
			addErr = addObject(inv, k.apiVersion, k.kind, obj)
			return addErr
		})
		switch {
		case addErr != nil:
			return addErr
		case err == nil:
		case apierrors.IsNotFound(err) && k.gvr.Group == "networking.istio.io":
			return &MissingCRDError{Resource: k.gvr, Err: err}
		default:
			return c.classify(err, "list", k.gvr, "", "")
		}
	}
	if rootNamespace == "" {
		rootNamespace = mesh.DefaultRootNamespace
	}
	cm, err := c.dyn.Resource(ConfigMapGVR).Namespace(rootNamespace).Get(ctx, "istio", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// No mesh config: Istio's defaults apply.
	case err != nil:
		return c.classify(err, "get", ConfigMapGVR, rootNamespace, "")
	default:
		cm.SetManagedFields(nil)
		js, err := json.Marshal(cm.Object)
		if err != nil {
			return err
		}
		if err := inv.AddYAML("cluster:ConfigMap/"+rootNamespace+"/istio", js); err != nil {
			return err
		}
	}
	return nil
}

// addObject adds obj, listed as apiVersion and kind, to inv, unless it is a Pod
// or a ReplicaSet that a controller owns: the inventory represents those by
// their controller.
func addObject(inv *mesh.Inventory, apiVersion, kind string, obj *unstructured.Unstructured) error {
	if (kind == "Pod" || kind == "ReplicaSet") && hasController(obj) {
		return nil
	}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetManagedFields(nil)
	js, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	err = inv.AddYAML(fmt.Sprintf("cluster:%s/%s/%s", kind, obj.GetNamespace(), obj.GetName()), js)
	// The document's position in the JSON meshscope made of the object says nothing to a user.
	if de := (*mesh.DocumentError)(nil); errors.As(err, &de) {
		return &InvalidObjectError{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Err: de.Err}
	}
	return err
}

func hasController(obj *unstructured.Unstructured) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}
