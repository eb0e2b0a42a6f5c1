package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// testProtoV6ProviderFactories serves the provider in-process for terraform-plugin-testing.
var testProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"meshscope": Serve(New("test")),
}

// seedDir returns the absolute path of the seed inventory, examples/seed/manifests,
// found relative to this package's directory: the example itself, which holds the same mesh
// as the other packages' fixture (internal/fixture checks that).
func seedDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "seed", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("seed manifests: %v", err)
	}
	return dir
}

// seedSidecarFile returns the path of a file holding the compiled Sidecar of the seed's foo
// scope (ingress 80, egress istio-system/*).
func seedSidecarFile(t *testing.T) string {
	t.Helper()
	return fixture.SidecarFooFile(t)
}

// seedProvider is a provider block over the seed inventory. extra are more HCL
// expressions appended to the manifests list; settings are more provider arguments.
func seedProvider(t *testing.T, extra []string, settings ...string) string {
	t.Helper()
	manifests := fmt.Sprintf("[for f in fileset(%q, \"*.yaml\") : file(\"%s/${f}\")]", seedDir(t), seedDir(t))
	if len(extra) > 0 {
		manifests = fmt.Sprintf("concat(%s, [%s])", manifests, strings.Join(extra, ", "))
	}
	return fmt.Sprintf("provider \"meshscope\" {\n  manifests = %s\n  %s\n}\n", manifests, strings.Join(settings, "\n  "))
}

// heredoc quotes YAML as an HCL heredoc expression.
func heredoc(yaml string) string {
	return "<<-EOT\n" + yaml + "\nEOT\n"
}

// seedClusters are the CDS clusters of foo/test-app under the seed Sidecar
// (ingress 80, egress istio-system/*), sorted.
func seedClusters() []string {
	out := []string{
		"BlackHoleCluster",
		"InboundPassthroughCluster",
		"PassthroughCluster",
		"inbound|80||",
		"outbound|15010||istiod.istio-system.svc.cluster.local",
		"outbound|15012||istiod.istio-system.svc.cluster.local",
		"outbound|15014||istiod.istio-system.svc.cluster.local",
		"outbound|443||istiod.istio-system.svc.cluster.local",
		"outbound|15012||istio-ingressgateway.istio-system.svc.cluster.local",
		"outbound|15021||istio-ingressgateway.istio-system.svc.cluster.local",
		"outbound|15443||istio-ingressgateway.istio-system.svc.cluster.local",
		"outbound|443||istio-ingressgateway.istio-system.svc.cluster.local",
		"outbound|80||istio-ingressgateway.istio-system.svc.cluster.local",
	}
	sort.Strings(out)
	return out
}

// fakeSource is an InventorySource that adds YAML read from disk, as a live
// cluster source would add what it lists.
type fakeSource struct {
	dir string
}

func (s fakeSource) Name() string { return "fake" }

func (s fakeSource) Load(_ context.Context, inv *mesh.Inventory) diag.Diagnostics {
	var diags diag.Diagnostics
	if err := inv.LoadPaths([]string{s.dir}, nil); err != nil {
		diags.AddError("Fake Source Failed", err.Error())
	}
	return diags
}

