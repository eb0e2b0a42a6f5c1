package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	CronJobGVR         = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}
	AutoscalerGVR      = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	WebhookConfigGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	EndpointSliceGVR   = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
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
	// selector is the label selector of the list, if any.
	selector string
}{
	{NamespaceGVR, "v1", "Namespace", ""},
	{ServiceGVR, "v1", "Service", ""},
	{DeploymentGVR, "apps/v1", "Deployment", ""},
	{StatefulSetGVR, "apps/v1", "StatefulSet", ""},
	{DaemonSetGVR, "apps/v1", "DaemonSet", ""},
	{ReplicaSetGVR, "apps/v1", "ReplicaSet", ""},
	{JobGVR, "batch/v1", "Job", ""},
	{CronJobGVR, "batch/v1", "CronJob", ""},
	{PodGVR, "v1", "Pod", ""},
	{AutoscalerGVR, "autoscaling/v2", "HorizontalPodAutoscaler", ""},
	{WebhookConfigGVR, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", ""},
	// The slices of Services without selector (R57): those Kubernetes' controller writes for a
	// Service with one, meshscope derives from its Pods, so a 10,000-service mesh's are not listed.
	{EndpointSliceGVR, "discovery.k8s.io/v1", "EndpointSlice", discoveryv1.LabelManagedBy + "!=endpointslice-controller.k8s.io"},
	{ServiceEntryGVR, "networking.istio.io/v1", "ServiceEntry", ""},
	{DestinationRuleGVR, "networking.istio.io/v1", "DestinationRule", ""},
	{VirtualServiceGVR, "networking.istio.io/v1", "VirtualService", ""},
	{SidecarGVR, "networking.istio.io/v1", "Sidecar", ""},
}

// LoadInventory adds the cluster's objects to inv: namespaces, services,
// workloads and their Pods (which the census folds into the workload Istio names,
// and which say whether a proxy runs), autoscalers, the injection webhook
// configurations, the EndpointSlices Kubernetes' controller does not write, ServiceEntries, DestinationRules, VirtualServices, Sidecars,
// and the `istio` and `istio-sidecar-injector` ConfigMaps of rootNamespace.
func (c *Client) LoadInventory(ctx context.Context, inv *mesh.Inventory, rootNamespace string) error {
	if err := c.init(); err != nil {
		return err
	}
	pageSize := c.cfg.ListPageSize
	if pageSize <= 0 {
		pageSize = DefaultListPageSize
	}
	// The kinds are listed and decoded listConcurrency at a time, taken in inventoryKinds'
	// order, and added in that order, page after page, as one list after another would add
	// them. The first failure in that order is the one returned, whatever finished first, and
	// a failure stops the kinds after it: their objects and failures no longer count.
	lists := make([]kindList, len(inventoryKinds))
	cancels := make([]context.CancelFunc, len(inventoryKinds))
	ctxs := make([]context.Context, len(inventoryKinds))
	for i := range inventoryKinds {
		ctxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(listConcurrency, len(inventoryKinds)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(inventoryKinds); i = int(next.Add(1)) - 1 {
				if lists[i] = c.listKind(ctxs[i], i, pageSize); lists[i].err != nil {
					for _, cancel := range cancels[i+1:] {
						cancel()
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, l := range lists {
		inv.Add(l.objects)
		if l.err != nil {
			return l.err
		}
	}
	inv.EndpointSlicesListed = true
	if rootNamespace == "" {
		rootNamespace = mesh.DefaultRootNamespace
	}
	// The mesh config (without it, Istio's defaults apply) and the injector's config (without
	// it, the injector's defaults).
	for _, name := range []string{"istio", "istio-sidecar-injector"} {
		cm, err := c.dyn.Resource(ConfigMapGVR).Namespace(rootNamespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return c.classify(err, "get", ConfigMapGVR, rootNamespace, name)
		default:
			cm.SetManagedFields(nil)
			js, err := json.Marshal(cm.Object)
			if err != nil {
				return err
			}
			if err := inv.AddJSON("cluster:ConfigMap/"+rootNamespace+"/"+name, js); err != nil {
				return err
			}
		}
	}
	return nil
}

// listConcurrency is how many kinds LoadInventory lists at once: enough to keep the API
// server and the decoding busy on a small machine, few enough that a large cluster's pages
// stay well within the client's burst (DefaultBurst).
const listConcurrency = 4

// kindList is one kind of inventoryKinds, listed and decoded: the objects before the first
// failure, and that failure.
type kindList struct {
	objects mesh.Decoded
	err     error
}

// listKind lists inventoryKinds[i] a page at a time (limit and continue, as client-go's pager
// does) and decodes its objects from the pages' JSON: decoding each page into unstructured
// objects and encoding each object again took most of the listing's time on a large mesh.
func (c *Client) listKind(ctx context.Context, i int, pageSize int64) kindList {
	k := inventoryKinds[i]
	var out kindList
	cont := ""
	for {
		page, err := c.listPage(ctx, k.gvr, k.selector, pageSize, cont)
		switch {
		case err == nil:
		case apierrors.IsNotFound(err) && k.gvr.Group == "networking.istio.io":
			out.err = &MissingCRDError{Resource: k.gvr, Err: err}
			return out
		default:
			out.err = c.classify(err, "list", k.gvr, "", "")
			return out
		}
		for _, item := range page.Items {
			d, err := decodeItem(k.apiVersion, k.kind, item)
			out.objects.Append(d)
			if err != nil {
				out.err = err
				return out
			}
		}
		if cont = page.Metadata.Continue; cont == "" {
			return out
		}
	}
}

// listPage is one page of a list: its items as raw JSON, and the token of the next page.
type listPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// listPage gets one page of gvr's objects in every namespace, as the dynamic client's List
// requests it, and returns it undecoded.
func (c *Client) listPage(ctx context.Context, gvr schema.GroupVersionResource, selector string, limit int64, cont string) (*listPage, error) {
	segments := []string{"/api", gvr.Version, gvr.Resource}
	if gvr.Group != "" {
		segments = []string{"/apis", gvr.Group, gvr.Version, gvr.Resource}
	}
	req := c.rest.Get().AbsPath(segments...).Param("limit", strconv.FormatInt(limit, 10))
	if cont != "" {
		req = req.Param("continue", cont)
	}
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var page listPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("listing %s: the API server's answer is not a list: %w", gvr.Resource, err)
	}
	return &page, nil
}

// decodeItem decodes one item of a list of apiVersion and kind for the inventory. A list's
// items need not carry their apiVersion and kind, so they are set, as the dynamic client sets
// them. The Pods and ReplicaSets a controller owns are kept: the census folds them into their
// workload, and a Pod says whether its proxy runs.
func decodeItem(apiVersion, kind string, item []byte) (mesh.Decoded, error) {
	notObject := func() error { return fmt.Errorf("listing %s: an item of the list is not an object: %.80s", kind, item) }
	if len(item) < 2 || item[0] != '{' {
		return mesh.Decoded{}, notObject()
	}
	// The last of two equal keys is the one a JSON decoder keeps: the apiVersion and kind
	// listed win over the item's own, as they did when set on the unstructured object.
	js := make([]byte, 0, len(item)+len(apiVersion)+len(kind)+32)
	js = append(js, item[:len(item)-1]...)
	if len(bytes.TrimSpace(item[1:len(item)-1])) > 0 {
		js = append(js, ',')
	}
	js = append(js, `"apiVersion":`...)
	js = strconv.AppendQuote(js, apiVersion)
	js = append(js, `,"kind":`...)
	js = strconv.AppendQuote(js, kind)
	js = append(js, '}')
	d, err := mesh.DecodeObjectJSON(js, func(ns, name string) string { return fmt.Sprintf("cluster:%s/%s/%s", kind, ns, name) })
	de := (*mesh.DocumentError)(nil)
	if !errors.As(err, &de) {
		return d, err
	}
	// The document's position in the JSON meshscope made of the object says nothing to a user.
	ns, name := de.Namespace, de.Name
	if de.Kind == "" {
		// Its metadata did not decode (the listed kind is always set): name the object from
		// what of it does, if anything.
		var id struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal(item, &id) != nil {
			return d, notObject()
		}
		ns, name = id.Metadata.Namespace, id.Metadata.Name
	}
	return d, &InvalidObjectError{Kind: kind, Namespace: ns, Name: name, Err: de.Err}
}
