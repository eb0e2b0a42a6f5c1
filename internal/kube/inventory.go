package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	for _, k := range inventoryKinds {
		list, err := c.dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && k.gvr.Group == "networking.istio.io" {
				return &MissingCRDError{Resource: k.gvr, Err: err}
			}
			return c.classify(err, "list", k.gvr, "", "")
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if (k.kind == "Pod" || k.kind == "ReplicaSet") && hasController(obj) {
				continue
			}
			obj.SetAPIVersion(k.apiVersion)
			obj.SetKind(k.kind)
			obj.SetManagedFields(nil)
			js, err := json.Marshal(obj.Object)
			if err != nil {
				return err
			}
			src := fmt.Sprintf("cluster:%s/%s/%s", k.kind, obj.GetNamespace(), obj.GetName())
			if err := inv.AddYAML(src, js); err != nil {
				return err
			}
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

func hasController(obj *unstructured.Unstructured) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}
