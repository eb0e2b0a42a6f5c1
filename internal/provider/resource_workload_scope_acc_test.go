package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

// leastPrivilegeToken binds examples/rbac/clusterrole.yaml to a fresh service
// account and returns a token for it: the provider runs as users are told to run it.
func leastPrivilegeToken(t *testing.T, c *testenv.Cluster) string {
	t.Helper()
	role, err := os.ReadFile(filepath.Join("..", "..", "examples", "rbac", "clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyYAML(t, string(role))
	ns := c.UniqueNamespace(t, "meshscope-sa", nil)
	c.ApplyYAML(t, fmt.Sprintf(`
apiVersion: v1
kind: ServiceAccount
metadata: {name: meshscope, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: meshscope-%[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: meshscope}
subjects: [{kind: ServiceAccount, name: meshscope, namespace: %[1]s}]
`, ns))
	// The grant counts once the authorizer has seen the binding.
	user := "system:serviceaccount:" + ns + ":meshscope"
	c.WaitAllowed(t, user, "list", "", "namespaces", "")
	c.WaitAllowed(t, user, "patch", "networking.istio.io", "sidecars", "")
	return c.ServiceAccountToken(t, ns, "meshscope")
}

func liveProvider(t *testing.T, c *testenv.Cluster, token string, force bool) string {
	ca, err := os.ReadFile(filepath.Join(c.Env.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
provider "meshscope" {
  kubernetes {
    host                   = %q
    token                  = %q
    cluster_ca_certificate = %s
    force_conflicts        = %t
  }
}
`, c.Env.APIServer, token, heredoc(string(ca)), force)
}

// webNamespace creates a unique namespace holding the Service web (port 80,
// selecting app=web) that webScope's workloads run behind.
func webNamespace(t *testing.T, c *testenv.Cluster, prefix string) string {
	t.Helper()
	ns := c.UniqueNamespace(t, prefix, nil)
	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{name: http, port: 80}]}
`, testenv.InNamespace(ns))
	return ns
}

func webScope(ns string, ports string) string {
	return fmt.Sprintf(`
resource "meshscope_workload_scope" "web" {
  namespace         = %q
  workload_selector = { app = "web" }
  dependencies      = [{ service = "kubernetes.default", ports = [%s] }]
}
`, ns, ports)
}

// sidecarInCluster checks that the live Sidecar carries meshscope's label and
// field manager, then runs want on it.
func sidecarInCluster(c *testenv.Cluster, ns, name string, want func(map[string]any) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if obj.GetLabels()["app.kubernetes.io/managed-by"] != "meshscope" {
			return fmt.Errorf("sidecar %s/%s lacks the managed-by label: %v", ns, name, obj.GetLabels())
		}
		managers := []string{}
		for _, mf := range obj.GetManagedFields() {
			managers = append(managers, mf.Manager)
		}
		if !slices.Contains(managers, kube.DefaultFieldManager) {
			return fmt.Errorf("sidecar %s/%s: field managers %v lack %q", ns, name, managers, kube.DefaultFieldManager)
		}
		return want(obj.Object)
	}
}

func egressPorts(obj map[string]any) []int64 {
	spec, _ := obj["spec"].(map[string]any)
	egress, _ := spec["egress"].([]any)
	var out []int64
	for _, e := range egress {
		l, _ := e.(map[string]any)
		if p, ok := l["port"].(map[string]any); ok {
			if n, ok := p["number"].(int64); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestAccWorkloadScope_DriftConflictForceImportDelete: create, update, external drift, a conflict
// with another field manager, force, import, and delete, against a real
// kube-apiserver, as a least-privilege identity.
func TestAccWorkloadScope_DriftConflictForceImportDelete(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := webNamespace(t, c, "web")
	c.CreatePodRunning(t, ns, "web-0", map[string]string{"app": "web"}, testenv.UniqueIP())

	ports := func(want ...int64) func(map[string]any) error {
		return func(obj map[string]any) error {
			if got := egressPorts(obj); !slices.Equal(got, want) {
				return fmt.Errorf("egress listener ports = %v, want %v", got, want)
			}
			return nil
		}
	}
	externalEdit := func() {
		patch := []byte(`{"spec":{"egress":[{"hosts":["*/*"]}]}}`)
		if _, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Patch(context.Background(), "web", types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatalf("external edit: %v", err)
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			_, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("sidecar %s/web still exists after destroy (err %v)", ns, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: liveProvider(t, c, token, false) + webScope(ns, "443"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.web", plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue("meshscope_workload_scope.web", tfjsonpath.New("id"), knownvalue.StringExact(ns+"/web")),
				}},
				Check: sidecarInCluster(c, ns, "web", ports(443)),
			},
			{
				Config:      liveProvider(t, c, token, false) + webScope(ns, "443, 6443"),
				ExpectError: regexp.MustCompile(`Port Not Exposed`),
			},
			{
				// Update: a port-less dependency gives a single catch-all listener.
				Config: liveProvider(t, c, token, false) + `
resource "meshscope_workload_scope" "web" {
  namespace         = "` + ns + `"
  workload_selector = { app = "web" }
  dependencies      = [{ service = "kubernetes.default" }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.web", plancheck.ResourceActionUpdate),
				}},
				Check: sidecarInCluster(c, ns, "web", ports()),
			},
			{
				// Drift made out of band shows in the plan.
				PreConfig:          externalEdit,
				Config:             liveProvider(t, c, token, false) + webScope(ns, "443"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Taking the field back from kubectl-edit is a conflict naming it ...
				Config:      liveProvider(t, c, token, false) + webScope(ns, "443"),
				ExpectError: regexp.MustCompile(`(?s)Field Manager Conflict.*"kubectl-edit"`),
			},
			{
				// ... until force_conflicts is set.
				Config: liveProvider(t, c, token, true) + webScope(ns, "443"),
				Check:  sidecarInCluster(c, ns, "web", ports(443)),
			},
			{
				ResourceName:      "meshscope_workload_scope.web",
				Config:            liveProvider(t, c, token, true) + webScope(ns, "443"),
				ImportState:       true,
				ImportStateId:     ns + "/web",
				ImportStateVerify: true,
			},
			{
				ResourceName:  "meshscope_workload_scope.web",
				Config:        liveProvider(t, c, token, true) + webScope(ns, "443"),
				ImportState:   true,
				ImportStateId: ns + "-web",
				ExpectError:   regexp.MustCompile(`Invalid Import ID`),
			},
			{
				Config: liveProvider(t, c, token, true) + webScope(ns, "443"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.web", tfjsonpath.New("name"), knownvalue.StringExact("web")),
				},
			},
		},
	})
}

// TestAccWorkloadScope_goneAndForeign: a Sidecar deleted out of band leaves the
// state (and is recreated), and destroy never deletes a Sidecar meshscope does not own.
func TestAccWorkloadScope_goneAndForeign(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := webNamespace(t, c, "web")
	deleteSidecar := func() {
		if err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	foreign := `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: other}
spec:
  workloadSelector: {labels: {app: other}}
  egress: [{hosts: ["istio-system/*"]}]
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			_, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Get(context.Background(), "other", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("the foreign Sidecar %s/other must survive destroy: %v", ns, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: liveProvider(t, c, token, false) + webScope(ns, "443")},
			{
				PreConfig: deleteSidecar,
				Config:    liveProvider(t, c, token, false) + webScope(ns, "443"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.web", plancheck.ResourceActionCreate),
				}},
			},
			{
				// Import a Sidecar meshscope did not write; destroy must leave it.
				PreConfig: func() { c.ApplyYAML(t, foreign, testenv.InNamespace(ns)) },
				Config: liveProvider(t, c, token, false) + webScope(ns, "443") + fmt.Sprintf(`
import {
  to = meshscope_workload_scope.other
  id = "%[1]s/other"
}
resource "meshscope_workload_scope" "other" {
  namespace         = %[1]q
  name              = "other"
  workload_selector = { app = "other" }
}
`, ns),
				// The import adds meshscope's label: an update, not a replacement.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.other", plancheck.ResourceActionUpdate),
				}},
				// After the update meshscope owns it: its label and field manager are on the object.
				Check: sidecarInCluster(c, ns, "other", func(map[string]any) error { return nil }),
			},
			{
				// Remove meshscope's ownership by hand, then destroy: a warning, the object stays.
				PreConfig: func() {
					patch := []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"someone-else"}}}`)
					if _, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Patch(context.Background(), "other", types.MergePatchType, patch,
						metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
						t.Fatal(err)
					}
				},
				Config: liveProvider(t, c, token, true) + webScope(ns, "443"),
			},
		},
	})
}

// TestAccWorkloadScope_waitForProxies: with wait_for_proxies, apply waits until
// the proxies the Sidecar governs acknowledged its scope over CDS. A proxy that
// never acknowledges fails the apply by name; once it is gone, the tainted scope
// is applied again and the proxy that acknowledges holds the new clusters.
func TestAccWorkloadScope_waitForProxies(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := webNamespace(t, c, "wait")
	web := map[string]string{"app": "web"}
	acking := c.CreatePodRunning(t, ns, "web-0", web, testenv.UniqueIP())
	silent := c.CreatePodRunning(t, ns, "web-1", web, testenv.UniqueIP())
	asProxy := func(p *corev1.Pod) xdsprobe.Proxy {
		return xdsprobe.Proxy{Namespace: p.Namespace, Name: p.Name, IP: p.Status.PodIP, Labels: p.Labels}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := c.Env.ControlPlane()

	// web-0 acknowledges every push and follows the latest cluster list.
	acker, err := xdsprobe.Watch(ctx, cp, asProxy(acking))
	if err != nil {
		t.Fatal(err)
	}
	defer acker.Close()
	// web-1 receives but never acknowledges.
	mute, err := xdsprobe.Dial(ctx, cp, asProxy(silent))
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()

	ownService := "outbound|80||web." + ns + ".svc.cluster.local"
	kubernetes443 := "outbound|443||kubernetes.default.svc.cluster.local"
	// Before any Sidecar, istiod pushes web-0 the default scope, its own Service included, once it
	// has indexed the Service created above: wait for that, not for the first push.
	testenv.EventuallyPushed(t, acker, testenv.Want{Include: []string{ownService, kubernetes443}}, testenv.PushTimeout)

	provider := func(debug bool) string {
		cfg := liveProvider(t, c, token, false)
		if debug {
			// Long enough for web-0 to acknowledge on a busy machine; web-1 never does.
			cfg = strings.Replace(cfg, "provider \"meshscope\" {\n", fmt.Sprintf("provider \"meshscope\" {\n  istiod_debug_url   = %q\n  proxy_wait_timeout = \"45s\"\n", "http://"+c.Env.IstiodHTTPAddr), 1)
		}
		return cfg
	}
	scope := strings.Replace(webScope(ns, "443"), "\n}\n", "\n  wait_for_proxies  = true\n}\n", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      provider(false) + scope,
				ExpectError: regexp.MustCompile(`Waiting Needs istiod's Debug Endpoints`),
			},
			{
				Config:      provider(true) + scope,
				ExpectError: regexp.MustCompile(`(?s)Proxies Did Not Acknowledge The Scope.*1 of the 2 connected proxies.*web-1\.` + ns + `: the proxy has not acknowledged CDS push`),
			},
			{
				PreConfig: mute.Close,
				Config:    provider(true) + scope,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The scope the failed wait left tainted is applied again.
					plancheck.ExpectResourceAction("meshscope_workload_scope.web", plancheck.ResourceActionReplace),
				}},
				Check: func(*terraform.State) error {
					// Apply returned once web-0 acknowledged the new scope: the list it follows is
					// the new scope's (its goroutine records a push just after acknowledging it).
					ctx, cancel := context.WithTimeout(context.Background(), testenv.PushTimeout)
					defer cancel()
					_, err := testenv.WaitPushed(ctx, acker, testenv.Want{Include: []string{kubernetes443}, Exclude: []string{ownService}})
					return err
				},
			},
		},
	})
}

