package provider

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

// randomLiveMesh writes a random mesh into two fresh namespaces: Services with
// random ports (UDP, named and numeric target ports, headless, exportTo,
// publishNotReadyAddresses), Running pods behind them, some not ready, completed or
// being deleted, and sometimes a Sidecar and a DestinationRule (with subsets,
// sometimes outlier detection's minHealthPercent). Kubernetes' own EndpointSlice
// controller writes the slices. It returns the pods whose proxies run (neither
// completed nor being deleted).
func randomLiveMesh(t *testing.T, c *testenv.Cluster, r *rand.Rand, label string) []*corev1.Pod {
	t.Helper()
	nss := []string{c.UniqueNamespace(t, "ra", map[string]string{label: "true"}), c.UniqueNamespace(t, "rb", map[string]string{label: "true"})}
	testenv.StartEndpointSlices(t, c.Env, nss...)
	portChoices := []int{80, 443, 8080, 9090, 15000 + r.Intn(100)}
	var pods []*corev1.Pod
	for ni, ns := range nss {
		var docs []string
		nsvc := 2 + r.Intn(3)
		for s := 0; s < nsvc; s++ {
			name := fmt.Sprintf("svc%d", s)
			var ports []string
			seen := map[int]bool{}
			for p := 0; p < 1+r.Intn(3); p++ {
				n := portChoices[r.Intn(len(portChoices))]
				if seen[n] {
					continue
				}
				seen[n] = true
				proto := "TCP"
				if r.Intn(8) == 0 {
					proto = "UDP"
				}
				ports = append(ports, fmt.Sprintf("{name: p%d-%s, port: %d, targetPort: %d, protocol: %s}", n, strings.ToLower(proto), n, n+r.Intn(2), proto))
			}
			ann := ""
			switch r.Intn(6) {
			case 0:
				ann = `annotations: {networking.istio.io/exportTo: "."}`
			case 1:
				ann = fmt.Sprintf(`annotations: {networking.istio.io/exportTo: "%s"}`, nss[1-ni])
			}
			clusterIP := ""
			if r.Intn(6) == 0 {
				clusterIP = "clusterIP: None, "
			}
			if r.Intn(5) == 0 {
				clusterIP += "publishNotReadyAddresses: true, "
			}
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s, %s}\nspec: {%sselector: {app: app%d}, ports: [%s]}\n",
				name, ann, clusterIP, r.Intn(3), strings.Join(ports, ", ")))
		}
		if r.Intn(2) == 0 {
			// A Service without selector and its EndpointSlice, written by hand (R57).
			headless := ""
			if r.Intn(3) == 0 {
				headless = "clusterIP: None, "
			}
			port := portChoices[r.Intn(len(portChoices))]
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {%sports: [{name: tcp-ext, port: %d}]}\n", headless, port))
			var eps []string
			for e := 0; e < 1+r.Intn(3); e++ {
				cond := ""
				switch r.Intn(4) {
				case 0:
					cond = ", conditions: {ready: false}"
				case 1:
					cond = ", conditions: {ready: false, serving: true, terminating: true}"
				}
				eps = append(eps, fmt.Sprintf("{addresses: [%s]%s}", testenv.UniqueIP(), cond))
			}
			docs = append(docs, fmt.Sprintf("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: ext-1, labels: {kubernetes.io/service-name: ext}}\n"+
				"addressType: IPv4\nports: [{name: tcp-ext, port: %d}]\nendpoints: [%s]\n", port+1, strings.Join(eps, ", ")))
		}
		if r.Intn(2) == 0 {
			hosts := []string{`"istio-system/*"`}
			switch r.Intn(3) {
			case 0:
				hosts = append(hosts, `"./*"`)
			case 1:
				hosts = append(hosts, fmt.Sprintf(`"%s/*"`, nss[1-ni]))
			default:
				hosts = append(hosts, fmt.Sprintf(`"%s/svc0.%s.svc.cluster.local"`, nss[1-ni], nss[1-ni]))
			}
			port := ""
			if r.Intn(3) == 0 {
				port = fmt.Sprintf("port: {number: %d, protocol: TCP, name: tcp}, ", portChoices[r.Intn(len(portChoices))])
			}
			docs = append(docs, fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: sc}\nspec:\n  workloadSelector: {labels: {app: app%d}}\n  egress: [{%shosts: [%s]}]\n",
				r.Intn(3), port, strings.Join(hosts, ", ")))
		}
		if r.Intn(2) == 0 {
			policy := ""
			if r.Intn(2) == 0 {
				policy = "trafficPolicy: {outlierDetection: {minHealthPercent: 50}}, "
			}
			docs = append(docs, fmt.Sprintf("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: dr}\nspec: {host: svc%d, %ssubsets: [{name: v1, labels: {version: v1}}]}\n", r.Intn(2), policy))
		}
		c.ApplyYAML(t, strings.Join(docs, "---\n"), testenv.InNamespace(ns))
		for p := 0; p < 1+r.Intn(3); p++ {
			var cports []corev1.ContainerPort
			for _, n := range portChoices {
				cports = append(cports, corev1.ContainerPort{Name: "c" + strconv.Itoa(n), ContainerPort: int32(n), Protocol: corev1.ProtocolTCP}) //nolint:gosec // small
			}
			lbls := map[string]string{"app": fmt.Sprintf("app%d", p)}
			if r.Intn(2) == 0 {
				lbls["version"] = "v1"
			}
			pod := c.CreatePodRunning(t, ns, fmt.Sprintf("pod%d", p), lbls, testenv.UniqueIP(), cports...)
			switch r.Intn(8) {
			case 0, 1: // running, not ready: an unhealthy endpoint
				pod = c.UpdatePodStatus(t, pod, func(st *corev1.PodStatus) {
					testenv.SetPodCondition(st, corev1.PodReady, corev1.ConditionFalse)
				})
			case 2: // completed, as a kubelet marks it (no longer ready): no endpoint, no proxy
				c.UpdatePodStatus(t, pod, func(st *corev1.PodStatus) {
					st.Phase = corev1.PodSucceeded
					testenv.SetPodCondition(st, corev1.PodReady, corev1.ConditionFalse)
					testenv.SetPodCondition(st, corev1.ContainersReady, corev1.ConditionFalse)
				})
				continue
			case 3: // being deleted (no kubelet finishes it): terminating, no proxy to probe
				if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			pods = append(pods, pod)
		}
	}
	return pods
}

