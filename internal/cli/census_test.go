package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// TestCensus_EverySurfaceLeavesOutWhatRunsNoSidecar: each workload of fixture.Census that runs
// no sidecar is refused by clusters with its reason and left out of diff, which counts it by
// reason; a Deployment listed with its ReplicaSet and Pods is one row with 2 proxies, and the
// Pod of a CronJob's Job is the CronJob's.
func TestCensus_EverySurfaceLeavesOutWhatRunsNoSidecar(t *testing.T) {
	mesh := fixture.Seed + "\n---\n" + fixture.Census
	var defaults strings.Builder
	for _, ns := range []string{"foo", "plain", "dis", "amb"} {
		defaults.WriteString("\n---\napiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: " + ns +
			"}\nspec: {egress: [{hosts: [\"./*\", \"istio-system/*\"]}]}\n")
	}
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": mesh, "head/mesh.yaml": mesh + defaults.String()})

	for _, tc := range []struct{ pod, want string }{
		{"plain/web", "(not-injected)"},
		{"dis/web", "(injection-disabled)"},
		{"amb/web", "(ambient)"},
		{"foo/optout", "(opted-out)"},
		{"foo/hostnet", "(host-network)"},
		{"foo/idle", "(no-replicas)"},
		{"istio-system/istio-ingressgateway", "(gateway)"},
	} {
		code, out, errs := run(t, "", "clusters", "-f", dir+"/base", "--pod", tc.pod, "-o", "names")
		if code != ExitError || out != "" || !strings.Contains(errs, "runs no sidecar") || !strings.Contains(errs, tc.want) {
			t.Errorf("clusters --pod %s: exit %d, stdout %q, stderr %q; want exit 1 naming %s", tc.pod, code, out, errs, tc.want)
		}
	}
	code, _, errs := run(t, "", "clusters", "-f", dir+"/base", "--namespace", "plain", "--labels", "app=web")
	if code != ExitError || !strings.Contains(errs, "label namespace plain istio-injection=enabled") {
		t.Errorf("clusters --namespace plain: exit %d, %q", code, errs)
	}
	for _, pod := range []string{"foo/web-5d9f7c8b4-x7k2p", "foo/web", "foo/nightly-29000000-abcde", "foo/nightly"} {
		if code, out, errs := run(t, "", "clusters", "-f", dir+"/base", "--pod", pod, "-o", "names"); code != ExitOK || !strings.Contains(out, "PassthroughCluster") {
			t.Errorf("clusters --pod %s: exit %d, %q", pod, code, errs)
		}
	}

	code, out, errs := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow  `json:"changes"`
		Census  CensusJSON `json:"census"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range doc.Changes {
		got[r.Namespace+"/"+r.Workload] = r.Proxies.String()
	}
	want := map[string]string{"foo/Deployment/test-app": "1", "foo/Deployment/web": "2", "foo/CronJob/nightly": "1"}
	if len(got) != len(want) {
		t.Errorf("changed workloads %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q proxies, want %q (rows %v)", k, got[k], v, got)
		}
	}
	reasons := map[string]int{"not-injected": 1, "injection-disabled": 1, "ambient": 1, "opted-out": 1, "host-network": 1, "no-replicas": 1, "gateway": 1}
	if doc.Census.NoSidecarCount != 7 || len(doc.Census.NoSidecar) != 7 || len(doc.Census.NoSidecarReasons) != len(reasons) {
		t.Errorf("census %+v", doc.Census)
	}
	for r, n := range reasons {
		if doc.Census.NoSidecarReasons[r] != n {
			t.Errorf("census: %d %s, want %d (%v)", doc.Census.NoSidecarReasons[r], r, n, doc.Census.NoSidecarReasons)
		}
	}
	if doc.Census.SidecarProxies != (Proxies{Min: 5, Max: 5}) {
		t.Errorf("sidecar proxies %+v, want 5 (test-app in foo and bar, web's 2 Pods, nightly's Pod)", doc.Census.SidecarProxies)
	}

	_, md, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "markdown")
	for _, s := range []string{
		"3 workloads change (4 proxies):",
		"7 workloads run no sidecar (", "ambient: 1", "not injected: 1", "gateway: 1",
		"| foo | Deployment/web | 2 |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

// TestClusters_NamesEnvoyFilterPatches: an EnvoyFilter's cluster ADD is predicted, and a patch
// meshscope does not apply (a MERGE) is named by clusters and by diff, never left out in
// silence (R39).
func TestClusters_NamesEnvoyFilterPatches(t *testing.T) {
	const ef = `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: extra, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  configPatches:
  - applyTo: CLUSTER
    match: {context: SIDECAR_OUTBOUND}
    patch: {operation: ADD, value: {name: extra-cluster, type: STRICT_DNS, connect_timeout: 1s}}
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
`
	mesh := fixture.Seed + "\n---\n" + ef
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": mesh, "head/mesh.yaml": mesh + "\n---\n" + fixture.SidecarFoo})
	code, out, errs := run(t, "", "clusters", "-f", dir+"/base", "--pod", "foo/test-app", "-o", "names")
	if code != ExitOK || !strings.Contains(out, "extra-cluster\n") || !strings.Contains(errs, "warning: EnvoyFilters patch this proxy's clusters") ||
		!strings.Contains(errs, "foo/extra (MERGE:") || strings.Contains(errs, "ADD") {
		t.Errorf("clusters: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, out, errs := run(t, "", "clusters", "-f", dir+"/base", "--pod", "bar/test-app", "-o", "names"); errs != "" || strings.Contains(out, "extra-cluster") {
		t.Errorf("bar/test-app is not patched, but: %q %q", out, errs)
	}
	code, out, errs = run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || len(doc.Changes[0].EnvoyFilters) != 1 || !strings.HasPrefix(doc.Changes[0].EnvoyFilters[0], "foo/extra (MERGE:") {
		t.Errorf("changes %+v", doc.Changes)
	}
	if _, md, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "markdown"); !strings.Contains(md, "EnvoyFilters patch the clusters of 1 of these workloads") {
		t.Errorf("markdown does not name the EnvoyFilter:\n%s", md)
	}
}

// TestDiff_NamesListenerEnvoyFilters: an EnvoyFilter that adds a listener to a changed workload
// is named with its row and in the summary: the listener counts leave it out (R56).
func TestDiff_NamesListenerEnvoyFilters(t *testing.T) {
	ef := `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: extra-listener, namespace: foo}
