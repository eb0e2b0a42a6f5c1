package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

// The benchmarks read their meshes from $MESHSCOPE_BENCH_DIR (written by
// `make bench`), for the sizes in $MESHSCOPE_BENCH_SIZES and the policies in
// $MESHSCOPE_BENCH_POLICIES (comma-separated). Without a directory they generate
// the 100- and 1,000-service meshes into a temporary one.
const (
	envSizes    = "MESHSCOPE_BENCH_SIZES"
	envPolicies = "MESHSCOPE_BENCH_POLICIES"
)

func benchSizes(b *testing.B) []int {
	v := os.Getenv(envSizes)
	if v == "" {
		return []int{100, 1000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			b.Fatalf("%s=%q: %v", envSizes, v, err)
		}
		out = append(out, n)
	}
	return out
}

func benchPolicies() []Policy {
	v := os.Getenv(envPolicies)
	if v == "" {
		return Policies
	}
	var out []Policy
	for _, f := range strings.Split(v, ",") {
		out = append(out, Policy(strings.TrimSpace(f)))
	}
	return out
}

// generated holds the meshes generated for this run when $MESHSCOPE_BENCH_DIR is not set.
var generated string

// benchDir returns the directory holding the n-service mesh files.
func benchDir(b *testing.B, n int) string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	if _, err := os.Stat(MeshFile(generated, n)); err != nil {
		if _, err := WriteFiles(generated, Generate(DefaultSpec(n))); err != nil {
			b.Fatal(err)
		}
	}
	return generated
}

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "meshscope-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	generated = d
	code := m.Run()
	_ = os.RemoveAll(generated)
	os.Exit(code)
}

// loaded keeps the last inventory loaded, so that the runs of one benchmark
// share it and only one mesh is in memory at a time.
var loaded struct {
	key     string
	inv     *mesh.Inventory
	proxies []predict.Proxy
}

func load(b *testing.B, n int, p Policy) (*mesh.Inventory, []predict.Proxy) {
	key := fmt.Sprint(n, p)
	if loaded.key == key {
		return loaded.inv, loaded.proxies
	}
	loaded.inv, loaded.proxies, loaded.key = nil, nil, ""
	dir := benchDir(b, n)
	inv, err := Load(dir, n, p)
	if err != nil {
		b.Fatal(err)
	}
	pxs, err := ReadProxies(dir, n)
	if err != nil {
		b.Fatal(err)
	}
	// The first workload of every app, then the others: the second half finds
	// its Sidecar's scope already computed by the first.
	var first, rest []predict.Proxy
	seen := map[int]bool{}
	for _, px := range pxs {
		pp := predict.Proxy{Namespace: px.Namespace, Labels: px.Labels}
		if seen[px.App] {
			rest = append(rest, pp)
		} else {
			seen[px.App] = true
			first = append(first, pp)
		}
	}
	loaded.key, loaded.inv, loaded.proxies = key, inv, append(first, rest...)
	return inv, loaded.proxies
}

// BenchmarkLoad reads the mesh and meshscope's Sidecars from YAML.
func BenchmarkLoad(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			files := Files(benchDir(b, n), n, PolicyMeshscope)
			b.ReportAllocs()
			objects := 0
			for i := 0; i < b.N; i++ {
				inv := mesh.New()
				if err := inv.LoadPaths(files, nil); err != nil {
					b.Fatal(err)
				}
				objects = len(inv.Services) + len(inv.Workloads) + len(inv.Sidecars) + len(inv.Namespaces)
			}
			b.ReportMetric(float64(objects), "objects")
		})
	}
}

// eachMesh runs bench on every size and policy of the environment, as a sub-benchmark, with
// the mesh's inventory and its proxies.
func eachMesh(b *testing.B, bench func(b *testing.B, inv *mesh.Inventory, proxies []predict.Proxy)) {
	for _, n := range benchSizes(b) {
		for _, pol := range benchPolicies() {
			b.Run(fmt.Sprintf("services=%d/policy=%s", n, pol), func(b *testing.B) {
				inv, proxies := load(b, n, pol)
				bench(b, inv, proxies)
			})
		}
	}
}

