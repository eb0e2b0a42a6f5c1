package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

func union(lists ...[]int) []int {
	var out []int
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// generate writes every mesh the stages use, smallest first.
func (b *runner) generate() ([]MeshGen, error) {
	if err := os.MkdirAll(b.meshDir(), 0o755); err != nil {
		return nil, err
	}
	var out []MeshGen
	for _, n := range union(b.sizes.floor, b.sizes.speed, b.sizes.istio, b.sizes.terraform, []int{b.sizes.diff, b.sizes.evidence}) {
		t0 := time.Now()
		if _, err := bench.WriteFiles(b.meshDir(), bench.Generate(bench.DefaultSpec(n))); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		out = append(out, MeshGen{Services: n, GenerateNs: int64(d)})
		fmt.Fprintf(b.log, "mesh of %d services written in %v\n", n, d)
	}
	return out, nil
}

// ---- 1. scope floor ----

func (b *runner) floor() ([]FloorRow, error) {
	var out []FloorRow
	for _, n := range b.sizes.floor {
		m := bench.Generate(bench.DefaultSpec(n))
		base, err := bench.Load(b.meshDir(), n, bench.PolicyNone)
		if err != nil {
			return nil, err
		}
		sidecars := map[bench.Policy][]byte{}
		for _, p := range bench.Policies {
			if p == bench.PolicyNone {
				continue
			}
			if sidecars[p], err = os.ReadFile(bench.SidecarsFile(b.meshDir(), n, p)); err != nil {
				return nil, err
			}
		}
		rows, err := bench.FloorRows(m, base, sidecars)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			fmt.Fprintf(b.log, "floor %d %s: mean %.2f p50 %d max %d at floor %d/%d\n", n, r.Policy, r.Stats.Mean, r.Stats.P50, r.Stats.Max, r.AtFloor, r.Proxies)
			out = append(out, FloorRow{Services: r.Services, Proxies: r.Proxies, Policy: string(r.Policy), Clusters: stats(r.Stats), AtFloor: r.AtFloor, Floor: stats(r.Floor)})
		}
	}
	return out, nil
}

func stats(s bench.Stats) Stats { return Stats{Mean: s.Mean, P50: s.P50, Max: s.Max} }

// ---- 2. predictor ----

