package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// TestWorkloadsDataSource_Census: every workload of fixture.Census, as Istio names it, with
// whether it runs a sidecar, why, and its replicas; a namespace the inventory lacks is an error.
func TestWorkloadsDataSource_Census(t *testing.T) {
	row := func(ns, workload, proxy, reason, replicas string) knownvalue.Check {
		return knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"namespace": knownvalue.StringExact(ns), "workload": knownvalue.StringExact(workload),
			"proxy": knownvalue.StringExact(proxy), "reason": knownvalue.StringExact(reason), "replicas": knownvalue.StringExact(replicas),
		})
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, []string{heredoc(fixture.Census)}) + `
data "meshscope_workloads" "foo" {
  namespace = "foo"
}
data "meshscope_workloads" "all" {}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.meshscope_workloads.foo", tfjsonpath.New("workloads"), knownvalue.ListExact([]knownvalue.Check{
						row("foo", "Deployment/hostnet", "none", "host-network", "1"),
						row("foo", "Deployment/idle", "none", "no-replicas", "0"),
						row("foo", "CronJob/nightly", "sidecar", "pods-run-proxy", "1"),
						row("foo", "Deployment/optout", "none", "opted-out", "1"),
						row("foo", "Deployment/test-app", "sidecar", "injected", "1"),
						row("foo", "Deployment/web", "sidecar", "pods-run-proxy", "2"),
					})),
					statecheck.ExpectKnownValue("data.meshscope_workloads.all", tfjsonpath.New("sidecar_workload_count"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("data.meshscope_workloads.all", tfjsonpath.New("no_sidecar_workload_count"), knownvalue.Int64Exact(7)),
				},
			},
			{
				Config:      seedProvider(t, nil) + `data "meshscope_workloads" "x" { namespace = "fooo" }`,
				ExpectError: regexp.MustCompile(`(?s)Namespace Not Found.*"fooo".*Did\s+you\s+mean\s+"foo"`),
			},
		},
	})
}