// BenchmarkPredictAll indexes the inventory and predicts every proxy of the
// mesh, as `terraform plan` or the command line does for a whole mesh. One
// operation is the whole mesh; ns/proxy divides it by the number of proxies.
// first-ns/proxy is the mean over the first workload of each app, which
// computes its Sidecar's scope, second-ns/proxy over the other workloads, which
// find it computed.
func BenchmarkPredictAll(b *testing.B) {
	eachMesh(b, func(b *testing.B, inv *mesh.Inventory, proxies []predict.Proxy) {
		half := len(proxies) / 2
		var index, first, second time.Duration
		clusters := 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			p, err := predict.New(inv, predict.Options{})
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			clusters = 0
			for _, px := range proxies[:half] {
				clusters += len(p.Predict(px).Clusters)
			}
			t2 := time.Now()
			for _, px := range proxies[half:] {
				clusters += len(p.Predict(px).Clusters)
			}
			t3 := time.Now()
			index += t1.Sub(t0)
			first += t2.Sub(t1)
			second += t3.Sub(t2)
		}
		b.StopTimer()
		runs := float64(b.N)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/runs/float64(len(proxies)), "ns/proxy")
		b.ReportMetric(float64(index.Nanoseconds())/runs/1e6, "index-ms")
		b.ReportMetric(float64(first.Nanoseconds())/runs/float64(half), "first-ns/proxy")
		b.ReportMetric(float64(second.Nanoseconds())/runs/float64(len(proxies)-half), "second-ns/proxy")
		b.ReportMetric(float64(clusters)/float64(len(proxies)), "clusters/proxy")
		b.ReportMetric(float64(len(proxies)), "proxies")
	})
}

// BenchmarkPredictAllXDS is BenchmarkPredictAll with the rest of what a review counts of each
// proxy: its listeners (ListenerCount), route configurations and virtual hosts (RouteCount) and
// the endpoints of its EDS clusters (EndpointCount), besides its clusters.
func BenchmarkPredictAllXDS(b *testing.B) {
	eachMesh(b, func(b *testing.B, inv *mesh.Inventory, proxies []predict.Proxy) {
		var index time.Duration
		var clusters, listeners, routes, vhosts, endpoints int
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			p, err := predict.New(inv, predict.Options{})
			if err != nil {
				b.Fatal(err)
			}
			index += time.Since(t0)
			clusters, listeners, routes, vhosts, endpoints = 0, 0, 0, 0, 0
			for _, px := range proxies {
				res := p.Predict(px)
				clusters += len(res.Clusters)
				listeners += p.ListenerCount(px)
				r, v := p.RouteCount(px)
				routes, vhosts = routes+r, vhosts+v
				endpoints += p.EndpointCount(res)
			}
		}
		b.StopTimer()
		runs, np := float64(b.N), float64(len(proxies))
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/runs/np, "ns/proxy")
		b.ReportMetric(float64(index.Nanoseconds())/runs/1e6, "index-ms")
		b.ReportMetric(float64(clusters)/np, "clusters/proxy")
		b.ReportMetric(float64(listeners)/np, "listeners/proxy")
		b.ReportMetric(float64(routes)/np, "routes/proxy")
		b.ReportMetric(float64(vhosts)/np, "vhosts/proxy")
		b.ReportMetric(float64(endpoints)/np, "endpoints/proxy")
		b.ReportMetric(np, "proxies")
	})
}

// BenchmarkPredictProxy predicts one proxy per operation, taken in turn from 64
// proxies spread over the mesh, on an indexed inventory whose scopes are
// computed: the steady state, comparable with one BuildClusters call of istiod
// on an initialised PushContext.
func BenchmarkPredictProxy(b *testing.B) {
	eachMesh(b, func(b *testing.B, inv *mesh.Inventory, proxies []predict.Proxy) {
		p, err := predict.New(inv, predict.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sample := make([]predict.Proxy, 0, 64)
		for i := 0; i < 64 && i < len(proxies); i++ {
			sample = append(sample, proxies[i*len(proxies)/64])
		}
		for _, px := range sample {
			p.Predict(px)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p.Predict(sample[i%len(sample)])
		}
	})
}

// BenchmarkDiffRollout is the GitOps review of the mesh-wide first rollout: `diff` from the
// 5,000-service mesh with no Sidecar to the same mesh with a namespace-default Sidecar in every
// namespace (policy namespace), in each output format. It reports the output size; its peak
// memory is the process's, which `/usr/bin/time -f %M` on the command line gives.
func BenchmarkDiffRollout(b *testing.B) {
	const n = 5000
	dir := benchDir(b, n)
	base, head := b.TempDir(), b.TempDir()
	for _, f := range []struct{ src, dir string }{
		{MeshFile(dir, n), base}, {MeshFile(dir, n), head}, {SidecarsFile(dir, n, PolicyNamespace), head},
	} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, filepath.Base(f.src)), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, o := range []string{"table", "markdown", "json"} {
		b.Run(o, func(b *testing.B) {
			for range b.N {
				var out, errb bytes.Buffer
				if code := cli.Run("dev", []string{"diff", "--base", base, "--head", head, "-o", o}, strings.NewReader(""), &out, &errb); code != cli.ExitChanged {
					b.Fatalf("exit %d: %s", code, errb.String())
				}
				b.ReportMetric(float64(out.Len()), "output-bytes")
			}
		})
	}
}
