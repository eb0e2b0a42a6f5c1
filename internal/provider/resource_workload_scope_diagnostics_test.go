package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// Plan-time errors of the review (issue 3). The errors of the foundation are in
// TestWorkloadScopeResource_BadInputIsAnAttributeError; both are checked through the real terraform plan.
func TestWorkloadScopeResource_planErrors(t *testing.T) {
	// An HTTP service on the sidecar's own status port, where istiod builds no outbound listener.
	statusPort := heredoc(`apiVersion: v1
kind: Service
metadata: {name: status, namespace: foo}
spec: {selector: {app: status}, ports: [{name: http-status, port: 15021}]}`)
	namespaceDefault := heredoc(`apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: legacy
  namespace: bar
spec:
  egress:
    - hosts: ["./*", "istio-system/*"]`)
	cases := map[string]struct {
		extra    []string
		settings []string
		config   string
		// err matches the output of terraform plan; summary and path name the
		// diagnostic the provider returned.
		err     string
		summary string
		path    string
	}{
		"dependency that resolves to nothing, with near names": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "kube-dnss.kube-system" }]
}`,
			err:     `(?s)Unknown Service.*"kube-dnss\.kube-system".*Did you mean\s+"kube-dns\.kube-system"`,
			summary: "Unknown Service",
			path:    "dependencies[*]",
		},
		"two selector-less scopes in one namespace": {
			config: `
resource "meshscope_workload_scope" "a" {
  namespace = "bar"
}

resource "meshscope_workload_scope" "b" {
  namespace    = "bar"
  name         = "bar-default"
  dependencies = [{ service = "foo.foo" }]
}`,
			err:     `(?s)Conflicting Namespace Default Sidecar.*both\s+have\s+no\s+workload_selector.*IST0111`,
			summary: "Conflicting Namespace Default Sidecar",
			path:    "workload_selector",
		},
		"two selector-less scopes with the derived name": {
			config: `
resource "meshscope_workload_scope" "a" {
  namespace = "bar"
}

