package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

const seedManifests = "../../examples/seed/manifests"

// seedSidecar is the Sidecar the seed's meshscope_workload_scope "foo" compiles to.
var seedSidecar = fixture.SidecarFoo

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
	}).ControlPlane()
	shared := c.Env.ControlPlane()
	fresh := func(cp xdsprobe.ControlPlane, p *corev1.Pod) xdsprobe.Probe {
		return xdsprobe.Fresh{ControlPlane: cp, Proxy: proxy(p)}
	}
	// foo's proxy also follows the private istiod's pushes on one stream, as Envoy would.
	watch, err := xdsprobe.Watch(ctx, private, proxy(fooPod))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

	// No Sidecar: the default */* scope. The private istiod sees exactly the seed; the shared one
	// sees the seed plus whatever else is in the cluster.
	testenv.EventuallyPushed(t, fresh(private, fooPod), testenv.Exactly(before), testenv.PushTimeout)
	testenv.EventuallyPushed(t, watch, testenv.Exactly(before), testenv.PushTimeout)
	testenv.EventuallyPushed(t, fresh(private, barPod), testenv.Exactly(before), testenv.PushTimeout)
	testenv.EventuallyPushed(t, fresh(shared, fooPod), testenv.Want{Include: append(slices.Clone(before), noise)}, testenv.PushTimeout)

	// The seed Sidecar in foo: istio-system/* only, and the ingress listener's inbound cluster.
	c.ApplyYAML(t, seedSidecar, testenv.RenameNamespaces(map[string]string{"foo": foo}))
	testenv.EventuallyPushed(t, fresh(private, fooPod), testenv.Exactly(after), testenv.PushTimeout)
	testenv.EventuallyPushed(t, watch, testenv.Exactly(after), testenv.PushTimeout)
	testenv.EventuallyPushed(t, fresh(shared, fooPod), testenv.Exactly(after), testenv.PushTimeout)
	// The Sidecar is in foo, so bar's proxy keeps the default scope (worked example 3). Its
	// list must hold once foo's has changed, so istiod has seen the Sidecar by now.
	testenv.EventuallyPushed(t, fresh(private, barPod), testenv.Exactly(before), testenv.PushTimeout)
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
	cp := c.Env.ControlPlane()
	// Wait until istiod applies the Sidecar to a new connection, then follow one stream.
	testenv.EventuallyPushed(t, xdsprobe.Fresh{ControlPlane: cp, Proxy: p}, testenv.Exactly(fixed), testenv.PushTimeout)
	watch, err := xdsprobe.Watch(ctx, cp, p)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	testenv.EventuallyPushed(t, watch, testenv.Exactly(fixed), testenv.PushTimeout)

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
	// The same stream, not a new connection: istiod pushed the change to it.
	testenv.EventuallyPushed(t, watch, testenv.Exactly(want), testenv.PushTimeout)
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

// TestProbeRefusesForeignIstiod: a probe whose xDS port is answered by another istiod than the
// one it was given (here a private istiod standing in for a developer's own control plane)
// fails with ErrForeignIstiod instead of reporting that istiod's clusters; so does a control
// plane whose HTTP port serves another cluster ID.
func TestProbeRefusesForeignIstiod(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "foreign", nil)
	pod := c.CreatePodRunning(t, ns, "client", map[string]string{"app": "client"}, testenv.UniqueIP())
	other := testenv.StartIstiod(t, c.Env, testenv.IstiodOptions{}).ControlPlane()
	ours := c.Env.ControlPlane()
	p := xdsprobe.Proxy{Namespace: ns, Name: pod.Name, IP: pod.Status.PodIP, Labels: pod.Labels}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.PushTimeout)
	defer cancel()

	// The other istiod answers on xDS, ours on HTTP: ours holds no connection of the probe.
	split := xdsprobe.ControlPlane{XDSAddr: other.XDSAddr, HTTPAddr: ours.HTTPAddr, ClusterID: ours.ClusterID}
	_, err := testenv.WaitPushed(ctx, xdsprobe.Fresh{ControlPlane: split, Proxy: p}, testenv.Want{})
	if !errors.Is(err, xdsprobe.ErrForeignIstiod) {
		t.Errorf("xDS answered by another istiod: err = %v, want ErrForeignIstiod", err)
	}
	// Both ports of the other istiod, but the ID of ours.
	impostor := xdsprobe.ControlPlane{XDSAddr: other.XDSAddr, HTTPAddr: other.HTTPAddr, ClusterID: ours.ClusterID}
	if err := impostor.Verify(ctx); !errors.Is(err, xdsprobe.ErrForeignIstiod) {
		t.Errorf("another istiod on both ports: err = %v, want ErrForeignIstiod", err)
	}
	// And each istiod is accepted as itself.
	testenv.EventuallyPushed(t, xdsprobe.Fresh{ControlPlane: other, Proxy: p}, testenv.Want{Include: []string{"BlackHoleCluster"}}, testenv.PushTimeout)
	testenv.EventuallyPushed(t, xdsprobe.Fresh{ControlPlane: ours, Proxy: p}, testenv.Want{Include: []string{"BlackHoleCluster"}}, testenv.PushTimeout)
}
