package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestLoadInventory_PagesHoldEveryObject lists the live inventory a page of
// two objects at a time and checks that it holds every Service and
// ServiceEntry of the API server, as one unpaged list of each sees them, and
// every object of a namespace that needs several pages.
func TestLoadInventory_PagesHoldEveryObject(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "pages", nil)
	var docs []string
	for i := range 5 {
		docs = append(docs,
			fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d}\nspec: {ports: [{name: http, port: 80}]}\n", i),
			fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: se-%d}\nspec: {hosts: [se-%d.example.com], ports: [{number: 443, name: tls, protocol: TLS}], resolution: DNS}\n", i, i))
	}
	c.ApplyYAML(t, strings.Join(docs, "---\n"), testenv.InNamespace(ns))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inv := mesh.New()
	client := New(Config{ConfigPaths: []string{c.Env.Kubeconfig}, ListPageSize: 2})
	if err := client.LoadInventory(ctx, inv, ""); err != nil {
		t.Fatalf("LoadInventory: %v", err)
	}

	services, err := c.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := c.Dynamic.Resource(ServiceEntryGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range services.Items {
		want["Service/"+s.Namespace+"/"+s.Name] = true
	}
	for _, e := range entries.Items {
		want["ServiceEntry/"+e.GetNamespace()+"/"+e.GetName()] = true
	}
	got := map[string]bool{}
	for _, s := range inv.Services {
		got["Service/"+s.Namespace+"/"+s.Name] = true
	}
	for _, e := range inv.ServiceEntries {
		got["ServiceEntry/"+e.Namespace+"/"+e.Name] = true
	}
	for i := range 5 {
		for _, k := range []string{fmt.Sprintf("Service/%s/svc-%d", ns, i), fmt.Sprintf("ServiceEntry/%s/se-%d", ns, i)} {
			if !want[k] {
				t.Fatalf("the API server does not list %s, which the test applied", k)
			}
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("the inventory, listed in pages of 2, lacks %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("the inventory holds %s, which the API server does not list", k)
		}
	}
}

// TestLoadInventory_RefusedObjectOnALaterPageNamesIt checks that an object
// the API server holds but the inventory refuses (a ServiceEntry host that
// Istio's webhook would reject, written where no webhook runs) fails the load
// with an error that names it, when it comes on a later page than the first.
func TestLoadInventory_RefusedObjectOnALaterPageNamesIt(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "refused", nil)
	c.ApplyYAML(t, "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: a-good}\n"+
		"spec: {hosts: [good.example.com], ports: [{number: 443, name: tls, protocol: TLS}], resolution: DNS}\n", testenv.InNamespace(ns))
	c.ApplyInvalidServiceEntry(t, ns, "z-bad")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := New(Config{ConfigPaths: []string{c.Env.Kubeconfig}, ListPageSize: 1}).LoadInventory(ctx, mesh.New(), "")
	if err == nil {
		t.Fatal("LoadInventory accepted a ServiceEntry with the host \"not a host!!\"")
	}
	var ie *InvalidObjectError
	if !errors.As(err, &ie) || ie.Kind != "ServiceEntry" || ie.Object() != ns+"/z-bad" {
		t.Fatalf("error %q (%T), want an InvalidObjectError for ServiceEntry %s/z-bad", err, err, ns)
	}
	if !strings.Contains(err.Error(), strconv.Quote(testenv.InvalidHost)) || strings.Contains(err.Error(), "document") {
		t.Errorf("error %q: want the host and no document position", err)
	}
}

// TestLoadInventory_FirstFailureInListingOrder lists the inventory as an identity that may list
// neither Services nor Sidecars. The kinds are listed at once, so the Sidecars' refusal can
// come back first; the load must still fail on the Services, the first of the two in
// inventoryKinds' order, each of several times.
func TestLoadInventory_FirstFailureInListingOrder(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "order", nil)
	c.ApplyYAML(t, fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: meshscope-order-%[1]s}
