package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pilot/test/xds"
)

// BenchmarkIstioClusters runs Istio's own CDS generator on the meshes that
// `make bench` writes (internal/bench in the main module, which this module
// cannot import): the files of $MESHSCOPE_BENCH_DIR are
//
//	mesh-<n>.yaml                the inventory
//	sidecars-<n>-<policy>.yaml   the Sidecars of a policy (none for policy "none")
//	proxies-<n>.json             [{"namespace": ..., "labels": {...}, "app": i}, ...]
//
// Sizes and policies come from $MESHSCOPE_BENCH_SIZES and
// $MESHSCOPE_BENCH_POLICIES. Setting up the fake istiod (parsing the YAML, the
// fake cluster, the first PushContext) is done once per mesh, outside the timed
// b.Loop, and reported as setup-s. Run it with -benchtime=Nx.
//
// One operation is one proxy of a sample of $MESHSCOPE_BENCH_SAMPLE proxies
// (default 20): every workload of evenly spaced apps, taken in turn. It is what
// istiod does when the proxy connects (the proxy initialisation, which computes
// its Sidecar's scope on first use) and ConfigGeneratorImpl.BuildClusters, with
// the XDS cache disabled as in the rest of this module. The sorted cluster
// names of every sampled proxy go to $MESHSCOPE_BENCH_OUT/istio-<n>-<policy>.json,
// for the main module to compare with its predictor.
func BenchmarkIstioClusters(b *testing.B) { eachBenchMesh(b, benchIstio) }

// eachBenchMesh runs bench on every size and policy of the environment, as a sub-benchmark.
func eachBenchMesh(b *testing.B, bench func(b *testing.B, dir, n, pol string)) {
	dir := os.Getenv("MESHSCOPE_BENCH_DIR")
	if dir == "" {
		b.Skip("MESHSCOPE_BENCH_DIR is not set: run `make bench`")
	}
	quietIstioLogs()
	for _, n := range benchEnvList(b, "MESHSCOPE_BENCH_SIZES", "1000") {
		for _, pol := range benchEnvList(b, "MESHSCOPE_BENCH_POLICIES", "none") {
			b.Run(fmt.Sprintf("services=%s/policy=%s", n, pol), func(b *testing.B) {
				bench(b, dir, n, pol)
			})
		}
	}
}

// BenchmarkIstioXDS is BenchmarkIstioClusters with the listeners and routes: one operation is
// one proxy of the sample, its initialisation and ConfigGeneratorImpl.BuildClusters,
// BuildListeners and BuildHTTPRoutes on the route names its listeners ask for, the xDS a
// sidecar subscribes to at connection besides EDS.
func BenchmarkIstioXDS(b *testing.B) { eachBenchMesh(b, benchIstioXDS) }

func benchIstioXDS(b *testing.B, dir, n, pol string) {
	st := newIstioBench(b, dir, n, pol)
	push := st.server.PushContext()
	var listeners, routes, vhosts, proxies int
	for i := 0; b.Loop(); i++ {
		j := i % len(st.sample)
		p := setupProxy(st.server, st.pods[j])
		req := &model.PushRequest{Push: push}
		_, _ = st.server.ConfigGen.BuildClusters(p, req)
		ls := st.server.ConfigGen.BuildListeners(p, push)
		rs, _ := st.server.ConfigGen.BuildHTTPRoutes(p, req, core.ExtractRoutesFromListeners(ls))
		if i < len(st.sample) {
			proxies++
			listeners += len(ls)
			routes += len(rs)
			for _, r := range rs {
				var rc route.RouteConfiguration
				if err := r.Resource.UnmarshalTo(&rc); err != nil {
					b.Fatal(err)
				}
				vhosts += len(rc.GetVirtualHosts())
			}
		}
	}
	b.ReportMetric(st.setup.Seconds(), "setup-s")
	b.ReportMetric(float64(listeners)/float64(proxies), "listeners/proxy")
	b.ReportMetric(float64(routes)/float64(proxies), "routes/proxy")
	b.ReportMetric(float64(vhosts)/float64(proxies), "vhosts/proxy")
	b.ReportMetric(float64(proxies), "proxies")
}

func benchEnvList(b *testing.B, name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		b.Fatalf("%s is empty", name)
	}
	return out
}

// istioBench is the fake istiod of one mesh and the sample of its proxies.
type istioBench struct {
	server *xds.FakeDiscoveryServer
	sample []Proxy
	pods   []*corev1.Pod
	parse  time.Duration
	setup  time.Duration
}

