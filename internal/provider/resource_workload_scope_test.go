package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// seedFooSidecar is the manifest the compiler emits for the seed's foo scope.
var seedFooSidecar = fixture.SidecarFoo

const seedScopes = `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}

resource "meshscope_workload_scope" "bar" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies = [{
    service = "foo.foo"
    ports   = [80]
  }]
  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}
`

func TestWorkloadScopeResource_SeedPlansThirteenClustersForFoo(t *testing.T) {
	config := seedProvider(t, nil) + seedScopes + `
data "meshscope_proxy_clusters" "foo_after" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [meshscope_workload_scope.foo.manifest, meshscope_workload_scope.bar.manifest]
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionCreate),
						// Everything is known in the plan, before anything is applied.
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("id"), knownvalue.StringExact("foo/test-app")),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("name"), knownvalue.StringExact("test-app")),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("manifest"), knownvalue.StringExact(seedFooSidecar)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("egress_hosts"),
							knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("istio-system/*")})),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("egress_hosts"),
							knownvalue.ListExact([]knownvalue.Check{
								knownvalue.StringExact("foo/foo.foo.svc.cluster.local"),
								knownvalue.StringExact("istio-system/*"),
							})),
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(14)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("manifest"),
							knownvalue.StringRegexp(regexp.MustCompile(`(?s)- foo/foo\.foo\.svc\.cluster\.local\n.*port:\n\s+name: http-80\n\s+number: 80`))),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("manifest"), knownvalue.StringExact(seedFooSidecar)),
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("id"), knownvalue.StringExact("bar/test-app")),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_after", tfjsonpath.New("cluster_count"), knownvalue.Int64Exact(13)),
					statecheck.ExpectKnownValue("data.meshscope_proxy_clusters.foo_after", tfjsonpath.New("baseline_count"), knownvalue.Int64Exact(19)),
				},
			},
			{
				// A re-plan after apply is empty: the plan-time values are deterministic.
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				// A changed declaration is an in-place update whose new values are known in the plan.
				Config: seedProvider(t, nil) + `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar.bar" }]
  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("egress_hosts"),
							knownvalue.ListExact([]knownvalue.Check{
								knownvalue.StringExact("bar/bar.bar.svc.cluster.local"),
								knownvalue.StringExact("istio-system/*"),
							})),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(14)),
					},
				},
			},
			{
				// A new name is a new Sidecar object: the scope is replaced.
				Config: seedProvider(t, nil) + `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  name              = "foo-scope"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar.bar" }]
  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionReplace),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("id"), knownvalue.StringExact("foo/foo-scope")),
					},
				},
			},
		},
	})
}

// A namespace default scope (no selector) with an explicit name.
func TestWorkloadScopeResource_namespaceDefault(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil) + `
resource "meshscope_workload_scope" "bar" {
  namespace               = "bar"
  outbound_traffic_policy = "REGISTRY_ONLY"
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("id"), knownvalue.StringExact("bar/default")),
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("manifest"),
							knownvalue.StringRegexp(regexp.MustCompile(`(?s)outboundTrafficPolicy:\n\s+mode: REGISTRY_ONLY`))),
						// bar/test-app: istio-system's 9, bar's inbound 80 and the 3 fixed clusters.
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
					},
				},
			},
		},
	})
}

// With manifests that are unknown at plan time, the computed values stay unknown
// in the plan and are filled in at apply.
func TestWorkloadScopeResource_unknownInventory(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `
resource "terraform_data" "inventory" {
  input = [for f in fileset("` + seedDir(t) + `", "*.yaml") : file("` + seedDir(t) + `/${f}")]
}

provider "meshscope" {
  manifests = terraform_data.inventory.output
}

resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue("meshscope_workload_scope.foo", tfjsonpath.New("manifest")),
						plancheck.ExpectUnknownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("manifest"), knownvalue.StringExact(seedFooSidecar)),
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
				},
			},
			{
				// The inventory changes (a new Service in istio-system) and is unknown again
				// at plan time: the counts wait for apply, the derived name is kept.
				Config: `
resource "terraform_data" "inventory" {
  input = concat([for f in fileset("` + seedDir(t) + `", "*.yaml") : file("` + seedDir(t) + `/${f}")], [<<-EOT
    apiVersion: v1
    kind: Service
    metadata:
      name: zipkin
      namespace: istio-system
    spec:
      ports:
        - name: http-query
          port: 9411
    EOT
  ])
}

provider "meshscope" {
  manifests = terraform_data.inventory.output
}

resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("name"), knownvalue.StringExact("test-app")),
						plancheck.ExpectUnknownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters")),
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("manifest"), knownvalue.StringExact(seedFooSidecar)),
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(14)),
				},
			},
		},
	})
}