// liveSeedEnv is the seed scenario in the API server, with a private istiod
// that sees only its namespaces, and a provider configured against both.
type liveSeedEnv struct {
	pods     map[string]*corev1.Pod // by the seed's namespace name, "foo" and "bar"
	provider string                 // the provider block
	// pushed checks that each data source predicts want[name] clusters, exactly what istiod pushes to the pod.
	pushed func(want map[string]int) resource.TestCheckFunc
}

func liveSeed(t *testing.T) liveSeedEnv {
	t.Helper()
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	label := "mesh.meshscope.io/seed-" + testenv.RandomSuffix(6)
	foo := c.UniqueNamespace(t, "foo", map[string]string{label: "true"})
	bar := c.UniqueNamespace(t, "bar", map[string]string{label: "true"})
	for _, ns := range []string{"istio-system", "kube-system", "default"} {
		c.LabelNamespace(t, ns, label, "true")
	}
	pods := c.ApplySeed(t, filepath.Join("..", "..", "examples", "seed", "manifests"), foo, bar)
	meshConfig := fmt.Sprintf("discoverySelectors:\n- matchLabels: {%q: \"true\"}\n", label)
	istiod := testenv.StartIstiod(t, c.Env, testenv.IstiodOptions{MeshConfig: meshConfig})

	// The provider sees the mesh config the private istiod has.
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: |\n" +
		"    discoverySelectors:\n    - matchLabels: {" + strconv.Quote(label) + ": \"true\"}\n"
	provider := strings.Replace(liveProvider(t, c, token, false), "provider \"meshscope\" {\n",
		"provider \"meshscope\" {\n  manifests = ["+heredoc(configMap)+"]\n", 1)
	pushed := func(want map[string]int) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			for name, n := range want {
				p := pods[name]
				proxy := xdsprobe.Proxy{Namespace: p.Namespace, Name: p.Name, IP: p.Status.PodIP, Labels: p.Labels,
					PodPorts: []xdsprobe.PodPort{{ContainerPort: 80, Protocol: "TCP"}}}
				predicted, err := pushedAsPredicted(s, istiod.ControlPlane(), name, proxy)
				if err != nil {
					return err
				}
				if len(predicted) != n {
					return fmt.Errorf("%s/test-app: meshscope predicted and istiod pushed %d clusters, want %d: %v", name, len(predicted), n, predicted)
				}
			}
			return nil
		}
	}
	return liveSeedEnv{pods: pods, provider: provider, pushed: pushed}
}