resource "meshscope_workload_scope" "b" {
  namespace    = "bar"
  dependencies = [{ service = "foo.foo" }]
}`,
			err:     `(?s)Conflicting Namespace Default Sidecar.*"bar/default"`,
			summary: "Conflicting Namespace Default Sidecar",
			path:    "workload_selector",
		},
		"a selector-less scope and a selector-less Sidecar of the inventory": {
			extra: []string{namespaceDefault},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "bar"
}`,
			err:     `(?s)Conflicting Namespace Default Sidecar.*selector-less\s+Sidecar\s+"legacy"`,
			summary: "Conflicting Namespace Default Sidecar",
			path:    "workload_selector",
		},
		"exclusion in system_hosts below Istio 1.31": {
			settings: []string{`istio_version = "1.30"`, `system_hosts = ["istio-system/*", "~kube-system/*"]`},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			err:      `(?s)Exclusion Not Supported.*system_hosts = .*"~kube-system/\*"\s+uses\s+the\s+"~"\s+exclusion.*1\.31`,
			summary:  "Exclusion Not Supported",
			path:     "system_hosts[1]",
		},
		"name over 253 characters": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "foo"
  name      = "` + strings.Repeat("a", 254) + `"
}`,
			err:     `(?s)Invalid Object Name.*no\s+more\s+than\s+253\s+characters`,
			summary: "Invalid Object Name",
			path:    "name",
		},
		"workload_selector value over 63 characters": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "` + strings.Repeat("a", 64) + `" }
}`,
			err:     `(?s)Invalid Label Value.*of\s+label\s+"app".*no\s+more\s+than\s+63\s+bytes`,
			summary: "Invalid Label Value",
			path:    `workload_selector["app"]`,
		},
		"workload_selector with a null value": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = null }
}`,
			err:     `(?s)Null Label Value.*The\s+label\s+"app"\s+is\s+null`,
			summary: "Null Label Value",
			path:    `workload_selector["app"]`,
		},
		"istio_version with a v": {
			settings: []string{`istio_version = "v1.31"`},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			err:      `(?s)Unsupported Istio Version.*without\s+the\s+"v":\s+"1\.31"`,
			summary:  "Unsupported Istio Version",
			path:     "istio_version",
		},
		"istio_version 2.0": {
			settings: []string{`istio_version = "2.0"`},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			err:      `(?s)Unsupported Istio Version.*"2\.0"\s+is\s+not\s+modelled:\s+meshscope\s+models\s+Istio\s+1\.8\s+to\s+1\.31`,
			summary:  "Unsupported Istio Version",
			path:     "istio_version",
		},
		"workload_selector key over 63 characters": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { "` + strings.Repeat("k", 64) + `" = "test-app" }
}`,
			err:     `(?s)Invalid Label Key.*no\s+more\s+than\s+63\s+bytes`,
			summary: "Invalid Label Key",
			path:    `workload_selector["kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"]`,
		},
		"namespace over 63 characters": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "` + strings.Repeat("n", 64) + `"
}`,
			err:     `(?s)namespace.*no\s+more\s+than\s+63\s+characters`,
			summary: "Invalid Namespace Name",
			path:    "namespace",
		},
		// The trace (R62): each declared call is followed through the listeners and routes of the
		// scope's Sidecar, and a call that does not reach its service is refused on its dependency,
		// naming the step and the fix.
		"a declared call another ServiceEntry's filter chain takes": {
			extra: []string{heredoc(strings.TrimSuffix(fixture.SharedTCPPort, "\n"))},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "cache-a.example.com" }, { service = "cache-b.example.com" }]
}`,
			// Both share 0.0.0.0_6379, whose first filter chain matches every connection (R58).
			err:     `(?s)Declared Call Not Reached.*to\s+cache-b\.example\.com\s+port\s+6379.*filter\s+chain\s+step.*listener\s+0\.0\.0\.0_6379\s+sends\s+TCP\s+to\s+cache-a\.example\.com.*give\s+the\s+ServiceEntries\s+addresses`,
			summary: "Declared Call Not Reached",
			path:    "dependencies[*]",
		},
		"a declared call no listener takes goes to PassthroughCluster": {
			extra: []string{statusPort},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "status.foo", ports = [15021] }]
}`,
			// An HTTP port on the sidecar's own status port gets no outbound listener (R52).
			err:     `(?s)Declared Call Not Reached.*to\s+status\.foo\.svc\.cluster\.local\s+port\s+15021.*listener\s+step,\s+no\s+listener\s+takes\s+port\s+15021;\s+the\s+call\s+goes\s+to\s+PassthroughCluster.*serve\s+the\s+service\s+on\s+another\s+port`,
			summary: "Declared Call Not Reached",
			path:    "dependencies[*]",
		},
		"a declared call no listener takes goes to BlackHoleCluster under REGISTRY_ONLY": {
			extra: []string{statusPort},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace               = "bar"
  workload_selector       = { app = "test-app" }
  outbound_traffic_policy = "REGISTRY_ONLY"
  dependencies            = [{ service = "status.foo", ports = [15021] }]
}`,
			err:     `(?s)Declared Call Not Reached.*no\s+listener\s+takes\s+port\s+15021;\s+the\s+call\s+goes\s+to\s+BlackHoleCluster`,
			summary: "Declared Call Not Reached",
			path:    "dependencies[*]",
		},
		"a declared HTTP call whose port listener is TCP": {
			extra: []string{heredoc(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: legacy, namespace: foo}
spec: {hosts: [legacy.example.com], ports: [{number: 80, name: tcp-legacy, protocol: TCP}], resolution: DNS, location: MESH_EXTERNAL}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "foo.foo", ports = [80] }, { service = "legacy.example.com", ports = [80] }]
}`,
			// One port listener per port: meshscope makes it TCP, and foo.foo's HTTP routes go.
			err:     `(?s)Declared Call Not Reached.*to\s+foo\.foo\.svc\.cluster\.local\s+port\s+80.*http\s+routes\s+step.*no\s+HTTP\s+route\s+for\s+port\s+80.*Make\s+port\s+80\s+HTTP`,
			summary: "Declared Call Not Reached",
			path:    "dependencies[*]",
		},
		"a declared call whose short name another host's virtual host takes": {
			extra: []string{heredoc(`apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: foo-foo, namespace: bar}
