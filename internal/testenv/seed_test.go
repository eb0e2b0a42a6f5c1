package testenv_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

const seedManifests = "../../examples/seed/manifests"

// seedSidecar is the Sidecar the seed's meshscope_workload_scope "foo" compiles to.
const seedSidecar = `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: test-app
  namespace: foo
spec:
  workloadSelector:
    labels:
      app: test-app
  ingress:
    - port:
        number: 80
        protocol: HTTP
        name: http
      defaultEndpoint: 127.0.0.1:80
  egress:
    - hosts:
        - istio-system/*
`

// TestSeedLive applies the seed scenario to the test control plane, connects the xDS probe as
// foo's test-app pod and checks what istiod pushes: 19 CDS clusters with no Sidecar, 13 with the
// seed Sidecar (worked examples 1 and 2 of the cluster semantics). It checks a private istiod
// that sees only this test's namespaces (exact lists) and the shared istiod of `make testenv`.
func TestSeedLive(t *testing.T) {
	c := testenv.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	id := testenv.RandomSuffix(8)
	meshLabel := "mesh.testenv.meshscope.io/seed-" + id
	foo := c.UniqueNamespace(t, "foo", map[string]string{meshLabel: "true"})
	bar := c.UniqueNamespace(t, "bar", map[string]string{meshLabel: "true"})
	for _, ns := range []string{"istio-system", "kube-system", "default"} {
		c.LabelNamespace(t, ns, meshLabel, "true")
	}

	// The kubernetes Service exists in a real API server; the seed's copy of it is not applied.
	k, err := c.Kube.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the API server's own kubernetes Service: %v", err)
	}
	if len(k.Spec.Ports) != 1 || k.Spec.Ports[0].Port != 443 {
		t.Fatalf("default/kubernetes ports = %v, want one port 443", k.Spec.Ports)
	}
	pods := c.ApplySeed(t, seedManifests, foo, bar)
	fooPod, barPod := pods["foo"], pods["bar"]

	proxy := func(p *corev1.Pod) xdsprobe.Proxy {
		return xdsprobe.Proxy{
			Namespace: p.Namespace, Name: p.Name, IP: p.Status.PodIP, Labels: p.Labels,
			PodPorts: []xdsprobe.PodPort{{ContainerPort: 80, Protocol: "TCP"}},
		}
	}
	before := seedClustersBefore(foo, bar)
	after := seedClustersAfter()
	if len(before) != 19 || len(after) != 13 {
		t.Fatalf("expected lists: %d and %d clusters, want 19 and 13", len(before), len(after))
	}

	// A Service the private istiod must not see: its namespace lacks the mesh label.
	other := c.UniqueNamespace(t, "other", nil)
	c.ApplyYAML(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: noise\nspec:\n  ports:\n    - port: 9999\n",
		testenv.InNamespace(other))
	noise := "outbound|9999||noise." + other + ".svc.cluster.local"

	private := testenv.StartIstiod(t, c.Env, testenv.IstiodOptions{
		MeshConfig: fmt.Sprintf("discoverySelectors:\n  - matchLabels:\n      %s: \"true\"\n", meshLabel),
	})
	shared := c.Env.XDSAddr

	// No Sidecar: the default */* scope. The private istiod sees exactly the seed; the shared one
	// sees the seed plus whatever else is in the cluster.
	got := waitClusters(ctx, t, private.XDSAddr, proxy(fooPod), equal(before))
	assertClusters(t, "foo/test-app, no Sidecar, private istiod", got, before)
	got = waitClusters(ctx, t, private.XDSAddr, proxy(barPod), equal(before))
	assertClusters(t, "bar/test-app, no Sidecar, private istiod", got, before)
	want := append(slices.Clone(before), noise)
	got = waitClusters(ctx, t, shared, proxy(fooPod), superset(want))
	if missing := difference(want, got); len(missing) > 0 {
		t.Errorf("foo/test-app, no Sidecar, shared istiod: missing %v (got %d clusters)", missing, len(got))
	}

	// The seed Sidecar in foo: istio-system/* only, and the ingress listener's inbound cluster.
	c.ApplyYAML(t, seedSidecar, testenv.RenameNamespaces(map[string]string{"foo": foo}))
	got = waitClusters(ctx, t, private.XDSAddr, proxy(fooPod), equal(after))
	assertClusters(t, "foo/test-app, seed Sidecar, private istiod", got, after)
	got = waitClusters(ctx, t, shared, proxy(fooPod), equal(after))
	assertClusters(t, "foo/test-app, seed Sidecar, shared istiod", got, after)
	// The Sidecar is in foo, so bar's proxy keeps the default scope (worked example 3).
	got = waitClusters(ctx, t, private.XDSAddr, proxy(barPod), equal(before))
	assertClusters(t, "bar/test-app, seed Sidecar in foo, private istiod", got, before)
}