// TestAccProxyClusters_randomLive: on 20 random meshes applied to a real API
// server, the data source's predicted clusters for every pod equal what istiod
// pushes to a sidecar probe connected as that pod.
func TestAccProxyClusters_randomLive(t *testing.T) {
	c := testenv.Connect(t)
	label := "mesh.meshscope.io/random-" + testenv.RandomSuffix(6)
	for _, ns := range []string{"istio-system", "kube-system", "default"} {
		c.LabelNamespace(t, ns, label, "true")
	}
	meshConfig := fmt.Sprintf("discoverySelectors:\n- matchLabels: {%q: \"true\"}\n", label)
	istiod := testenv.StartIstiod(t, c.Env, testenv.IstiodOptions{MeshConfig: meshConfig})
	// The provider sees the same mesh config as the private istiod.
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: |\n" +
		"    discoverySelectors:\n    - matchLabels: {" + strconv.Quote(label) + ": \"true\"}\n"

	for seed := 1; seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			pods := randomLiveMesh(t, c, rand.New(rand.NewSource(int64(seed))), label) //nolint:gosec // test data
			var cfg strings.Builder
			fmt.Fprintf(&cfg, "provider \"meshscope\" {\n  manifests = [%s]\n  kubernetes {\n    config_path = %q\n  }\n}\n", heredoc(configMap), c.Env.Kubeconfig)
			for i, p := range pods {
				// Every label of the pod: the data source predicts for a pod with exactly these.
				var lbls []string
				for k, v := range p.Labels {
					lbls = append(lbls, fmt.Sprintf("%q = %q", k, v))
				}
				slices.Sort(lbls)
				fmt.Fprintf(&cfg, "data \"meshscope_proxy_clusters\" \"p%d\" {\n  namespace = %q\n  labels = { %s }\n}\n", i, p.Namespace, strings.Join(lbls, ", "))
			}
			check := func(s *terraform.State) error {
				eps, unhealthy := 0, 0
				for i, p := range pods {
					proxy := xdsprobe.Proxy{Namespace: p.Namespace, Name: p.Name, IP: p.Status.PodIP, Labels: p.Labels}
					if _, err := pushedAsPredicted(s, istiod.ControlPlane(), fmt.Sprintf("p%d", i), proxy); err != nil {
						return fmt.Errorf("seed %d: %w", seed, err)
					}
					attrs := s.RootModule().Resources[fmt.Sprintf("data.meshscope_proxy_clusters.p%d", i)].Primary.Attributes
					n, _ := strconv.Atoi(attrs["endpoints.#"])
					u, _ := strconv.Atoi(attrs["unhealthy_endpoints.#"])
					eps, unhealthy = eps+n, unhealthy+u
				}
				t.Logf("seed %d: %d proxies, %d endpoints (%d unhealthy) as istiod pushes them", seed, len(pods), eps, unhealthy)
				return nil
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: cfg.String(), Check: check}},
			})
		})
	}
}

// pushedAsPredicted reads the clusters and listeners data source meshscope_proxy_clusters.<name>
// predicted from the state, and waits up to testenv.PushTimeout for istiod to push exactly those
// to the proxy (CDS, then LDS), on a new connection each look. It returns the predicted clusters.
// listAttr reads a list attribute of a resource's flat state.
func listAttr(attrs map[string]string, name string) ([]string, error) {
	n, err := strconv.Atoi(attrs[name+".#"])
	if err != nil {
		return nil, fmt.Errorf("%s.# = %q: %w", name, attrs[name+".#"], err)
	}
	out := make([]string, n)
	for k := range out {
		out[k] = attrs[fmt.Sprintf("%s.%d", name, k)]
	}
	return out, nil
}