spec: {hosts: [foo.foo], ports: [{number: 80, name: http, protocol: HTTP}], resolution: DNS, location: MESH_EXTERNAL}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "foo.foo", ports = [80] }, { service = "bar/*" }]
}`,
			// bar's ServiceEntry host foo.foo is also the name bar's pods call foo.foo.svc.cluster.local by.
			err:     `(?s)Declared Call Not Reached.*to\s+foo\.foo\.svc\.cluster\.local\s+port\s+80.*virtual\s+host\s+step.*the\s+name\s+foo\.foo.*Call\s+the\s+service\s+by\s+its\s+FQDN`,
			summary: "Declared Call Not Reached",
			path:    "dependencies[*]",
		},
		"max_clusters exceeded": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "foo.foo", ports = [80] }]
  max_clusters      = 10
}`,
			err:     `(?s)Cluster Budget Exceeded.*max_clusters\s+=\s+10\n.*"bar/Deployment/test-app"\s+would\s+hold\s+14\s+Envoy\s+clusters\s+under\s+this\s+scope\s+\(19\s+today\)`,
			summary: "Cluster Budget Exceeded",
			path:    "max_clusters",
		},
		"max_clusters exceeded by a pod no inventory workload has yet": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "not-deployed" }
  dependencies      = [{ service = "kube-system/*" }]
  max_clusters      = 10
}`,
			err:     `(?s)Cluster Budget Exceeded.*A\s+pod\s+labelled\s+app=not-deployed\s+in\s+namespace\s+"bar"\s+would\s+hold\s+15`,
			summary: "Cluster Budget Exceeded",
			path:    "max_clusters",
		},
		"a selector that selects a gateway": {
			extra: []string{heredoc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: edge, namespace: foo}
spec:
  selector: {matchLabels: {app: edge}}
  template:
    metadata:
      labels: {app: edge}
      annotations: {inject.istio.io/templates: gateway}
    spec: {containers: [{name: istio-proxy, image: auto}]}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "edge" }
}`,
			err:     `(?s)Scope Selects A Gateway.*"foo/Deployment/edge".*gateway`,
			summary: "Scope Selects A Gateway",
			path:    "workload_selector",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &diagRecorder{}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: recordingFactories(rec),
				Steps: []resource.TestStep{
					{
						Config:      seedProvider(t, tc.extra, tc.settings...) + tc.config,
						PlanOnly:    true,
						ExpectError: regexp.MustCompile(tc.err),
					},
				},
			})
			if !rec.hasError(tc.summary, tc.path) {
				t.Errorf("no error %q on %s; the provider returned:\n%s", tc.summary, tc.path, formatDiags(rec.errors()))
			}
		})
	}
}