spec:
  configPatches:
  - applyTo: LISTENER
    patch: {operation: ADD, value: {name: extra_8443}}
`
	mesh := fixture.Seed + "\n---\n" + ef
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": mesh, "head/mesh.yaml": mesh + "\n---\n" + fixture.SidecarFoo})
	code, out, errs := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || !slices.Equal(doc.Changes[0].ListenerEnvoyFilters, []string{"foo/extra-listener (ADD)"}) {
		t.Errorf("changes %+v", doc.Changes)
	}
	if _, table, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head"); !strings.Contains(table, "EnvoyFilters patch the listeners of 1 of these workloads") {
		t.Errorf("the table does not name the EnvoyFilter:\n%s", table)
	}
}

// TestDiff_WorkloadsThatStartOrStopRunningASidecar: a head tree that labels a namespace for
// injection gives its workloads proxies with every cluster (before 0); one that drops the label
// takes them away (after 0), as a risk.
func TestDiff_WorkloadsThatStartOrStopRunningASidecar(t *testing.T) {
	base := fixture.Seed + "\n---\n" + fixture.Census
	head := strings.Replace(base, "metadata: {name: plain}", "metadata: {name: plain, labels: {istio-injection: enabled}}", 1)
	head = strings.Replace(head, "  name: bar\n  labels:\n    istio-injection: enabled\n", "  name: bar\n", 1)
	if head == base || strings.Count(head, "istio-injection: enabled") != strings.Count(base, "istio-injection: enabled") {
		t.Fatal("the fixture changed: the head tree does not relabel plain and bar")
	}
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": base, "head/mesh.yaml": head})
	code, out, errs := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	rows := map[string]DiffRow{}
	for _, r := range doc.Changes {
		rows[r.Namespace+"/"+r.Workload] = r
	}
	starts, stops := rows["plain/Deployment/web"], rows["bar/Deployment/test-app"]
	if len(rows) != 2 || starts.Before != 0 || starts.After == 0 || !strings.HasPrefix(starts.Sidecar, "starts running a sidecar") ||
		stops.After != 0 || stops.Before == 0 || !strings.HasPrefix(stops.Sidecar, "stops running a sidecar: no injection webhook selects") ||
		len(stops.Risks) != 1 || stops.Risks[0].Kind != "sidecar_stops" {
		t.Errorf("rows %+v", rows)
	}
	if _, table, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head"); !strings.Contains(table, "Counted from or to no cluster: bar/Deployment/test-app stops running a sidecar") {
		t.Errorf("table:\n%s", table)
	}
}

// TestClusters_PredictsWithTheRevisionsRelease: a proxy of a revision whose istiod runs Istio
// 1.22 is predicted with 1.22's rules (InboundPassthroughClusterIpv4, R43), and says so; the
// default revision's with 1.31's; diff says which release each revision is predicted with.
func TestClusters_PredictsWithTheRevisionsRelease(t *testing.T) {
	const extra = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod-old, namespace: istio-system, labels: {app: istiod, istio.io/rev: old}}
spec:
  selector: {matchLabels: {app: istiod, istio.io/rev: old}}
  template: {metadata: {labels: {app: istiod, istio.io/rev: old}}, spec: {containers: [{name: discovery, image: "docker.io/istio/pilot:1.22.3"}]}}
---
apiVersion: v1
kind: Namespace
metadata: {name: legacy, labels: {istio.io/rev: old}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: legacy}
spec:
  selector: {matchLabels: {app: legacy}}
  template: {metadata: {labels: {app: legacy}}, spec: {containers: [{name: app, image: app}]}}
`
	dir := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Seed + "\n---\n" + extra})
	code, out, errs := run(t, "", "clusters", "-f", dir, "--pod", "legacy/app", "-o", "names")
	if code != ExitOK || !strings.Contains(out, "InboundPassthroughClusterIpv4\n") || !strings.Contains(errs, "note: predicted with Istio 1.22 rules") {
		t.Errorf("legacy/app: exit %d, %q, %q", code, out, errs)
	}
	code, out, errs = run(t, "", "clusters", "-f", dir, "--namespace", "legacy", "--labels", "app=legacy", "-o", "names")
	if code != ExitOK || !strings.Contains(out, "InboundPassthroughClusterIpv4\n") {
		t.Errorf("--namespace legacy: exit %d, %q, %q", code, out, errs)
	}
	code, out, errs = run(t, "", "clusters", "-f", dir, "--pod", "foo/test-app", "-o", "names")
	if code != ExitOK || !strings.Contains(out, "InboundPassthroughCluster\n") || errs != "" {
		t.Errorf("foo/test-app: exit %d, %q, %q", code, out, errs)
	}
	head := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Seed + "\n---\n" + extra + "\n---\n" + fixture.SidecarFoo})
	_, md, _ := run(t, "", "diff", "--base", dir, "--head", head, "-o", "markdown")
	if !strings.Contains(md, "istiod revision old runs Istio 1.22 (docker.io/istio/pilot:1.22.3): its proxies are predicted with 1.22 rules.") {
		t.Errorf("diff does not say which release: %s", md)
	}
}

