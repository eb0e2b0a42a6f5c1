package gitops

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and the example's committed layout")

// The seed's compiled Sidecars (internal/fixture): foo/test-app calls only the control plane;
// bar/test-app calls foo.foo on port 80, so its Sidecar is port-level with a catch-all for the
// system hosts.
var seedFoo, seedBar = fixture.SidecarFoo, fixture.SidecarBar

const (
	// portOnly is port-level with no system hosts: no catch-all listener.
	portOnly = `apiVersion: networking.istio.io/v1beta1
kind: Sidecar
metadata:
  name: payments
  namespace: shop
spec:
  workloadSelector:
    labels: {app: payments}
  egress:
  - port: {number: 443, protocol: TLS, name: tls-443}
    hosts: ["./api.stripe.com"]
  outboundTrafficPolicy:
    mode: ALLOW_ANY
    egressProxy:
      host: egress.istio-system.svc.cluster.local
      port: {number: 443}
`
	// importsNothing is the compiler's "~/*" Sidecar, a namespace default.
	importsNothing = `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: shop
spec:
  egress:
  - hosts: ["~/*"]
`
	// fromCluster is `kubectl get -o yaml` output: server fields go, two Sidecars in one string.
	fromCluster = `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"networking.istio.io/v1"}'
    team: web
  creationTimestamp: "2025-01-01T00:00:00Z"
  generation: 3
  managedFields:
  - manager: kubectl
  name: frontend
  namespace: web
  resourceVersion: "4711"
  uid: 0b7a3c3e-1111-2222-3333-444455556666
spec:
  egress:
  - hosts: ["./*", "istio-system/*"]
status: {}
---
# a comment-only document is skipped
---
apiVersion: networking.istio.io/v1alpha3
kind: Sidecar
metadata:
  name: frontend.canary
  namespace: web
spec:
  egress:
  - hosts: ["./*"]
`
)

func seedSettings() Settings {
	return Settings{
		Environments: map[string]Environment{
			"dev": {
				Labels:      map[string]string{"environment": "dev"},
				Annotations: map[string]string{"example.com/owner": "platform"},
			},
			"prod": {
				ExtraSystemHosts:      []string{"kube-system/kube-dns.kube-system.svc.cluster.local", "istio-system/*"},
				OutboundTrafficPolicy: "REGISTRY_ONLY",
				Labels:                map[string]string{"environment": "prod"},
				Patches: []Patch{
					{
						Target: &Target{Group: "networking.istio.io", Kind: "Sidecar", Name: "test-app", Namespace: "bar"},
						Patch:  "- op: replace\n  path: /spec/ingress/0/defaultEndpoint\n  value: 127.0.0.1:8080\n",
					},
					{
						Patch: `{"apiVersion": "networking.istio.io/v1", "kind": "Sidecar",
 "metadata": {"name": "test-app", "namespace": "foo", "annotations": {"example.com/pager": "on"}}}`,
					},
				},
			},
		},
		ArgoCD: &ArgoCD{
			RepoURL:        "https://git.example.com/platform/gitops.git",
			TargetRevision: "main",
			PathPrefix:     "clusters/eu/mesh",
			SyncPolicy:     &SyncPolicy{Automated: true, Prune: true, SelfHeal: true},
		},
	}
}

var goldenCases = []struct {
	name string
	in   Input
}{
	{
		// The seed's scopes with a dev and a prod overlay and Argo CD Applications.
		name: "seed",
		in:   Input{Sidecars: []string{seedBar, seedFoo}, Settings: seedSettings()},
	},
	{
		// Extra hosts where there is no catch-all listener, or only "~/*"; a policy
		// override that keeps the egress proxy; one environment without changes.
		name: "listeners",
		in: Input{Sidecars: []string{portOnly, importsNothing}, Settings: Settings{Environments: map[string]Environment{
			"plain": {},
			"open":  {OutboundTrafficPolicy: "ALLOW_ANY"},
			"strict": {
				ExtraSystemHosts:      []string{"monitoring/*", "monitoring/*"},
				OutboundTrafficPolicy: "REGISTRY_ONLY",
			},
		}}},
	},
	{
		// Sidecars read back from a cluster, two in one string; manual Argo CD syncs, defaults.
		name: "from-cluster",
		in: Input{Sidecars: []string{fromCluster}, Settings: Settings{
			Environments: map[string]Environment{"staging": {
				Annotations:      map[string]string{"example.com/owner": "web"},
				ExtraSystemHosts: []string{"monitoring/*"},
			}},
			ArgoCD: &ArgoCD{RepoURL: "git@github.com:example/gitops.git"},
		}},
	},
}