// Plan-time warnings, each on the attribute at fault (System Hosts Missing on the
// scope as a whole). The plan succeeds; the recording provider server sees the warning.
func TestWorkloadScopeResource_planWarnings(t *testing.T) {
	// bar's VirtualService routes its own host to the kubernetes API service.
	routeToAPI := heredoc(`apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: to-api
  namespace: bar
spec:
  hosts: [bar]
  http:
    - route:
        - destination:
            host: kubernetes.default.svc.cluster.local`)
	externalName := heredoc(`apiVersion: v1
kind: Service
metadata:
  name: payments
  namespace: bar
spec:
  type: ExternalName
  externalName: api.payments.example.com`)
	cases := map[string]struct {
		extra    []string
		settings []string
		config   string
		summary  string
		attr     string
		detail   string
		checks   []plancheck.PlanCheck
	}{
		"scope drops a host that a VirtualService in scope routes to": {
			extra: []string{routeToAPI},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "bar", ports = [80] }]
}`,
			summary: "Scope Drops Routed Host",
			attr:    "dependencies",
			detail:  `"bar/Deployment/test-app" loses its clusters for "kubernetes\.default\.svc\.cluster\.local".*Declare "kubernetes\.default" as a dependency`,
			checks: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("meshscope_workload_scope.x", tfjsonpath.New("review").AtSliceIndex(0).AtMapKey("risks"),
					stringsExact("drops kubernetes.default.svc.cluster.local, a destination of a VirtualService still in scope")),
			},
		},
		"a scope in a namespace the inventory lacks": {
			extra: []string{heredoc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: edge}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: api}]}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "edge"
  workload_selector = { app = "api" }
}`,
			summary: "Injection Assumed",
			attr:    "namespace",
			detail:  `does not hold Namespace "edge".*the 1 workload\(s\) this scope selects are reviewed as sidecars`,
		},
		"an EnvoyFilter patches the clusters of a selected workload": {
			extra: []string{heredoc(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: drop-api, namespace: istio-system}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {cluster: {service: kubernetes.default.svc.cluster.local}}
    patch: {operation: REMOVE}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}`,
			summary: "EnvoyFilter Patches Not Modelled",
			attr:    "workload_selector",
			detail:  `patch the clusters of "foo/Deployment/test-app" in ways meshscope does not apply: istio-system/drop-api \(REMOVE: a REMOVE by service that can reach inbound clusters`,
		},
		"an EnvoyFilter patches the listeners of a selected workload": {
			extra: []string{heredoc(`apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: extra-listener, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  configPatches:
  - applyTo: LISTENER
    patch: {operation: ADD, value: {name: extra_8443}}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}`,
			summary: "EnvoyFilter Patches Not Modelled",
			attr:    "workload_selector",
			detail:  `patch the listeners of "foo/Deployment/test-app" in ways meshscope does not apply: foo/extra-listener \(ADD\)\. Its listeners_before and listeners_after`,
		},
		"a scope that selects a VM proxy": {
			extra: []string{heredoc(`apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: foo}
spec: {address: 10.1.0.1, labels: {app: test-app}}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
}`,
			summary: "VM Proxies Not Modelled",
			attr:    "workload_selector",
			detail:  `also applies to VM proxies, which meshscope does not predict or review: WorkloadEntry foo/vm-1`,
		},
		"a namespace default over workloads with and without a sidecar": {
			extra: []string{heredoc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: node-agent, namespace: foo}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec: {hostNetwork: true, containers: [{name: agent, image: agent}]}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace = "foo"
}`,
			summary: "Selected Workloads Without Sidecar",
			attr:    "workload_selector",
			detail:  `(?s)1 of the workloads this scope selects run no sidecar.*foo/Deployment/node-agent: its pods use the host network`,
		},
		"a selected workload whose proxy asks for HBONE": {
			extra: []string{heredoc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: hb, namespace: foo}
spec:
  selector: {matchLabels: {app: hb}}
  template:
    metadata:
      labels: {app: hb}
      annotations: {proxy.istio.io/config: '{"proxyMetadata": {"ISTIO_META_ENABLE_HBONE": "true"}}'}
    spec: {containers: [{name: hb, image: hb}]}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "hb" }
}`,
			summary: "Proxy Features Not Modelled",
			attr:    "workload_selector",
			detail:  `(?s)get clusters meshscope does not predict.*foo/Deployment/hb: R44: its proxy.istio.io/config sets ISTIO_META_ENABLE_HBONE`,
		},
		"a scope whose workloads run no sidecar": {
			extra: []string{heredoc(`apiVersion: apps/v1
