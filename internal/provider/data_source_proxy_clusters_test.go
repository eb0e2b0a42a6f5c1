package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

func TestProxyClustersDataSource_SeedSidecarGivesTheIstioctlList(t *testing.T) {
	var want []knownvalue.Check
	for _, name := range seedClusters() {
		want = append(want, knownvalue.StringExact(name))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil) + fmt.Sprintf(`
data "meshscope_proxy_clusters" "foo" {
  namespace = "foo"
  labels    = { app = "test-app" }
}

data "meshscope_proxy_clusters" "foo_scoped" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [file(%[1]q)]
}

data "meshscope_proxy_clusters" "bar_scoped" {
  namespace = "bar"
  labels    = { app = "test-app" }
  sidecars  = [file(%[1]q)]
}
`, seedSidecarFile(t)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("outbound_count"), knownvalue.Int64Exact(15)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("inbound_count"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("baseline_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("istioctl_count"), knownvalue.Int64Exact(19+4)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("sidecar"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("clusters"), knownvalue.ListSizeExact(19)),

					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("outbound_count"), knownvalue.Int64Exact(9)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("inbound_count"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("baseline_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("istioctl_count"), knownvalue.Int64Exact(13+4)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("sidecar"), knownvalue.StringExact("foo/test-app")),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("clusters"), knownvalue.ListExact(want)),

					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.bar_scoped", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.bar_scoped", tfjsonpath.New("sidecar"), knownvalue.StringExact("")),

					// The seed's listeners, as the conformance module's TestListenersSeed pins Istio's: 14
					// without a Sidecar, 11 under foo's; the VIPs of the TCP and detected ports are
					// assigned by the API server, so the seed's manifests do not carry them.
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("listener_count"), knownvalue.Int64Exact(14)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("listeners"), knownvalue.ListSizeExact(14)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("listeners_address_unknown"), knownvalue.Int64Exact(9)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("listener_count"), knownvalue.Int64Exact(11)),
					// Endpoints: the seed's test-app Deployments, one replica each, behind foo and bar (TestProxyConfigSeed
					// lists them); under foo's Sidecar only istio-system's Services, which have no workload in the seed.
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("endpoint_count"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("endpoints_address_unknown"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("endpoint_count"), knownvalue.Int64Exact(0)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("baseline_listener_count"), knownvalue.Int64Exact(14)),
					// Routes, as the conformance module's TestRoutesSeed checks against Istio's: the seed's four
					// HTTP services share route 80 (with allow_any, 5 virtual hosts) without a Sidecar; foo's keeps
					// istio-ingressgateway there, so 10 virtual hosts become 7 over the same 4 routes.
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("route_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("virtual_host_count"), knownvalue.Int64Exact(10)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("virtual_host_count"), knownvalue.Int64Exact(7)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("routes"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("15010"), knownvalue.StringExact("15014"), knownvalue.StringExact("80"),
						knownvalue.StringExact("istio-ingressgateway.istio-system.svc.cluster.local:15021"),
					})),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("listeners"), knownvalue.ListPartial(map[int]knownvalue.Check{
						0:  knownvalue.StringExact("0.0.0.0_15010"),
						3:  knownvalue.StringExact("<istio-ingressgateway.istio-system VIP>_15012"),
						10: knownvalue.StringExact("virtualOutbound"),
					})),
				},
			},
		},
	})
}

// The seed's istioctl listing came from an Istio whose charts set the zipkin
// tracer: its bootstrap adds a fifth static cluster, 19+5 = 24 rows and 13+5 = 18.
func TestProxyClustersDataSource_seedZipkinTracer(t *testing.T) {
	meshConfig := heredoc(`apiVersion: v1
kind: ConfigMap
metadata:
  name: istio
  namespace: istio-system
data:
  mesh: |-
    defaultConfig:
      tracing:
        zipkin:
          address: zipkin.istio-system:9411`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, []string{meshConfig}) + fmt.Sprintf(`
data "meshscope_proxy_clusters" "foo" {
  namespace = "foo"
  labels    = { app = "test-app" }
}

data "meshscope_proxy_clusters" "foo_scoped" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [file(%q)]
}
`, seedSidecarFile(t)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo", tfjsonpath.New("istioctl_count"), knownvalue.Int64Exact(24)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_scoped", tfjsonpath.New("istioctl_count"), knownvalue.Int64Exact(18)),
				},
			},
		},
	})
}