func pushedAsPredicted(s *terraform.State, cp xdsprobe.ControlPlane, name string, proxy xdsprobe.Proxy) ([]string, error) {
	rs := s.RootModule().Resources["data.meshscope_proxy_clusters."+name]
	if rs == nil {
		return nil, fmt.Errorf("data source %s missing from state", name)
	}
	n, err := strconv.Atoi(rs.Primary.Attributes["clusters.#"])
	if err != nil {
		return nil, fmt.Errorf("data source %s: clusters.# = %q: %w", name, rs.Primary.Attributes["clusters.#"], err)
	}
	predicted := make([]string, n)
	for k := range predicted {
		predicted[k] = rs.Primary.Attributes[fmt.Sprintf("clusters.%d", k)]
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.PushTimeout)
	defer cancel()
	if _, err := testenv.WaitPushed(ctx, xdsprobe.Fresh{ControlPlane: cp, Proxy: proxy}, testenv.Exactly(predicted)); err != nil {
		return predicted, fmt.Errorf("istiod never pushed the %d clusters meshscope predicted: %w", len(predicted), err)
	}
	// The listeners: a live inventory carries every VIP and pod IP, so every name is exact.
	if u := rs.Primary.Attributes["listeners_address_unknown"]; u != "0" {
		return predicted, fmt.Errorf("data source %s: %s listeners without a known address, from a live inventory", name, u)
	}
	n, err = strconv.Atoi(rs.Primary.Attributes["listeners.#"])
	if err != nil {
		return predicted, fmt.Errorf("data source %s: listeners.# = %q: %w", name, rs.Primary.Attributes["listeners.#"], err)
	}
	listeners := make([]string, n)
	for k := range listeners {
		listeners[k] = rs.Primary.Attributes[fmt.Sprintf("listeners.%d", k)]
	}
	lds := xdsprobe.Fresh{ControlPlane: cp, Proxy: proxy, TypeURL: xdsprobe.ListenerType}
	if _, err := testenv.WaitPushed(ctx, lds, testenv.Exactly(listeners)); err != nil {
		return predicted, fmt.Errorf("istiod never pushed the %d listeners meshscope predicted: %w", len(listeners), err)
	}
	// The routes: asked for by name, as Envoy asks for those its listeners name; each virtual
	// host as "ROUTE/VHOST".
	routes, err := listAttr(rs.Primary.Attributes, "routes")
	if err != nil {
		return predicted, fmt.Errorf("data source %s: %w", name, err)
	}
	vhosts, err := listAttr(rs.Primary.Attributes, "virtual_hosts")
	if err != nil {
		return predicted, fmt.Errorf("data source %s: %w", name, err)
	}
	if len(routes) == 0 {
		// Nothing to ask for: an RDS request without names is a wildcard istiod does not answer.
		if len(vhosts) != 0 {
			return predicted, fmt.Errorf("data source %s: %d virtual hosts but no routes", name, len(vhosts))
		}
		return predicted, nil
	}
	rds := xdsprobe.Fresh{ControlPlane: cp, Proxy: proxy, TypeURL: xdsprobe.RouteType, Routes: routes}
	if _, err := testenv.WaitPushed(ctx, rds, testenv.Exactly(vhosts)); err != nil {
		return predicted, fmt.Errorf("istiod never pushed the %d virtual hosts meshscope predicted: %w", len(vhosts), err)
	}
	return predicted, pushedEndpoints(ctx, rs.Primary.Attributes, cp, name, proxy)
}

// pushedEndpoints waits for istiod to push, over EDS for the proxy's EDS clusters, exactly the
// endpoints the data source predicted, with the unhealthy ones pushed as UNHEALTHY.
func pushedEndpoints(ctx context.Context, attrs map[string]string, cp xdsprobe.ControlPlane, name string, proxy xdsprobe.Proxy) error {
	if u := attrs["endpoints_address_unknown"]; u != "0" {
		return fmt.Errorf("data source %s: %s endpoints without a known address, from a live inventory", name, u)
	}
	eps, err := listAttr(attrs, "endpoints")
	if err != nil {
		return fmt.Errorf("data source %s: %w", name, err)
	}
	unhealthy, err := listAttr(attrs, "unhealthy_endpoints")
	if err != nil {
		return fmt.Errorf("data source %s: %w", name, err)
	}
	want := make([]string, len(eps))
	for i, e := range eps {
		want[i] = e
		if slices.Contains(unhealthy, e) {
			want[i] += " UNHEALTHY"
		}
	}
	eds := xdsprobe.Fresh{ControlPlane: cp, Proxy: proxy, TypeURL: xdsprobe.EndpointType}
	if _, err := testenv.WaitPushed(ctx, eds, testenv.Exactly(want)); err != nil {
		return fmt.Errorf("istiod never pushed the %d endpoints meshscope predicted (%d unhealthy): %w", len(eps), len(unhealthy), err)
	}
	return nil
}
