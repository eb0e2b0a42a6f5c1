package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// fooScope is the seed's foo/test-app scope with the given dependencies (HCL) and more arguments.
func fooScope(dependencies string, more ...string) string {
	s := `
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = ` + dependencies + `
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
`
	for _, m := range more {
		s += "  " + m + "\n"
	}
	return s + "}\n"
}

// everyNamespace declares every namespace of the seed: the proxy keeps what it has with no Sidecar.
const everyNamespace = `[
    { service = "bar/*" },
    { service = "default/*" },
    { service = "foo/*" },
    { service = "kube-system/*" },
  ]`

// stringsExact is a knownvalue list check of exact strings.
func stringsExact(values ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(values))
	for i, v := range values {
		checks[i] = knownvalue.StringExact(v)
	}
	return knownvalue.ListExact(checks)
}

// fooReview is the knownvalue check of a review of foo/test-app alone, which
// holds the seed's 19 clusters before and after afterwards, gains no host and
// loses removedN hosts, of which removed are listed. Its listeners go from the
// seed's 14 to 11 under the system hosts alone, as the conformance module's
// TestListenersSeed pins Istio's, and stay at 14 when every host stays; its 4 route
// configurations keep 10 virtual hosts, 7 under the system hosts (the data source's seed test).
func fooReview(after int64, removed, risks knownvalue.Check, removedN int64) knownvalue.Check {
	listenersAfter, vhostsAfter := int64(14), int64(10)
	if after == 13 {
		listenersAfter, vhostsAfter = 11, 7
	}
	return knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
		"workload":             knownvalue.StringExact("foo/Deployment/test-app"),
		"proxies":              knownvalue.StringExact("1"),
		"before":               knownvalue.Int64Exact(19),
		"after":                knownvalue.Int64Exact(after),
		"listeners_before":     knownvalue.Int64Exact(14),
		"listeners_after":      knownvalue.Int64Exact(listenersAfter),
		"routes_before":        knownvalue.Int64Exact(4),
		"routes_after":         knownvalue.Int64Exact(4),
		"virtual_hosts_before": knownvalue.Int64Exact(10),
		"virtual_hosts_after":  knownvalue.Int64Exact(vhostsAfter),
		"added_hosts":          knownvalue.ListExact([]knownvalue.Check{}),
		"removed_hosts":        removed,
		"added_host_count":     knownvalue.Int64Exact(0),
		"removed_host_count":   knownvalue.Int64Exact(removedN),
		"risks":                risks,
		// No observed traffic is configured: not checked, so null rather than empty.
		"observed_missing":        knownvalue.Null(),
		"observed_missing_count":  knownvalue.Null(),
		"unobserved_dependencies": knownvalue.Null(),
	})})
}

// The seed's foo scope, first over every namespace (19 clusters, as with no
// Sidecar), then tightened to the system hosts: the update plans 19 -> 13 and
// reviews the hosts foo/test-app loses, before anything is applied.
func TestWorkloadScopeResource_TighteningReviewsTheLostHosts(t *testing.T) {
	rec := &diagRecorder{}
	none := knownvalue.ListExact([]knownvalue.Check{})
	broad := seedProvider(t, nil) + fooScope(everyNamespace)
	tight := seedProvider(t, nil) + fooScope("[]")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: recordingFactories(rec),
		Steps: []resource.TestStep{
			{
				Config: broad,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionCreate),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(19)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
							fooReview(19, none, none, 0)),
						expectNoWarnings{rec: rec},
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(19)),
				},
				// After apply, terraform-plugin-testing plans again and fails on a non-empty plan.
			},
			{
				Config: tight,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("meshscope_workload_scope.foo", plancheck.ResourceActionUpdate),
						expectPriorValue{"meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(19)},
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
							fooReview(13, stringsExact(
								"bar.bar.svc.cluster.local",
								"default-http-backend.kube-system.svc.cluster.local",
								"foo.foo.svc.cluster.local",
								"kube-dns.kube-system.svc.cluster.local",
								"kubernetes.default.svc.cluster.local",
								"metrics-server.kube-system.svc.cluster.local",
							), none, 6)),
						expectNoWarnings{rec: rec},
					},
				},
			},
			{
				// The re-plan after apply is empty: the review is a pure function of config and inventory.
				Config: tight,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
	})
}

