package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	exp := int64(3600)
	tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "meshscope",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the least-privilege service account: %v", err)
	}
	return tr.Status.Token
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

// TestAccWorkloadScope_lifecycle: create, update, external drift, a conflict
// with another field manager, force, import, and delete, against a real
// kube-apiserver, as a least-privilege identity.
func TestAccWorkloadScope_lifecycle(t *testing.T) {
	c := testenv.Connect(t)
	token := leastPrivilegeToken(t, c)
	ns := c.UniqueNamespace(t, "web", nil)
	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{name: http, port: 80}]}
`, testenv.InNamespace(ns))
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
	ns := c.UniqueNamespace(t, "web", nil)
	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{name: http, port: 80}]}
`, testenv.InNamespace(ns))
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
	ns := c.UniqueNamespace(t, "wait", nil)
	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{name: http, port: 80}]}
`, testenv.InNamespace(ns))
	web := map[string]string{"app": "web"}
	acking := c.CreatePodRunning(t, ns, "web-0", web, testenv.UniqueIP())
	silent := c.CreatePodRunning(t, ns, "web-1", web, testenv.UniqueIP())
	asProxy := func(p *corev1.Pod) xdsprobe.Proxy {
		return xdsprobe.Proxy{Namespace: p.Namespace, Name: p.Name, IP: p.Status.PodIP, Labels: p.Labels}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// web-0 acknowledges every push and remembers the last cluster list.
	var (
		mu   sync.Mutex
		last []string
	)
	stream, err := xdsprobe.Dial(ctx, c.Env.XDSAddr, asProxy(acking))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	go func() {
		for {
			got, err := stream.Next()
			if err != nil {
				return
			}
			mu.Lock()
			last = got
			mu.Unlock()
		}
	}()
	// web-1 receives but never acknowledges.
	mute, err := xdsprobe.Dial(ctx, c.Env.XDSAddr, asProxy(silent))
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()

	ownService := "outbound|80||web." + ns + ".svc.cluster.local"
	kubernetes443 := "outbound|443||kubernetes.default.svc.cluster.local"
	mu.Lock()
	before := slices.Clone(last)
	mu.Unlock()
	if before != nil && !slices.Contains(before, ownService) {
		t.Fatalf("web-0 without a Sidecar lacks %s: %v", ownService, before)
	}

	provider := func(debug bool) string {
		cfg := liveProvider(t, c, token, false)
		if debug {
			cfg = strings.Replace(cfg, "provider \"meshscope\" {\n", fmt.Sprintf("provider \"meshscope\" {\n  istiod_debug_url   = %q\n  proxy_wait_timeout = \"8s\"\n", "http://"+c.Env.IstiodHTTPAddr), 1)
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
					// Apply returned after web-0 acknowledged: its clusters are the new scope's.
					deadline := time.Now().Add(2 * time.Second)
					for {
						mu.Lock()
						got := slices.Clone(last)
						mu.Unlock()
						if slices.Contains(got, kubernetes443) && !slices.Contains(got, ownService) {
							return nil
						}
						if time.Now().After(deadline) {
							return fmt.Errorf("web-0 holds %v after apply, want %s and not %s", got, kubernetes443, ownService)
						}
						time.Sleep(50 * time.Millisecond)
					}
				},
			},
		},
	})
}