func TestProvider_inventorySource(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"meshscope": Serve(NewWithSources("test", fakeSource{dir: seedDir(t)})),
		},
		Steps: []resource.TestStep{
			{
				Config: `
provider "meshscope" {}

data "meshscope_proxy_clusters" "foo" {
  namespace = "foo"
  labels    = { app = "test-app" }
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(19)),
				},
			},
		},
	})
}

func TestProvider_systemHostsAndRootNamespace(t *testing.T) {
	scope := `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
}
`
	cases := []struct {
		name     string
		settings []string
		hosts    []string
		clusters int64
	}{
		// No system host: the Sidecar imports nothing; inbound 80 and the 3 fixed clusters remain.
		{"no system hosts", []string{"system_hosts = []"}, []string{"~/*"}, 4},
		// Only istiod: its 4 ports.
		{"one system host", []string{`system_hosts = ["istio-system/istiod.istio-system.svc.cluster.local"]`},
			[]string{"istio-system/istiod.istio-system.svc.cluster.local"}, 8},
		// The default system host follows the root namespace: kube-system's 3 services.
		{"root namespace", []string{`root_namespace = "kube-system"`}, []string{"kube-system/*"}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hosts []knownvalue.Check
			for _, h := range tc.hosts {
				hosts = append(hosts, knownvalue.StringExact(h))
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps: []resource.TestStep{
					{
						Config: seedProvider(t, nil, tc.settings...) + scope,
						ConfigPlanChecks: resource.ConfigPlanChecks{
							PreApply: []plancheck.PlanCheck{
								plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("egress_hosts"), knownvalue.ListExact(hosts)),
								plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(tc.clusters)),
							},
						},
					},
				},
			})
		})
	}
}

// TestProvider_kubeconfigProblems: a kubeconfig that is missing, does not parse or lacks the
// context asked for is named as such, on the attribute at fault, before any cluster is called.
func TestProvider_kubeconfigProblems(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config")
	broken := filepath.Join(dir, "broken")
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters: [{name: a, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: ctx-a, context: {cluster: a, user: u}}]\ncurrent-context: ctx-a\n"
	if err := os.WriteFile(good, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("clusters: {not: [closed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := "data \"meshscope_proxy_clusters\" \"x\" {\n  namespace = \"foo\"\n  labels    = { app = \"x\" }\n}\n"
	for name, tc := range map[string]struct {
		block, err, summary, path string
	}{
		"missing file": {fmt.Sprintf("config_path = %q", filepath.Join(dir, "nope")),
			`(?s)Kubeconfig Not Found.*nope"\s+does\s+not\s+exist`, "Kubeconfig Not Found", "kubernetes.config_path"},
		"unparseable file": {fmt.Sprintf("config_path = %q", broken),
			`(?s)Invalid Kubeconfig.*broken"\s+is\s+not\s+a\s+kubeconfig`, "Invalid Kubeconfig", "kubernetes.config_path"},
		"unknown context": {fmt.Sprintf("config_path = %q\n    config_context = \"ctx-b\"", good),
			`(?s)Unknown Kubeconfig Context.*one\s+of\s+the\s+kubeconfig's\s+contexts:\s+"ctx-a"`, "Unknown Kubeconfig Context", "kubernetes.config_context"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &diagRecorder{}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: recordingFactories(rec),
				Steps: []resource.TestStep{{
					Config:      "provider \"meshscope\" {\n  kubernetes {\n    " + tc.block + "\n  }\n}\n" + data,
					ExpectError: regexp.MustCompile(tc.err),
				}},
			})
			if !rec.hasError(tc.summary, tc.path) {
				t.Errorf("no error %q on %s; the provider returned:\n%s", tc.summary, tc.path, formatDiags(rec.errors()))
			}
		})
	}
}

// TestProvider_clusterNotAnswering: an API server that accepts the connection and never answers
// fails the plan after kubernetes.request_timeout, with an error naming the request, instead of
// hanging.
func TestProvider_clusterNotAnswering(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "meshscope" {
  kubernetes {
    host            = "https://%s"
    token           = "not-a-real-token"
    insecure        = true
    request_timeout = "2s"
  }
}
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  labels    = { app = "x" }
}
`, l.Addr()),
			ExpectError: regexp.MustCompile(`(?s)Cluster Not Answering.*did\s+not\s+answer\s+list\s+namespaces\s+within\s+2s`),
		}},
	})
	if !rec.hasError("Cluster Not Answering", "kubernetes") {
		t.Errorf("no Cluster Not Answering error on kubernetes; the provider returned:\n%s", formatDiags(rec.errors()))
	}
}