// seedFooScope is the seed's scope for foo's test-app: HTTP on 80, and the control plane only.
func seedFooScope(ns string) string {
	return fmt.Sprintf(`
resource "meshscope_workload_scope" "foo" {
  namespace         = %q
  workload_selector = { app = "test-app" }
  dependencies      = []
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
}
`, ns)
}

// TestAccWorkloadScope_seedLive applies the seed scenario for real: the seed
// manifests go into the API server, and the seed's foo scope is planned and
// applied through Terraform against it. A private istiod that sees only the
// seed's namespaces pushes to foo's proxy exactly what meshscope predicted:
// 19 CDS clusters before the Sidecar, 13 after (the plan already says 13),
// while bar's proxy keeps its 19.
func TestAccWorkloadScope_seedLive(t *testing.T) {
	seed := liveSeed(t)
	foo, bar := seed.pods["foo"].Namespace, seed.pods["bar"].Namespace
	provider, pushed := seed.provider, seed.pushed
	dataSources := fmt.Sprintf(`
data "meshscope_proxy_clusters" "foo" {
  namespace = %q
  labels    = { app = "test-app" }
}
data "meshscope_proxy_clusters" "bar" {
  namespace = %q
  labels    = { app = "test-app" }
}
`, foo, bar)
	scope := seedFooScope(foo)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// No Sidecar: 19 each, predicted and pushed.
				Config: provider + dataSources,
				Check:  pushed(map[string]int{"foo": 19, "bar": 19}),
			},
			{
				// The plan predicts 13 for foo before anything is applied.
				Config: provider + dataSources + scope,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
				}},
			},
			{
				// Read again with the Sidecar in the cluster: 13 for foo, 19 for bar, as pushed.
				Config: provider + dataSources + scope,
				Check:  pushed(map[string]int{"foo": 13, "bar": 19}),
			},
		},
	})
}