func TestProxyClustersDataSource_BadInputIsAnAttributeError(t *testing.T) {
	sidecar := seedSidecarFile(t)
	cases := map[string]struct {
		config string
		err    string
	}{
		"namespace not in the inventory": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "fooo"
  labels    = { app = "test-app" }
}`,
			err: `(?s)Namespace Not Found.*"fooo".*Did\s+you\s+mean\s+"foo"`,
		},
		"a pod that runs no sidecar: namespace default is not injected": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "default"
  labels    = { app = "client" }
}`,
			err: `(?s)Proxy Runs No Sidecar.*namespace "default".*not-injected.*label\s+namespace\s+default\s+istio-injection=enabled`,
		},
		"a pod that opts out of injection": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  labels    = { app = "test-app", "sidecar.istio.io/inject" = "false" }
}`,
			err: `(?s)Proxy Runs No Sidecar.*opted-out`,
		},
		"invalid namespace name": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "Foo_Bar"
}`,
			err: `(?s)Invalid Namespace Name.*"Foo_Bar"`,
		},
		"invalid label key": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  labels    = { "-app" = "test-app" }
}`,
			err: `(?s)Invalid Label Key.*"-app"`,
		},
		"invalid label value": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  labels    = { app = "test app!" }
}`,
			err: `(?s)Invalid Label Value.*"test app!"`,
		},
		"sidecar YAML syntax error": {
			config: fmt.Sprintf(`
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  sidecars  = [file(%q), "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: x\n"]
}`, sidecar),
			err: `(?s)Invalid Manifest Document.*Document\s+0\s+of\s+sidecars\[1\]`,
		},
		"sidecar unsupported apiVersion": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  sidecars  = ["apiVersion: networking.istio.io/v2\nkind: Sidecar\nmetadata:\n  name: x\n  namespace: foo\n"]
}`,
			err: `(?s)unsupported\s+apiVersion\s+"networking.istio.io/v2"`,
		},
		"not a sidecar": {
			config: `
data "meshscope_proxy_clusters" "x" {
  namespace = "foo"
  sidecars  = ["apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n  namespace: foo\n"]
}`,
			err: `(?s)Invalid Manifest Document.*Document\s+0\s+of\s+sidecars\[0\]\s+\(Service\s+"x"\).*is\s+not\s+a\s+Sidecar`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps: []resource.TestStep{
					{
						Config:      seedProvider(t, nil) + tc.config,
						ExpectError: regexp.MustCompile(tc.err),
					},
				},
			})
		})
	}
}

// A Sidecar in `sidecars` replaces the inventory's Sidecar with the same
// namespace and name; baseline_count drops every Sidecar.
func TestProxyClustersDataSource_sidecarsReplace(t *testing.T) {
	wide := heredoc(`apiVersion: networking.istio.io/v1beta1
kind: Sidecar
metadata:
  name: test-app
  namespace: foo