// render prints a layout and the kustomize build of every overlay, for golden files.
func render(t *testing.T, l *Layout) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range l.Paths() {
		fmt.Fprintf(&b, "=== file %s\n%s", p, l.Files[p])
	}
	for _, env := range sortedKeys(l.Overlays) {
		out, err := BuildOverlay(l.Files, env)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", l.Overlays[env], err)
		}
		fmt.Fprintf(&b, "=== kustomize build %s\n%s", l.Overlays[env], out)
	}
	if _, ok := l.Files[ArgoCDDir+"/"+KustomizationFile]; ok {
		out, err := BuildDir(l.Files, ArgoCDDir)
		if err != nil {
			t.Fatalf("kustomize build argocd: %v", err)
		}
		fmt.Fprintf(&b, "=== kustomize build %s\n%s", ArgoCDDir, out)
	}
	return b.Bytes()
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			l, probs := Build(tc.in)
			if len(probs) > 0 {
				t.Fatalf("problems: %v", probs)
			}
			got := render(t, l)
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("layout differs from %s (go test ./internal/gitops -update rewrites it):\n%s", golden, got)
			}
		})
	}
}

// The layout is a pure function of the input: the same bytes every time, in
// whatever order the Sidecars and the environments come.
func TestBuildDeterministic(t *testing.T) {
	first, probs := Build(Input{Sidecars: []string{seedBar, seedFoo}, Settings: seedSettings()})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	for i := 0; i < 5; i++ {
		again, probs := Build(Input{Sidecars: []string{seedFoo, seedBar}, Settings: seedSettings()})
		if len(probs) > 0 {
			t.Fatal(probs)
		}
		if len(again.Files) != len(first.Files) {
			t.Fatalf("run %d: %d files, want %d", i, len(again.Files), len(first.Files))
		}
		for p, b := range first.Files {
			if !bytes.Equal(again.Files[p], b) {
				t.Fatalf("run %d: %s differs:\n%s\nwant:\n%s", i, p, again.Files[p], b)
			}
		}
	}
}