// TestAccWorkloadScope_readAfterWrite: in one apply, a data source that depends
// on a scope reads after the scope's Sidecar is applied, and sees it: 13 clusters
// for foo, what istiod pushes, not the 19 of the inventory the provider loaded
// when it was configured.
func TestAccWorkloadScope_readAfterWrite(t *testing.T) {
	seed := liveSeed(t)
	foo := seed.pods["foo"].Namespace
	dataSource := fmt.Sprintf(`
data "meshscope_proxy_clusters" "foo" {
  namespace  = %q
  labels     = { app = "test-app" }
  depends_on = [meshscope_workload_scope.foo]
}
`, foo)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: seed.provider + seedFooScope(foo) + dataSource,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionCreate),
			}},
			Check: seed.pushed(map[string]int{"foo": 13}),
		}},
	})
}

// TestAccWorkloadScope_importReplan: a Sidecar meshscope applied is forgotten
// by Terraform (a removed block keeps the object), then imported back with an
// import block: the plan imports it with no change, and the re-plan after the
// import is empty.
func TestAccWorkloadScope_importReplan(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := c.UniqueNamespace(t, "imp", nil)
	c.CreatePodRunning(t, ns, "web-0", map[string]string{"app": "web"}, testenv.UniqueIP())
	cfg := liveProvider(t, c, token, false) + webScope(ns, "443")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				Config: liveProvider(t, c, token, false) + `
removed {
  from = meshscope_workload_scope.web
  lifecycle {
    destroy = false
  }
}
`,
				Check: sidecarInCluster(c, ns, "web", func(map[string]any) error { return nil }),
			},
			{
				Config: cfg + fmt.Sprintf("\nimport {\n  to = meshscope_workload_scope.web\n  id = \"%s/web\"\n}\n", ns),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.web", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.web", tfjsonpath.New("id"), knownvalue.StringExact(ns+"/web")),
				},
				// terraform-plugin-testing plans again after apply and fails on a non-empty plan.
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProvider_clusterErrors: an identity without the README's ClusterRole
// gets an error naming the verb and resource to grant; an API server that does
// not answer is an error on the kubernetes block, not a panic or a hang.
func TestAccProvider_clusterErrors(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "norbac", nil)
	c.ApplyYAML(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nobody}\n", testenv.InNamespace(ns))
	token := c.ServiceAccountToken(t, ns, "nobody")
	data := fmt.Sprintf("data \"meshscope_proxy_clusters\" \"x\" {\n  namespace = %q\n  labels    = { app = \"x\" }\n}\n", ns)
	unreachable := `
provider "meshscope" {
  kubernetes {
    host     = "https://127.0.0.1:1"
    token    = "not-a-real-token"
    insecure = true
  }
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      liveProvider(t, c, token, false) + data,
				ExpectError: regexp.MustCompile(`(?s)Permission Denied.*Grant\s+the\s+provider's\s+identity\s+verb\s+"list"\s+on\s+"namespaces"`),
			},
			{
				Config:      unreachable + data,
				ExpectError: regexp.MustCompile(`(?s)Cluster Unreachable.*127\.0\.0\.1:1`),
			},
		},
	})
}