// TestClusters_SaysWhenInjectionIsAssumed: a namespace the manifests lack is assumed injected,
// and clusters says so.
func TestClusters_SaysWhenInjectionIsAssumed(t *testing.T) {
	dir := fixture.Dir(t, map[string]string{"app.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: edge}
spec:
  selector: {matchLabels: {app: api}}
  template: {metadata: {labels: {app: api}}, spec: {containers: [{name: api, image: api}]}}
`})
	code, out, errs := run(t, "", "clusters", "-f", dir, "--pod", "edge/api", "-o", "names")
	if code != ExitOK || !strings.Contains(out, "PassthroughCluster") || !strings.Contains(errs, "note: namespace edge is not in the inventory") {
		t.Errorf("exit %d, %q, %q", code, out, errs)
	}
}

// TestClusters_WarnsWhatIsNotModelled: a workload whose proxy mounts a credential socket gets
// the sds-external cluster meshscope does not predict (R45), and clusters and diff say so.
func TestClusters_WarnsWhatIsNotModelled(t *testing.T) {
	sock := strings.ReplaceAll(fixture.Seed, "        - name: test-app\n          image: nginx\n", "        - name: test-app\n          image: nginx\n          volumeMounts: [{name: cred, mountPath: /var/run/secrets/credential-uds}]\n")
	if sock == fixture.Seed {
		t.Fatal("the seed's container is not where the test expects it")
	}
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": sock, "head/mesh.yaml": sock + "\n---\n" + fixture.SidecarFoo})
	_, _, errs := run(t, "", "clusters", "-f", dir+"/base", "--pod", "bar/test-app", "-o", "names")
	if !strings.Contains(errs, "warning: R45: its proxy mounts a credential socket") {
		t.Errorf("stderr %q", errs)
	}
	_, out, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || len(doc.Changes[0].NotModelled) != 1 || !strings.HasPrefix(doc.Changes[0].NotModelled[0], "R45:") {
		t.Errorf("changes %+v", doc.Changes)
	}
}

// TestDiff_NamesUnreachedCalls: a base Sidecar that imports one of two ServiceEntries without
// addresses on one TCP port reaches it; the head's imports both, and the first one's filter
// chain takes every call on the shared listener (R58, R62): the diff names the call the head
// breaks. Without a Sidecar in the base, which imports both too, the call is broken on both
// sides, and the diff names none.
func TestDiff_NamesUnreachedCalls(t *testing.T) {
	sidecar := func(hosts string) string {
		return `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: test-app, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  egress: [{hosts: [` + hosts + `, istio-system/*]}]
`
	}
	mesh := fixture.Seed + "\n---\n" + fixture.SharedTCPPort
	head := mesh + "\n---\n" + sidecar("foo/cache-a.example.com, foo/cache-b.example.com")
	dir := fixture.Dir(t, map[string]string{"base/mesh.yaml": mesh + "\n---\n" + sidecar("foo/cache-b.example.com"), "head/mesh.yaml": head,
		"unscoped/mesh.yaml": mesh})
	code, out, errs := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged {
		t.Fatalf("diff: exit %d: %s", code, errs)
	}
	var doc struct {
		Changes []DiffRow `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Changes) != 1 || len(doc.Changes[0].UnreachedCalls) != 1 ||
		!strings.HasPrefix(doc.Changes[0].UnreachedCalls[0], "cache-b.example.com:6379: at the filter chain step, listener 0.0.0.0_6379 sends TCP to cache-a.example.com") {
		t.Errorf("changes %+v", doc.Changes)
	}
	if _, table, _ := run(t, "", "diff", "--base", dir+"/base", "--head", dir+"/head"); !strings.Contains(table, "foo/Deployment/test-app to cache-b.example.com:6379: at the filter chain step, listener 0.0.0.0_6379 sends TCP to cache-a.example.com") {
		t.Errorf("the table does not name the unreached call:\n%s", table)
	}
	code, out, errs = run(t, "", "diff", "--base", dir+"/unscoped", "--head", dir+"/head", "-o", "json")
	if code != ExitChanged || strings.Contains(out, "unreached_calls") {
		t.Errorf("diff from no Sidecar: exit %d, a call broken on both sides named: %s %s", code, out, errs)
	}
}