kind: Deployment
metadata: {name: node-agent, namespace: foo}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec: {hostNetwork: true, containers: [{name: agent, image: agent}]}`)},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace         = "foo"
  workload_selector = { app = "node-agent" }
}`,
			summary: "Scope Selects No Sidecar",
			attr:    "workload_selector",
			detail:  `foo/Deployment/node-agent: its pods use the host network`,
		},
		"istio_version newer than the newest modelled": {
			settings: []string{`istio_version = "1.32"`},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			summary:  "Istio Version Newer Than Modelled",
			attr:     "istio_version",
			detail:   `clusters are predicted with 1\.31 rules`,
		},
		"a dependency without ports among dependencies with ports": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "foo"
  dependencies = [{ service = "bar.bar", ports = [80] }, { service = "metrics-server.kube-system" }]
}`,
			summary: "Dependency Widens Every Port",
			attr:    "dependencies",
			detail:  `"metrics-server\.kube-system" lists no ports, while "bar\.bar" list theirs`,
		},
		"system hosts missing": {
			settings: []string{"system_hosts = []"},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			summary:  "System Hosts Missing",
			attr:     "",
			detail:   `no service of the mesh root namespace "istio-system"`,
		},
		"root namespace not in scope": {
			// The system host names the root namespace, but no service of it.
			settings: []string{`system_hosts = ["istio-system/zipkin.istio-system.svc.cluster.local"]`},
			config:   `resource "meshscope_workload_scope" "x" { namespace = "foo" }`,
			summary:  "Root Namespace Not In Scope",
			attr:     "dependencies",
			detail:   `"foo/Deployment/test-app" keeps no cluster for a service of the mesh root namespace`,
		},
		"a declared port that no service of the namespace exposes": {
			config: `
resource "meshscope_workload_scope" "x" {
  namespace    = "bar"
  dependencies = [{ service = "kube-system/*", ports = [53, 8080] }]
}`,
			summary: "Port Not Exposed",
			attr:    "dependencies",
			detail:  `"kube-system/\*" declares port 8080, but no service in namespace "kube-system" exposes it`,
		},
		"REGISTRY_ONLY with an ExternalName dependency no ServiceEntry covers": {
			extra: []string{externalName},
			config: `
resource "meshscope_workload_scope" "x" {
  namespace               = "bar"
  outbound_traffic_policy = "REGISTRY_ONLY"
  dependencies            = [{ service = "payments" }]
}`,
			summary: "External Host Not In Registry",
			attr:    "dependencies",
			detail:  `"payments" is an ExternalName alias for "api\.payments\.example\.com".*no ServiceEntry covers`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &diagRecorder{}
			checks := append([]plancheck.PlanCheck{
				expectWarning{rec: rec, summary: tc.summary, attr: tc.attr, detail: regexp.MustCompile(tc.detail)},
			}, tc.checks...)
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: recordingFactories(rec),
				Steps: []resource.TestStep{
					{
						// The scope applies (warnings do not stop a plan), and the re-plan after apply is empty.
						Config:           seedProvider(t, tc.extra, tc.settings...) + tc.config,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: checks},
					},
				},
			})
		})
	}
}

// With a "~" exclusion and Istio 1.31, system_hosts exclude: kube-system is left out.
func TestProvider_systemHostsExclusion(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: seedProvider(t, nil, `system_hosts = ["*/*", "~kube-system/*"]`) + fooScope("[]"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						// 19 without a Sidecar, less kube-system's 3 services (kube-dns's two port 53 entries are one cluster).
						plancheck.ExpectKnownValue("meshscope_workload_scope.foo", tfjsonpath.New("expected_clusters"), knownvalue.Int64Exact(16)),
					},
				},
			},
		},
	})
}