func TestWorkloadScopeResource_BadInputIsAnAttributeError(t *testing.T) {
	existingSidecar := heredoc(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: legacy
  namespace: foo
spec:
  workloadSelector:
    labels:
      app: test-app
  egress:
    - hosts: ["./*"]`)
	cases := map[string]struct {
		extra  []string
		config string
		err    string
	}{
		"unknown service with a near name": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "fooo.foo" }]
}`,
			err: `(?s)Unknown Service.*"fooo\.foo".*foo\.foo`,
		},
		"malformed host": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "http://foo.foo:80" }]
}`,
			err: `(?s)Malformed Dependency Host.*"http://foo\.foo:80"`,
		},
		"malformed host with a double dot": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "foo..foo" }]
}`,
			err: `(?s)Malformed Dependency Host.*empty\s+label`,
		},
		"namespace missing from the configuration": {
			config: `
resource "meshscope_workload_scope" "x" {
  workload_selector = { app = "test-app" }
}`,
			err: `(?s)Missing required argument.*"namespace" is required`,
		},
		"namespace missing from the inventory": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "fooo"
}`,
			err: `(?s)Unknown Namespace.*"fooo".*"foo"`,
		},
		"invalid label key": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { "app/name/x" = "test-app" }
}`,
			err: `(?s)Invalid Label Key.*"app/name/x"`,
		},
		"invalid label value": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "-test-app" }
}`,
			err: `(?s)Invalid Label Value.*"-test-app"`,
		},
		"two scopes select the same workload": {
			config: `
resource "meshscope_workload_scope" "a" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}

resource "meshscope_workload_scope" "b" {
  namespace         = "foo"
  name              = "other"
  workload_selector = { app = "test-app" }
}`,
			err: `(?s)Workload Selected By Two Scopes.*Deployment\s+test-app`,
		},
		"two scopes compile to the same name": {
			config: `
resource "meshscope_workload_scope" "a" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}

resource "meshscope_workload_scope" "b" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar.bar" }]
}`,
			err: `(?s)(Duplicate Scope Name|Workload Selected By Two Scopes).*foo/test-app`,
		},
		"scope and an existing Sidecar select the same workload": {
			extra: []string{existingSidecar},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}`,
			err: `(?s)Conflicting Sidecar Selection.*"legacy"`,
		},
		"YAML syntax error names the manifest and the document": {
			extra: []string{heredoc(`apiVersion: v1
kind: Namespace
metadata:
  name: extra
---
apiVersion: v1
kind: Service
metadata:
  name: [broken`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "foo"
}`,
			err: `(?s)Invalid Manifest Document.*Document\s+1\s+of\s+manifests\[6\]`,
		},
		"unsupported apiVersion": {
			extra: []string{heredoc(`apiVersion: apps/v1beta1
kind: Deployment
metadata:
  name: old
  namespace: foo`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "foo"
}`,
			err: `(?s)manifests\[6\].*unsupported\s+apiVersion\s+"apps/v1beta1"`,
		},
		"port the service does not expose": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "foo.foo", ports = [8080] }]
}`,
			err: `(?s)Port Not Exposed.*port\s+8080.*80/TCP`,
		},
		"invalid ingress protocol": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "bar"
  ingress   = [{ port = 80, protocol = "http" }]
}`,
			err: `(?s)ingress\[0\]\.protocol.*value must be one of`,
		},
		"invalid default endpoint": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "bar"
  ingress   = [{ port = 80, protocol = "HTTP", default_endpoint = "10.0.0.1:80" }]
}`,
			err: `(?s)Invalid Default Endpoint.*"10\.0\.0\.1:80"`,
		},
		"unsupported istio version": {
			extra:  nil,
			config: `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			err:    `(?s)Unsupported Istio Version.*"2\.0"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			provider := seedProvider(t, tc.extra)
			if name == "unsupported istio version" {
				provider = seedProvider(t, nil, `istio_version = "2.0"`)
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps: []resource.TestStep{
					{
						Config:      provider + tc.config,
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(tc.err),
					},
				},
			})
		})
	}
}