func TestBuildProblems(t *testing.T) {
	env := func(e Environment) Settings { return Settings{Environments: map[string]Environment{"prod": e}} }
	service := "apiVersion: v1\nkind: Service\nmetadata: {name: foo, namespace: foo}\n"
	cases := []struct {
		name     string
		in       Input
		loc      Location
		summary  string
		contains string
	}{
		{"broken YAML", Input{Sidecars: []string{seedFoo, "kind: Sidecar\nmetadata: {name: [\n"}, Settings: env(Environment{})},
			sidecarAt(1), "Invalid Sidecar Manifest", "sidecars[1]: document 0"},
		{"not a Sidecar", Input{Sidecars: []string{seedFoo + "---\n" + service}, Settings: env(Environment{})},
			sidecarAt(0), "Invalid Sidecar Manifest", `v1 Service is not a Sidecar`},
		{"no namespace", Input{Sidecars: []string{"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: x}\n"}, Settings: env(Environment{})},
			sidecarAt(0), "Invalid Sidecar Manifest", "metadata.namespace is not set"},
		{"unknown Sidecar field", Input{Sidecars: []string{"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: x, namespace: ns}\nspec: {egres: []}\n"}, Settings: env(Environment{})},
			sidecarAt(0), "Invalid Sidecar Manifest", "egres"},
		{"unsupported version", Input{Sidecars: []string{"apiVersion: networking.istio.io/v2\nkind: Sidecar\nmetadata: {name: x, namespace: ns}\n"}, Settings: env(Environment{})},
			sidecarAt(0), "Invalid Sidecar Manifest", `"networking.istio.io/v2"`},
		{"empty", Input{Sidecars: []string{"# nothing\n"}, Settings: env(Environment{})},
			sidecarAt(0), "Empty Sidecar Manifest", "sidecars[0]"},
		{"duplicate", Input{Sidecars: []string{seedFoo, seedBar, seedFoo}, Settings: env(Environment{})},
			sidecarAt(2), "Duplicate Sidecar", `"foo/test-app" in sidecars[2] is also in sidecars[0]`},
		{"environment name", Input{Sidecars: []string{seedFoo}, Settings: Settings{Environments: map[string]Environment{"Prod_1": {}}}},
			envAt("Prod_1", "", -1, ""), "Invalid Environment Name", `"Prod_1"`},
		{"egress host", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{ExtraSystemHosts: []string{"monitoring/*", "prometheus"}})},
			envAt("prod", FieldExtraSystemHosts, 1, ""), "Malformed Egress Host", `"prometheus"`},
		{"policy", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{OutboundTrafficPolicy: "DENY"})},
			envAt("prod", FieldOutboundTrafficPolicy, -1, ""), "Invalid Outbound Traffic Policy", `"DENY"`},
		{"label value", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Labels: map[string]string{"tier": "gold plated"}})},
			envAt("prod", FieldLabels, -1, "tier"), "Invalid Label Value", `"gold plated"`},
		{"annotation key", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Annotations: map[string]string{"bad key": "x"}})},
			envAt("prod", FieldAnnotations, -1, "bad key"), "Invalid Annotation Key", `"bad key"`},
		{"patch YAML", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{{Patch: "a: [\n"}}})},
			envAt("prod", FieldPatches, 0, ""), "Invalid Patch", "Patch 0"},
		{"JSON patch without target", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{{Patch: `[{"op": "remove", "path": "/spec/ingress"}]`}}})},
			envAt("prod", FieldPatches, 0, ""), "Invalid Patch", "needs a target"},
		{"JSON patch op", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{{Target: &Target{Kind: "Sidecar"}, Patch: "- op: append\n  path: /spec\n"}}})},
			envAt("prod", FieldPatches, 0, ""), "Invalid Patch", `op "append"`},
		{"SMP without identity", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{{Patch: "spec:\n  egress: []\n"}}})},
			envAt("prod", FieldPatches, 0, ""), "Invalid Patch", "needs apiVersion, kind and metadata.name"},
		{"JSON patch path missing", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{
			{Target: &Target{Kind: "Sidecar"}, Patch: "- op: add\n  path: /metadata/labels/x\n  value: y\n"},
			{Target: &Target{Kind: "Sidecar"}, Patch: "- op: replace\n  path: /spec/outboundTrafficPolicy/mode\n  value: ALLOW_ANY\n"},
		}})},
			envAt("prod", FieldPatches, 1, ""), "Invalid Patch", "kustomize cannot apply patch 1"},
		{"SMP of an object not in the base", Input{Sidecars: []string{seedFoo}, Settings: env(Environment{Patches: []Patch{
			{Patch: "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: ghost, namespace: foo}\n"},
		}})},
			envAt("prod", FieldPatches, 0, ""), "Invalid Patch", "ghost"},
		{"repo URL", Input{Sidecars: []string{seedFoo}, Settings: Settings{Environments: map[string]Environment{"dev": {}}, ArgoCD: &ArgoCD{RepoURL: "not a url"}}},
			argoAt(FieldRepoURL), "Invalid Repository URL", `"not a url"`},
		{"path prefix", Input{Sidecars: []string{seedFoo}, Settings: Settings{Environments: map[string]Environment{"dev": {}}, ArgoCD: &ArgoCD{RepoURL: "https://x/y.git", PathPrefix: "/abs/"}}},
			argoAt(FieldPathPrefix), "Invalid Path Prefix", `"/abs/"`},
		{"prune without automated", Input{Sidecars: []string{seedFoo}, Settings: Settings{Environments: map[string]Environment{"dev": {}}, ArgoCD: &ArgoCD{RepoURL: "https://x/y.git", SyncPolicy: &SyncPolicy{Prune: true}}}},
			argoAt(FieldSyncPolicy), "Sync Options Without Automated Sync", "automated = true"},
		{"application name", Input{Sidecars: []string{seedFoo}, Settings: Settings{Environments: map[string]Environment{"dev": {}}, ArgoCD: &ArgoCD{RepoURL: "https://x/y.git", NamePrefix: strings.Repeat("a", 62)}}},
			argoAt(FieldNamePrefix), "Invalid Application Name", "at most 63"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, probs := Build(tc.in)
			if l != nil || len(probs) == 0 {
				t.Fatalf("no problem reported")
			}
			for _, p := range probs {
				if p.Location == tc.loc && p.Summary == tc.summary && strings.Contains(p.Detail, tc.contains) {
					return
				}
			}
			t.Errorf("want %q at %+v containing %q; got:\n%v", tc.summary, tc.loc, tc.contains, probs)
		})
	}
}