rules:
- {apiGroups: [""], resources: [namespaces, pods], verbs: [list]}
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
- {apiGroups: [apps], resources: [deployments, statefulsets, daemonsets, replicasets], verbs: [list]}
- {apiGroups: [batch], resources: [jobs, cronjobs], verbs: [list]}
- {apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [list]}
- {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [list]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list]}
- {apiGroups: [networking.istio.io], resources: [serviceentries, destinationrules, virtualservices], verbs: [list]}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: lister, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: meshscope-order-%[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: meshscope-order-%[1]s}
subjects: [{kind: ServiceAccount, name: lister, namespace: %[1]s}]
`, ns))
	c.WaitAllowed(t, "system:serviceaccount:"+ns+":lister", "list", "networking.istio.io", "virtualservices", "")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	token := c.ServiceAccountToken(t, ns, "lister")
	ca, err := os.ReadFile(filepath.Join(c.Env.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	client := New(Config{Host: c.Env.APIServer, Token: token, ClusterCACertificate: string(ca)})
	for i := range 5 {
		err := client.LoadInventory(ctx, mesh.New(), "")
		var pe *PermissionError
		if !errors.As(err, &pe) || pe.Resource != ServiceGVR || pe.Verb != "list" {
			t.Fatalf("load %d: error %v (%T), want the refusal to list services, the first refused kind", i, err, err)
		}
	}
}

// TestLoadInventory_AsTheDynamicClientReadsIt lists a namespace holding an object of each kind
// the inventory reads, and checks that the inventory holds each as reading it through the
// dynamic client does: apiVersion and kind set, managedFields dropped, encoded again and
// decoded (how LoadInventory read the lists before it decoded their pages' JSON itself).
func TestLoadInventory_AsTheDynamicClientReadsIt(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "asdynamic", map[string]string{"istio-injection": "enabled"})
	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: 8080}, {name: grpc, port: 9090}]}
---
apiVersion: v1
kind: Service
metadata: {name: legacy}
spec: {ports: [{name: tcp, port: 5432}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: legacy-1, labels: {kubernetes.io/service-name: legacy}}
addressType: IPv4
ports: [{name: tcp, port: 5432, protocol: TCP}]
endpoints: [{addresses: [10.9.8.7], conditions: {ready: true}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-v1, annotations: {example.com/owner: team-a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web, version: v1}}
  template:
    metadata: {labels: {app: web, version: v1}, annotations: {sidecar.istio.io/inject: "true"}}
    spec: {containers: [{name: web, image: web:1, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: legacy
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db:1}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-v1}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web-v1}, minReplicas: 3, maxReplicas: 5}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: api}
spec: {hosts: [api.example.com], ports: [{number: 443, name: tls, protocol: TLS}], resolution: DNS, location: MESH_EXTERNAL}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web}
spec: {host: web, subsets: [{name: v1, labels: {version: v1}}], trafficPolicy: {connectionPool: {tcp: {maxConnections: 2000000}}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web}
spec: {hosts: [web], http: [{route: [{destination: {host: web, subset: v1}, weight: 100}]}]}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: web, labels: {app.kubernetes.io/managed-by: someone-else}}
spec: {workloadSelector: {labels: {app: web}}, egress: [{hosts: [istio-system/*, ./*]}]}
`, testenv.InNamespace(ns))
	c.CreatePodRunning(t, ns, "web-v1-abc", map[string]string{"app": "web", "version": "v1"}, testenv.UniqueIP())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := mesh.New()
	if err := New(Config{ConfigPaths: []string{c.Env.Kubeconfig}, ListPageSize: 3}).LoadInventory(ctx, got, ""); err != nil {
		t.Fatalf("LoadInventory: %v", err)
	}
	want := mesh.New()
	for _, k := range inventoryKinds {
		if k.gvr == NamespaceGVR || k.gvr == WebhookConfigGVR {
			continue // cluster-scoped, and not in the comparison
		}
		list, err := c.Dynamic.Resource(k.gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: k.selector})
		if err != nil {
			t.Fatalf("listing %s: %v", k.gvr.Resource, err)
		}
		for _, obj := range list.Items {
			obj.SetAPIVersion(k.apiVersion)
			obj.SetKind(k.kind)
			obj.SetManagedFields(nil)
			js, err := json.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			if err := want.AddJSON(fmt.Sprintf("cluster:%s/%s/%s", k.kind, obj.GetNamespace(), obj.GetName()), js); err != nil {
				t.Fatal(err)
			}
		}
	}
	inNS := func(inv *mesh.Inventory) map[string]string {
		out := map[string]string{}
		add := func(kind string, list any) {
			js, err := json.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = string(js)
		}
		add("Service", filterNS(inv.Services, ns))
		add("Workload", filterNS(inv.Workloads, ns))
		add("ServiceEntry", filterNS(inv.ServiceEntries, ns))
		add("DestinationRule", filterNS(inv.DestinationRules, ns))
		add("VirtualService", filterNS(inv.VirtualServices, ns))
		add("Sidecar", filterNS(inv.Sidecars, ns))
		add("Autoscaler", filterNS(inv.Autoscalers, ns))
		add("EndpointSlice", filterNS(inv.EndpointSlices, ns))
		return out
	}
	g, w := inNS(got), inNS(want)
	for kind, wj := range w {
		if wj == "[]" || wj == "null" {
			t.Errorf("the test's namespace holds no %s: the test checks nothing of that kind", kind)
		}
		if g[kind] != wj {
			t.Errorf("%s: LoadInventory read\n%s\nthe dynamic client reads\n%s", kind, g[kind], wj)
		}
	}
}

// filterNS returns the objects of list in namespace ns.
func filterNS[T interface{ Key() string }](list []T, ns string) []T {
	out := []T{}
	for _, o := range list {
		if strings.HasPrefix(o.Key(), ns+"/") {
			out = append(out, o)
		}
	}
	return out
}