spec:
  workloadSelector:
    labels:
      app: test-app
  egress:
    - hosts: ["istio-system/*", "kube-system/*"]`)
	barOnly := heredoc(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: only-system
  namespace: bar
spec:
  egress:
    - hosts: ["istio-system/*"]`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, []string{wide}) + fmt.Sprintf(`
data "meshscope_proxy_clusters" "inventory" {
  namespace = "foo"
  labels    = { app = "test-app" }
}

data "meshscope_proxy_clusters" "replaced" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [file(%[1]q)]
}

# One string with several documents, as file("sidecars.yaml") gives: the later
# Sidecar of the same name wins, and the other Sidecar (bar's) is added.
locals {
  wide     = %[2]s
  bar_only = %[3]s
  stream   = join("\n---\n", [local.wide, file(%[1]q), local.bar_only])
}

data "meshscope_proxy_clusters" "multi" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [local.stream]
}

data "meshscope_proxy_clusters" "multi_bar" {
  namespace = "bar"
  labels    = { app = "test-app" }
  sidecars  = [local.stream]
}
`, seedSidecarFile(t), wide, barOnly),
				ConfigStateChecks: []statecheck.StateCheck{
					// istio-system's 9 + kube-system's 3 + inbound 80 + 3 fixed.
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.inventory", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.inventory", tfjsonpath.New("sidecar"), knownvalue.StringExact("foo/test-app")),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.inventory", tfjsonpath.New("baseline_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.replaced", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.replaced", tfjsonpath.New("baseline_count"), knownvalue.Int64Exact(19)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.multi", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.multi", tfjsonpath.New("sidecar"), knownvalue.StringExact("foo/test-app")),
					// bar's own Sidecar: istio-system's 9 + inbound 80 (from its Service) + 3 fixed.
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.multi_bar", tfjsonpath.New("sidecar"), knownvalue.StringExact("bar/only-system")),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.multi_bar", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
				},
			},
		},
	})
}

// A Service without a selector: without an EndpointSlice in the manifests its endpoints are
// unknown, and the data source warns naming it; with one, they are the slice's (R57).
func TestProxyClustersDataSource_selectorlessService(t *testing.T) {
	service := heredoc(`apiVersion: v1
kind: Service
metadata: {name: ext-db, namespace: bar}
spec:
  ports: [{name: tcp-db, port: 5432}]`)
	slice := heredoc(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ext-db-1, namespace: bar, labels: {kubernetes.io/service-name: ext-db}}
addressType: IPv4
ports: [{name: tcp-db, port: 15432}]
endpoints:
- addresses: [10.50.0.1]
- addresses: [10.50.0.2]
  conditions: {ready: false, terminating: false}
- addresses: [10.50.0.3]
  conditions: {ready: false}`)
	const ds = `
data "meshscope_proxy_clusters" "foo" {
  namespace = "foo"
  labels    = { app = "test-app" }
}
`
	cluster := "outbound|5432||ext-db.bar.svc.cluster.local"
	// endpointsOf checks the data source's endpoints (or unhealthy_endpoints) of the cluster.
	endpointsOf := func(attr string, want ...string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			var got []string
			for k, v := range s.RootModule().Resources["data.meshscope_proxy_clusters.foo"].Primary.Attributes {
				if strings.HasPrefix(k, attr+".") && k != attr+".#" && strings.HasPrefix(v, cluster+"/") {
					got = append(got, v)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s of %s: got %q, want %q", attr, cluster, got, want)
			}
			return nil
		}
	}
	rec := &diagRecorder{}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, []string{service}) + ds,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectWarning{rec: rec, summary: "Endpoints Not In The Inventory", attr: "labels",
						detail: regexp.MustCompile(`^ext-db\.bar\.svc\.cluster\.local, kubernetes\.default\.svc\.cluster\.local: Kubernetes Services without a selector.*Add their EndpointSlices to manifests`)},
				}},
				Check: endpointsOf("endpoints"),
			},
			{
				Config:    seedProvider(t, []string{service, slice}) + ds,
				PreConfig: func() { rec.reset() },
				// The seed's kubernetes Service has no selector and no slice either.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectWarning{rec: rec, summary: "Endpoints Not In The Inventory", attr: "labels",
						detail: regexp.MustCompile(`^kubernetes\.default\.svc\.cluster\.local: `)},
				}},
				// 10.50.0.3 is not ready and does not say it is not terminating: istiod drops it.
				Check: resource.ComposeAggregateTestCheckFunc(
					endpointsOf("endpoints", cluster+"/10.50.0.1:15432", cluster+"/10.50.0.2:15432"),
					endpointsOf("unhealthy_endpoints", cluster+"/10.50.0.2:15432"),
				),
			},
		},
	})
}