// TestProbeStreamsPushes keeps one ADS stream open and checks that istiod pushes a new cluster
// list to it when a Service is added to the proxy's scope.
func TestProbeStreamsPushes(t *testing.T) {
	c := testenv.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := c.UniqueNamespace(t, "probe", nil)
	pod := c.CreatePodRunning(t, ns, "client", map[string]string{"app": "client"}, testenv.UniqueIP())
	c.ApplyYAML(t, `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
spec:
  egress:
    - hosts: ["./*"]
`, testenv.InNamespace(ns))
	p := xdsprobe.Proxy{Namespace: ns, Name: pod.Name, IP: pod.Status.PodIP, Labels: pod.Labels}
	fixed := []string{"BlackHoleCluster", "InboundPassthroughCluster", "PassthroughCluster"}
	waitClusters(ctx, t, c.Env.XDSAddr, p, equal(fixed))

	s, err := xdsprobe.Dial(ctx, c.Env.XDSAddr, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	assertClusters(t, "first push", first, fixed)

	c.ApplyYAML(t, `
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
    - name: http
      port: 8080
`, testenv.InNamespace(ns))
	want := append([]string{fmt.Sprintf("outbound|8080||echo.%s.svc.cluster.local", ns)}, fixed...)
	slices.Sort(want)
	for {
		got, err := s.Next()
		if err != nil {
			t.Fatalf("waiting for a push with %v: %v", want, err)
		}
		if slices.Equal(got, want) {
			return
		}
	}
}

// seedClustersBefore is worked example 1: foo's proxy with no Sidecar.
func seedClustersBefore(foo, bar string) []string {
	out := []string{
		"outbound|80||bar." + bar + ".svc.cluster.local",
		"outbound|80||default-http-backend.kube-system.svc.cluster.local",
		"outbound|80||foo." + foo + ".svc.cluster.local",
		"outbound|53||kube-dns.kube-system.svc.cluster.local",
		"outbound|443||kubernetes.default.svc.cluster.local",
		"outbound|443||metrics-server.kube-system.svc.cluster.local",
		"inbound|80||",
	}
	out = append(out, seedClustersAfter()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// seedClustersAfter is worked example 2: foo's proxy with the seed Sidecar.
func seedClustersAfter() []string {
	var out []string
	for _, p := range []int{80, 443, 15012, 15021, 15443} {
		out = append(out, fmt.Sprintf("outbound|%d||istio-ingressgateway.istio-system.svc.cluster.local", p))
	}
	for _, p := range []int{443, 15010, 15012, 15014} {
		out = append(out, fmt.Sprintf("outbound|%d||istiod.istio-system.svc.cluster.local", p))
	}
	out = append(out, "inbound|80||", "BlackHoleCluster", "PassthroughCluster", "InboundPassthroughCluster")
	slices.Sort(out)
	return out
}

func waitClusters(ctx context.Context, t *testing.T, addr string, p xdsprobe.Proxy, ok func([]string) bool) []string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	start := time.Now()
	got, err := xdsprobe.WaitFor(wctx, addr, p, ok)
	if err != nil {
		t.Logf("%s as %s/%s: %v", addr, p.Namespace, p.Name, err)
	} else {
		t.Logf("%s as %s/%s: %d clusters after %s", addr, p.Namespace, p.Name, len(got), time.Since(start).Round(100*time.Millisecond))
	}
	return got
}

func equal(want []string) func([]string) bool {
	return func(got []string) bool { return slices.Equal(got, want) }
}

func superset(want []string) func([]string) bool {
	return func(got []string) bool { return len(difference(want, got)) == 0 }
}

// difference returns the elements of a that are not in b.
func difference(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func assertClusters(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: got %d clusters, want %d\n  missing: %s\n  unexpected: %s", what, len(got), len(want),
		strings.Join(difference(want, got), " "), strings.Join(difference(got, want), " "))
}