func benchIstio(b *testing.B, dir, n, pol string) {
	st := newIstioBench(b, dir, n, pol)
	push := st.server.PushContext()
	names := map[string][]string{}
	var durations []time.Duration
	for i := 0; b.Loop(); i++ {
		j := i % len(st.sample)
		t0 := time.Now()
		p := setupProxy(st.server, st.pods[j])
		raw, _ := st.server.ConfigGen.BuildClusters(p, &model.PushRequest{Push: push})
		durations = append(durations, time.Since(t0))
		if _, done := names[st.sample[j].Key()]; !done {
			list := make([]string, 0, len(raw))
			for _, r := range raw {
				list = append(list, r.Name)
			}
			slices.Sort(list)
			names[st.sample[j].Key()] = list
		}
	}
	slices.Sort(durations)
	clusters := 0
	for _, list := range names {
		clusters += len(list)
	}
	b.ReportMetric(st.setup.Seconds(), "setup-s")
	b.ReportMetric(st.parse.Seconds(), "parse-s")
	b.ReportMetric(float64(durations[(len(durations)-1)/2].Nanoseconds()), "p50-ns/proxy")
	b.ReportMetric(float64(clusters)/float64(len(names)), "clusters/proxy")
	b.ReportMetric(float64(len(names)), "proxies")
	if out := os.Getenv("MESHSCOPE_BENCH_OUT"); out != "" {
		js, err := json.MarshalIndent(names, "", " ")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("istio-%s-%s.json", n, pol)), js, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func newIstioBench(b *testing.B, dir, n, pol string) *istioBench {
	files := []string{filepath.Join(dir, "mesh-"+n+".yaml")}
	if pol != "none" {
		files = append(files, filepath.Join(dir, "sidecars-"+n+"-"+pol+".yaml"))
	}
	var yaml strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		yaml.Write(data)
		yaml.WriteString("\n---\n")
	}
	js, err := os.ReadFile(filepath.Join(dir, "proxies-"+n+".json"))
	if err != nil {
		b.Fatal(err)
	}
	var proxies []struct {
		Proxy
		App int `json:"app"`
	}
	if err := json.Unmarshal(js, &proxies); err != nil {
		b.Fatal(err)
	}
	k := 20
	if v := os.Getenv("MESHSCOPE_BENCH_SAMPLE"); v != "" {
		if k, err = strconv.Atoi(v); err != nil || k < 1 {
			b.Fatalf("MESHSCOPE_BENCH_SAMPLE=%q is not a positive number", v)
		}
	}
	k = min(k, len(proxies))
	st := &istioBench{}
	// Every workload of evenly spaced apps: the workloads of an app share a
	// Sidecar, whose scope the first one computes, on both sides.
	apps := proxies[len(proxies)-1].App + 1
	perApp := (len(proxies) + apps - 1) / apps
	picked := map[int]bool{}
	for i := 0; i < max(1, k/perApp); i++ {
		picked[i*apps/max(1, k/perApp)] = true
	}
	for _, px := range proxies {
		if picked[px.App] && len(st.sample) < k {
			st.sample = append(st.sample, px.Proxy)
		}
	}

	t0 := time.Now()
	inv, err := ParseInventory(yaml.String())
	if err != nil {
		b.Fatal(err)
	}
	st.parse = time.Since(t0)
	st.server = xds.NewFakeDiscoveryServer(quietFailer{b}, xds.FakeOptions{
		KubernetesObjects: inv.KubeObjects,
		Configs:           inv.Configs,
		MeshConfig:        inv.Mesh,
	})
	st.server.PushContext() // the first push is part of the setup
	st.setup = time.Since(t0)

	byKey := map[string]*corev1.Pod{}
	for _, p := range inv.Pods {
		byKey[p.Namespace+"/"+LabelString(p.Labels)] = p
	}
	for _, px := range st.sample {
		pod := byKey[px.Key()]
		if pod == nil {
			b.Fatalf("proxy %s has no pod", px.Key())
		}
		st.pods = append(st.pods, pod)
	}
	return st
}

// quietFailer is the benchmark without its logging: the fake istiod logs from
// its own goroutines, which may outlive the benchmark's last run.
type quietFailer struct{ *testing.B }

func (quietFailer) Log(...any)          {}
func (quietFailer) Logf(string, ...any) {}