// TestAccWorkloadScope_conflictMidApply: one of three scopes of an apply meets a field manager
// conflict. The other two are applied and in the state; the third is neither half-written nor
// in the state, and the foreign Sidecar keeps its fields. The next plan creates only the third,
// and with force_conflicts it converges.
func TestAccWorkloadScope_conflictMidApply(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := webNamespace(t, c, "mid")
	scopes := ""
	for _, app := range []string{"a", "b", "c"} {
		scopes += fmt.Sprintf(`
resource "meshscope_workload_scope" "%[1]s" {
  namespace         = %[2]q
  name              = "scope-%[1]s"
  workload_selector = { app = %[1]q }
  dependencies      = [{ service = "kubernetes.default", ports = [443] }]
}
`, app, ns)
	}
	// Another manager owns scope-c's egress with other values.
	foreign := func() {
		obj := map[string]any{
			"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
			"metadata": map[string]any{"name": "scope-c", "namespace": ns},
			"spec":     map[string]any{"workloadSelector": map[string]any{"labels": map[string]any{"app": "c"}}, "egress": []any{map[string]any{"hosts": []any{"*/*"}}}},
		}
		if _, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Apply(context.Background(), "scope-c",
			&unstructured.Unstructured{Object: obj}, metav1.ApplyOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatalf("foreign Sidecar: %v", err)
		}
	}
	foreignIntact := func() error {
		obj, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).Get(context.Background(), "scope-c", metav1.GetOptions{})
		if err != nil {
			return err
		}
		hosts, _, _ := unstructured.NestedSlice(obj.Object, "spec", "egress")
		if len(hosts) != 1 || fmt.Sprint(hosts[0]) != "map[hosts:[*/*]]" {
			return fmt.Errorf("the conflicting apply changed the foreign Sidecar's egress: %v", hosts)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig:   foreign,
				Config:      liveProvider(t, c, token, false) + scopes,
				ExpectError: regexp.MustCompile(`(?s)Field Manager Conflict.*"kubectl-edit"`),
			},
			{
				// The state holds a and b, as the cluster does; c is still to create, and the foreign object is intact.
				PreConfig: func() {
					if err := foreignIntact(); err != nil {
						t.Fatal(err)
					}
				},
				Config: liveProvider(t, c, token, true) + scopes,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.a", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("meshscope_workload_scope.b", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("meshscope_workload_scope.c", plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					sidecarInCluster(c, ns, "scope-a", func(map[string]any) error { return nil }),
					sidecarInCluster(c, ns, "scope-b", func(map[string]any) error { return nil }),
					sidecarInCluster(c, ns, "scope-c", func(obj map[string]any) error {
						if p := egressPorts(obj); len(p) != 1 || p[0] != 443 {
							return fmt.Errorf("scope-c egress ports = %v after force, want [443]", p)
						}
						return nil
					}),
				),
			},
		},
	})
}