// benchRun runs a test binary's benchmarks in a process of its own.
func (b *runner) benchRun(bin string, env []string, args ...string) (Run, []BenchLine, error) {
	cmd := exec.Command(bin, append([]string{"-test.run", "^$", "-test.benchmem"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = b.work
	fmt.Fprintf(b.log, "$ %s %s %s\n", strings.Join(env, " "), filepath.Base(bin), strings.Join(cmd.Args[1:], " "))
	r, err := runCmd(cmd, b.log, false)
	if err != nil {
		return r, nil, err
	}
	if err := os.WriteFile(filepath.Join(b.work, "raw", fmt.Sprintf("%s-%d.txt", filepath.Base(bin), time.Now().UnixNano())), r.Output, 0o644); err != nil {
		return r, nil, err
	}
	return r, parseBench(r.Output), nil
}

func (b *runner) benchEnv(n int, p bench.Policy) []string {
	return []string{bench.EnvDir + "=" + b.meshDir(), fmt.Sprintf("MESHSCOPE_BENCH_SIZES=%d", n), "MESHSCOPE_BENCH_POLICIES=" + string(p)}
}

// countFor keeps the slowest runs (every proxy of a mesh without Sidecars at
// 5,000 services and more, over a minute each at 10,000) to three.
func (b *runner) countFor(n int, p bench.Policy) int {
	if p == bench.PolicyNone && n >= 5000 {
		return min(b.cfg.count, 3)
	}
	return b.cfg.count
}

func (b *runner) predictor() (Speed, error) {
	s := Speed{Sizes: b.sizes.speed}
	if err := os.MkdirAll(filepath.Join(b.work, "raw"), 0o755); err != nil {
		return s, err
	}
	for _, n := range b.sizes.speed {
		_, lines, err := b.benchRun(b.benchBin, b.benchEnv(n, bench.PolicyMeshscope),
			"-test.bench", "^BenchmarkLoad$", "-test.benchtime", "1x", "-test.count", fmt.Sprint(b.cfg.count))
		if err != nil {
			return s, err
		}
		s.Loads = append(s.Loads, Load{Services: n, Ns: values(lines, fmt.Sprintf("BenchmarkLoad/services=%d", n), "ns/op")})
		for _, p := range bench.Policies {
			suffix := fmt.Sprintf("/services=%d/policy=%s", n, p)
			run, lines, err := b.benchRun(b.benchBin, b.benchEnv(n, p),
				"-test.bench", "^BenchmarkPredictAll$", "-test.benchtime", "1s", "-test.count", fmt.Sprint(b.countFor(n, p)))
			if err != nil {
				return s, err
			}
			all := func(unit string) Sample { return values(lines, "BenchmarkPredictAll"+suffix, unit) }
			r := Prediction{Services: n, Policy: string(p), Proxies: int(all("proxies").Median()), ClustersPerProxy: all("clusters/proxy").Median(),
				EveryProxyNs: all("ns/op"), PerProxyNs: all("ns/proxy"), IndexMs: all("index-ms"),
				FirstWorkloadNs: all("first-ns/proxy"), SecondWorkloadNs: all("second-ns/proxy"), PeakRSSBytes: run.MaxRSS}
			_, lines, err = b.benchRun(b.benchBin, b.benchEnv(n, p),
				"-test.bench", "^BenchmarkPredictProxy$", "-test.benchtime", "300ms", "-test.count", fmt.Sprint(b.cfg.count))
			if err != nil {
				return s, err
			}
			r.SteadyNs = values(lines, "BenchmarkPredictProxy"+suffix, "ns/op")
			run, lines, err = b.benchRun(b.benchBin, b.benchEnv(n, p),
				"-test.bench", "^BenchmarkPredictAllXDS$", "-test.benchtime", "1x", "-test.count", fmt.Sprint(b.countFor(n, p)))
			if err != nil {
				return s, err
			}
			x := func(unit string) Sample { return values(lines, "BenchmarkPredictAllXDS"+suffix, unit) }
			r.XDS = &XDSCounts{EveryProxyNs: x("ns/op"), PerProxyNs: x("ns/proxy"), ListenersPerProxy: x("listeners/proxy").Median(),
				RoutesPerProxy: x("routes/proxy").Median(), VhostsPerProxy: x("vhosts/proxy").Median(), EndpointsPerProxy: x("endpoints/proxy").Median(),
				PeakRSSBytes: run.MaxRSS}
			s.Predictions = append(s.Predictions, r)
			fmt.Printf("    %-40s %10.1f µs/proxy, every proxy %8.3f s, peak RSS %s\n", "predict"+suffix,
				r.PerProxyNs.Median()/1e3, r.EveryProxyNs.Median()/1e9, mib(r.PeakRSSBytes))
		}
	}
	return s, nil
}

// ---- 2. Istio ----

// istioPolicies are the policies Istio's generator is run on.
var istioPolicies = []bench.Policy{bench.PolicyNone, bench.PolicyMeshscope}

func (b *runner) istioRuns() (*Istio, error) {
	res := &Istio{Sizes: b.sizes.istio}
	out := filepath.Join(b.work, "istio-out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	for _, n := range b.sizes.istio {
		for _, p := range istioPolicies {
			k := b.sizes.istioSample[n]
			if p != bench.PolicyNone {
				k = 50 // the scoped proxies are cheap for Istio too
			}
			env := append(b.benchEnv(n, p), "MESHSCOPE_BENCH_OUT="+out, fmt.Sprintf("MESHSCOPE_BENCH_SAMPLE=%d", k))
			run, lines, err := b.benchRun(b.istioBin, env, "-test.bench", "^BenchmarkIstioClusters$", "-test.benchtime", fmt.Sprintf("%dx", k))
			if err != nil {
				return nil, err
			}
			name := fmt.Sprintf("BenchmarkIstioClusters/services=%d/policy=%s", n, p)
			r := IstioResult{Services: n, Policy: string(p), PerProxyNs: values(lines, name, "ns/op"), P50Ns: values(lines, name, "p50-ns/proxy"),
				SetupSeconds: values(lines, name, "setup-s"), PeakRSSBytes: run.MaxRSS}
			run, lines, err = b.benchRun(b.istioBin, env, "-test.bench", "^BenchmarkIstioXDS$", "-test.benchtime", fmt.Sprintf("%dx", k))
			if err != nil {
				return nil, err
			}
			xname := fmt.Sprintf("BenchmarkIstioXDS/services=%d/policy=%s", n, p)
			r.XDS = &XDSCounts{PerProxyNs: values(lines, xname, "ns/op"), ListenersPerProxy: values(lines, xname, "listeners/proxy").Median(),
				RoutesPerProxy: values(lines, xname, "routes/proxy").Median(), VhostsPerProxy: values(lines, xname, "vhosts/proxy").Median(),
				PeakRSSBytes: run.MaxRSS}
			if r.Identical, r.Sampled, r.Mismatch, err = compareIstio(b.meshDir(), n, p, filepath.Join(out, fmt.Sprintf("istio-%d-%s.json", n, p))); err != nil {
				return nil, err
			}
			res.Results = append(res.Results, r)
			fmt.Printf("    istio %-34s %10.1f µs/proxy, setup %6.1f s, peak RSS %s, %d/%d sampled proxies identical\n",
				fmt.Sprintf("services=%d/policy=%s", n, p), r.PerProxyNs.Median()/1e3, r.SetupSeconds.Median(), mib(r.PeakRSSBytes), r.Identical, r.Sampled)
		}
	}
	return res, nil
}

// compareIstio predicts the proxies Istio built (file) on the n-service mesh
// under policy p and compares the cluster names. same counts the proxies both
// agree on, of sampled; diff describes the first disagreement.
func compareIstio(dir string, n int, pol bench.Policy, file string) (same, sampled int, diff string, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, "", err
	}
	var istio map[string][]string
	if err := json.Unmarshal(data, &istio); err != nil {
		return 0, 0, "", err
	}
	inv, err := bench.Load(dir, n, pol)
	if err != nil {
		return 0, 0, "", err
	}
	p, err := predict.New(inv, predict.Options{})
	if err != nil {
		return 0, 0, "", err
	}
	proxies, err := bench.ReadProxies(dir, n)
	if err != nil {
		return 0, 0, "", err
	}
	byKey := map[string]bench.Proxy{}
	for _, px := range proxies {
		byKey[px.Namespace+"/"+labelString(px.Labels)] = px
	}
	keys := make([]string, 0, len(istio))
	for k := range istio {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		px, ok := byKey[k]
		if !ok {
			return 0, 0, "", fmt.Errorf("%s: Istio built proxy %s, which the mesh does not have", file, k)
		}
		sampled++
		got := p.Predict(predict.Proxy{Namespace: px.Namespace, Labels: px.Labels}).Names()
		if slices.Equal(got, istio[k]) {
			same++
		} else if diff == "" {
			diff = fmt.Sprintf("%s: only Istio %v, only meshscope %v", k, minus(istio[k], got), minus(got, istio[k]))
		}
	}
	return same, sampled, diff, nil
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return out
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// ---- 6. profiles and baseline ----

// profiled are the benchmarks compared before and after, at the largest size, in report order.
var profiled = []struct {
	bench  string
	policy bench.Policy
	args   []string
	unit   string
}{
	{"BenchmarkLoad", bench.PolicyMeshscope, []string{"-test.benchtime", "1x"}, "ns/op"},
	{"BenchmarkPredictAll", bench.PolicyMeshscope, []string{"-test.benchtime", "1x"}, "ns/op"},
	{"BenchmarkPredictProxy", bench.PolicyNone, []string{"-test.benchtime", "64x"}, "ns/op"},
}

func (b *runner) profileSize() int {
	return b.sizes.speed[len(b.sizes.speed)-1]
}

func (b *runner) profiles() (Profiles, error) {
	n := b.profileSize()
	pr := Profiles{Services: n, Baseline: b.cfg.baseline}
	for _, p := range profiled {
		pr.Rows = append(pr.Rows, ProfileRow{Benchmark: p.bench})
	}
	// measure fills the before or after columns of every row.
	measure := func(bin string, after bool) error {
		for i, p := range profiled {
			args := append([]string{"-test.bench", "^" + p.bench + "$", "-test.count", "3"}, p.args...)
			run, lines, err := b.benchRun(bin, b.benchEnv(n, p.policy), args...)
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s/services=%d/policy=%s", p.bench, n, p.policy)
			if p.bench == "BenchmarkLoad" {
				name = fmt.Sprintf("%s/services=%d", p.bench, n)
			}
			if after {
				pr.Rows[i].AfterNs, pr.Rows[i].AfterRSSBytes = values(lines, name, p.unit), run.MaxRSS
			} else {
				pr.Rows[i].BeforeNs, pr.Rows[i].BeforeRSSBytes = values(lines, name, p.unit), run.MaxRSS
			}
		}
		return nil
	}
	top := func(bin, tag string) (string, string, error) {
		cpu := filepath.Join(b.work, "cpu-"+tag+".prof")
		mem := filepath.Join(b.work, "mem-"+tag+".prof")
		if _, _, err := b.benchRun(bin, b.benchEnv(n, bench.PolicyMeshscope), "-test.bench", "^BenchmarkPredictAll$", "-test.benchtime", "5x",
			"-test.cpuprofile", cpu, "-test.memprofile", mem); err != nil {
			return "", "", err
		}
		c, err := pprofTop(bin, cpu, "-top", "-cum", "-focus=BenchmarkPredictAll")
		if err != nil {
			return "", "", err
		}
		m, err := pprofTop(bin, mem, "-top", "-sample_index=alloc_space", "-focus=BenchmarkPredictAll")
		return c, m, err
	}
	var err error
	if pr.CPUTop, pr.MemTop, err = top(b.benchBin, "after"); err != nil {
		return pr, err
	}
	if err := measure(b.benchBin, true); err != nil {
		return pr, err
	}
	switch {
	case b.cfg.baseline == "":
	case b.baselineErr != nil:
		pr.BaselineError = b.baselineErr.Error()
	default:
		if pr.BaselineCPUTop, pr.BaselineMemTop, err = top(b.baselineBin, "before"); err != nil {
			return pr, err
		}
		if err := measure(b.baselineBin, false); err != nil {
			return pr, err
		}
	}
	return pr, nil
}

// pprofTop returns the first lines of `go tool pprof -top` for a profile.
func pprofTop(bin, prof string, args ...string) (string, error) {
	return pprofTopOf(bin, []string{prof}, append([]string{"-nodecount=18"}, args...)...)
}

// pprofTopOf is the text report of the profiles (merged) with the header lines dropped.
func pprofTopOf(bin string, profs []string, args ...string) (string, error) {
	cmd := exec.Command("go", append(append(append([]string{"tool", "pprof"}, args...), bin), profs...)...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %w", strings.Join(profs, " "), err)
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") || strings.HasPrefix(l, "Active filters") || strings.HasPrefix(l, "   focus=") {
			continue
		}
		keep = append(keep, strings.ReplaceAll(l, "github.com/meshscope/terraform-provider-meshscope/", ""))
	}
	return strings.TrimSpace(strings.Join(keep, "\n")), nil
}