// review_host_limit bounds the hosts a review element lists; the counts stay
// whole, and a negative limit is a configuration error on the attribute.
func TestWorkloadScopeResource_reviewHostLimit(t *testing.T) {
	none := knownvalue.ListExact([]knownvalue.Check{})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      seedProvider(t, nil, "review_host_limit = -1") + fooScope("[]"),
				ExpectError: regexp.MustCompile(`(?s)review_host_limit.*at least 0, got: -1`),
			},
			{
				Config: seedProvider(t, nil, "review_host_limit = 2") + fooScope("[]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
							fooReview(13, stringsExact(
								"bar.bar.svc.cluster.local",
								"default-http-backend.kube-system.svc.cluster.local",
							), none, 6)),
					},
				},
			},
			{
				Config: seedProvider(t, nil, "review_host_limit = 0") + fooScope("[]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("review"),
							fooReview(13, none, none, 6)),
					},
				},
			},
		},
	})
}

// The review lists every selected workload, sorted: a namespace default reviews
// every workload of its namespace.
func TestWorkloadScopeResource_reviewNamespaceDefault(t *testing.T) {
	extra := heredoc(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: bar
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
        - name: api
          image: nginx`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, []string{extra}) + `
resource "meshscope_workload_scope" "bar" {
  namespace    = "bar"
  dependencies = [{ service = "foo.foo", ports = [80] }]
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("review"), knownvalue.ListExact([]knownvalue.Check{
							knownvalue.ObjectPartial(map[string]knownvalue.Check{
								"workload": knownvalue.StringExact("bar/Deployment/api"),
								// No inbound cluster: api's pods declare no port and no Service selects them.
								"before": knownvalue.Int64Exact(18),
								"after":  knownvalue.Int64Exact(13),
							}),
							knownvalue.ObjectPartial(map[string]knownvalue.Check{
								"workload": knownvalue.StringExact("bar/Deployment/test-app"),
								"before":   knownvalue.Int64Exact(19),
								"after":    knownvalue.Int64Exact(14),
							}),
						})),
						plancheck.ExpectKnownValue("meshscope_workload_scope.bar", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(14)),
					},
				},
			},
		},
	})
}

// A scope that selects no workload of the inventory has an empty review, and
// expected_clusters predicts a pod with the selector labels.
func TestWorkloadScopeResource_reviewNoWorkload(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil) + `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "not-deployed" }
}
`,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.x", tfjsonpath.New("review"), knownvalue.ListExact([]knownvalue.Check{})),
						// istio-system's 9 clusters and the 3 fixed ones: no Service selects the pod, so no inbound cluster.
						plancheck.ExpectKnownValue("meshscope_workload_scope.x", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(12)),
					},
				},
			},
		},
	})
}

// max_clusters: a budget the workload keeps passes; one it exceeds fails the
// plan, naming the workload and the count.
func TestWorkloadScopeResource_maxClusters(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil) + fooScope("[]", "max_clusters = 13"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("max_clusters"), knownvalue.Int64Exact(13)),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
					},
				},
			},
			{
				Config:      seedProvider(t, nil) + fooScope(everyNamespace, "max_clusters = 13"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Cluster Budget Exceeded.*"foo/Deployment/test-app"\s+would\s+hold\s+19\s+Envoy\s+clusters.*max_clusters\s+=\s+13`),
			},
		},
	})
}

// A budget that is unknown at plan time leaves the plan alone; the re-plan at
// apply, with the budget known, fails.
func TestWorkloadScopeResource_maxClustersUnknown(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil) + `
resource "terraform_data" "budget" {
  input = 12
}
` + fooScope("[]", "max_clusters = terraform_data.budget.output"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue("meshscope_workload_scope.foo", tfjsonpath.New("max_clusters")),
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(13)),
					},
				},
				ExpectError: regexp.MustCompile(`(?s)Cluster Budget Exceeded.*"foo/Deployment/test-app"\s+would\s+hold\s+13`),
			},
		},
	})
}