// TestAccWorkloadScope_forbiddenMidApply: the identity may write Sidecars in one namespace and
// not in the other. The apply fails on the second with the verb and resource to grant; the first
// is applied and in the state; once the grant exists, the next plan creates only the second.
func TestAccWorkloadScope_forbiddenMidApply(t *testing.T) {
	c := testenv.Connect(t)
	allowed, denied := webNamespace(t, c, "grant"), webNamespace(t, c, "deny")
	sa := c.UniqueNamespace(t, "meshscope-sa", nil)
	id := testenv.RandomSuffix(6)
	// The README's ClusterRole without Sidecar writes, plus writes in the allowed namespace only.
	role, err := os.ReadFile(filepath.Join("..", "..", "examples", "rbac", "clusterrole.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readOnly := strings.Replace(strings.Replace(string(role), "name: meshscope\n", "name: meshscope-read-"+id+"\n", 1),
		"verbs: [get, list, create, patch, delete]", "verbs: [get, list]", 1)
	c.ApplyYAML(t, readOnly)
	writer := func(ns string) string {
		return fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sidecar-writer, namespace: %[1]s}
rules: [{apiGroups: [networking.istio.io], resources: [sidecars], verbs: [get, create, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: meshscope-writer, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sidecar-writer}
subjects: [{kind: ServiceAccount, name: meshscope, namespace: %[2]s}]
`, ns, sa)
	}
	c.ApplyYAML(t, fmt.Sprintf(`
apiVersion: v1
kind: ServiceAccount
metadata: {name: meshscope, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: meshscope-read-%[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: meshscope-read-%[2]s}
subjects: [{kind: ServiceAccount, name: meshscope, namespace: %[1]s}]
`, sa, id)+"---\n"+writer(allowed))
	user := "system:serviceaccount:" + sa + ":meshscope"
	c.WaitAllowed(t, user, "list", "", "namespaces", "")
	c.WaitAllowed(t, user, "patch", "networking.istio.io", "sidecars", allowed)
	token := c.ServiceAccountToken(t, sa, "meshscope")
	scopes := fmt.Sprintf(`
resource "meshscope_workload_scope" "allowed" {
  namespace         = %q
  workload_selector = { app = "web" }
  dependencies      = [{ service = "kubernetes.default", ports = [443] }]
}
resource "meshscope_workload_scope" "denied" {
  namespace         = %q
  workload_selector = { app = "web" }
  dependencies      = [{ service = "kubernetes.default", ports = [443] }]
}
`, allowed, denied)
	cfg := liveProvider(t, c, token, false) + scopes
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Permission Denied.*Grant\s+the\s+provider's\s+identity\s+verb\s+"patch"\s+on\s+"sidecars"`),
			},
			{
				PreConfig: func() {
					if _, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(denied).Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Fatalf("the refused Sidecar exists in %s (err %v)", denied, err)
					}
					c.ApplyYAML(t, writer(denied))
					c.WaitAllowed(t, user, "patch", "networking.istio.io", "sidecars", denied)
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("meshscope_workload_scope.allowed", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("meshscope_workload_scope.denied", plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					sidecarInCluster(c, allowed, "web", func(map[string]any) error { return nil }),
					sidecarInCluster(c, denied, "web", func(map[string]any) error { return nil }),
				),
			},
		},
	})
}
