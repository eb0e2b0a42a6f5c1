package main

import (
	"encoding/json"
	"fmt"
	"io"
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

func (b *runner) generate() error {
	if err := os.MkdirAll(b.meshDir(), 0o755); err != nil {
		return err
	}
	b.genTime = map[int]time.Duration{}
	for _, n := range union(b.sizes.floor, b.sizes.speed, b.sizes.istio, b.sizes.terraform) {
		t0 := time.Now()
		if _, err := bench.WriteFiles(b.meshDir(), bench.Generate(bench.DefaultSpec(n))); err != nil {
			return err
		}
		b.genTime[n] = time.Since(t0)
		fmt.Fprintf(b.log, "mesh of %d services written in %v\n", n, b.genTime[n])
	}
	return nil
}

// ---- 1. scope floor ----

type floorResult struct {
	bench.FloorRow
}

func (b *runner) floor() error {
	for _, n := range b.sizes.floor {
		m := bench.Generate(bench.DefaultSpec(n))
		base, err := bench.Load(b.meshDir(), n, bench.PolicyNone)
		if err != nil {
			return err
		}
		sidecars := map[bench.Policy][]byte{}
		for _, p := range bench.Policies {
			if p == bench.PolicyNone {
				continue
			}
			if sidecars[p], err = os.ReadFile(bench.SidecarsFile(b.meshDir(), n, p)); err != nil {
				return err
			}
		}
		rows, err := bench.FloorRows(m, base, sidecars)
		if err != nil {
			return err
		}
		for _, r := range rows {
			fmt.Fprintf(b.log, "floor %d %s: mean %.2f p50 %d max %d at floor %d/%d\n", n, r.Policy, r.Stats.Mean, r.Stats.P50, r.Stats.Max, r.AtFloor, r.Proxies)
			b.floorRows = append(b.floorRows, floorResult{r})
		}
	}
	return nil
}

// ---- 2. predictor ----

type predResult struct {
	Size   int
	Policy bench.Policy
	// Runs of BenchmarkPredictAll: one operation is the whole mesh.
	All []BenchLine
	// Proxy is BenchmarkPredictProxy, the steady state.
	Proxy       []BenchLine
	AllRun      Run // the process of the PredictAll runs
	Proxies     int
	ClustersAvg float64
}

func (r *predResult) name(bench string) string {
	return fmt.Sprintf("%s/services=%d/policy=%s", bench, r.Size, r.Policy)
}

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

func (b *runner) predictor() error {
	if err := os.MkdirAll(filepath.Join(b.work, "raw"), 0o755); err != nil {
		return err
	}
	b.pred = map[string]*predResult{}
	b.loads = map[int]Sample{}
	for _, n := range b.sizes.speed {
		_, lines, err := b.benchRun(b.benchBin, b.benchEnv(n, bench.PolicyMeshscope),
			"-test.bench", "^BenchmarkLoad$", "-test.benchtime", "1x", "-test.count", fmt.Sprint(b.cfg.count))
		if err != nil {
			return err
		}
		b.loads[n] = values(lines, fmt.Sprintf("BenchmarkLoad/services=%d", n), "ns/op")
		for _, p := range bench.Policies {
			r := &predResult{Size: n, Policy: p}
			run, lines, err := b.benchRun(b.benchBin, b.benchEnv(n, p),
				"-test.bench", "^BenchmarkPredictAll$", "-test.benchtime", "1s", "-test.count", fmt.Sprint(b.countFor(n, p)))
			if err != nil {
				return err
			}
			r.All, r.AllRun = lines, run
			r.Proxies = int(values(lines, r.name("BenchmarkPredictAll"), "proxies").Median())
			r.ClustersAvg = values(lines, r.name("BenchmarkPredictAll"), "clusters/proxy").Median()
			_, lines, err = b.benchRun(b.benchBin, b.benchEnv(n, p),
				"-test.bench", "^BenchmarkPredictProxy$", "-test.benchtime", "300ms", "-test.count", fmt.Sprint(b.cfg.count))
			if err != nil {
				return err
			}
			r.Proxy = lines
			b.pred[fmt.Sprint(n, "/", p)] = r
			fmt.Printf("    %-40s %10.1f µs/proxy, every proxy %8.3f s, peak RSS %s\n", r.name("predict"),
				values(r.All, r.name("BenchmarkPredictAll"), "ns/proxy").Median()/1e3,
				values(r.All, r.name("BenchmarkPredictAll"), "ns/op").Median()/1e9, mib(run.MaxRSS))
		}
	}
	return nil
}

// ---- 2. Istio ----

// istioPolicies are the policies Istio's generator is run on.
var istioPolicies = []bench.Policy{bench.PolicyNone, bench.PolicyMeshscope}

type istioResult struct {
	Size   int
	Policy bench.Policy
	Lines  []BenchLine
	Run    Run
	// Same counts the sampled proxies whose cluster lists Istio and the
	// predictor agree on; Diff describes the first disagreement.
	Same, Sampled int
	Diff          string
}

func (r *istioResult) value(unit string) float64 {
	return values(r.Lines, fmt.Sprintf("BenchmarkIstioClusters/services=%d/policy=%s", r.Size, r.Policy), unit).Median()
}

func (b *runner) istioRuns() error {
	b.istioRes = map[string]*istioResult{}
	out := filepath.Join(b.work, "istio-out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
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
				return err
			}
			r := &istioResult{Size: n, Policy: p, Lines: lines, Run: run}
			if err := r.compare(b.meshDir(), filepath.Join(out, fmt.Sprintf("istio-%d-%s.json", n, p))); err != nil {
				return err
			}
			b.istioRes[fmt.Sprint(n, "/", p)] = r
			fmt.Printf("    istio %-34s %10.1f µs/proxy, setup %6.1f s, peak RSS %s, %d/%d sampled proxies identical\n",
				fmt.Sprintf("services=%d/policy=%s", n, p), r.value("ns/op")/1e3, r.value("setup-s"), mib(run.MaxRSS), r.Same, r.Sampled)
		}
	}
	return nil
}

// compare predicts the proxies Istio built and compares the cluster names.
func (r *istioResult) compare(dir, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var istio map[string][]string
	if err := json.Unmarshal(data, &istio); err != nil {
		return err
	}
	inv, err := bench.Load(dir, r.Size, r.Policy)
	if err != nil {
		return err
	}
	p, err := predict.New(inv, predict.Options{})
	if err != nil {
		return err
	}
	proxies, err := bench.ReadProxies(dir, r.Size)
	if err != nil {
		return err
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
			return fmt.Errorf("%s: Istio built proxy %s, which the mesh does not have", file, k)
		}
		r.Sampled++
		got := p.Predict(predict.Proxy{Namespace: px.Namespace, Labels: px.Labels}).Names()
		if slices.Equal(got, istio[k]) {
			r.Same++
		} else if r.Diff == "" {
			r.Diff = fmt.Sprintf("%s: only Istio %v, only meshscope %v", k, minus(istio[k], got), minus(got, istio[k]))
		}
	}
	return nil
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

// ---- 3. terraform ----

type tfResult struct {
	Scenario  string
	Resources int
	Runs      []Run
	PlanBytes int
	Err       string
}

func (r tfResult) wall() Sample {
	var s Sample
	for _, run := range r.Runs {
		s = append(s, run.Wall.Seconds())
	}
	return s
}

func (r tfResult) treeRSS() int64 {
	m := int64(0)
	for _, run := range r.Runs {
		m = max(m, run.TreeRSS)
	}
	return m
}

func (b *runner) terraformRuns() error {
	tfDir := filepath.Join(b.work, "terraform")
	if err := os.RemoveAll(tfDir); err != nil {
		return err
	}
	rc := filepath.Join(tfDir, "terraformrc")
	if err := os.MkdirAll(tfDir, 0o755); err != nil {
		return err
	}
	overrides := map[string]string{"registry.terraform.io/meshscope/meshscope": b.providerDir}
	if b.kubectlDir != "" {
		overrides["registry.terraform.io/gavinbunney/kubectl"] = b.kubectlDir
	}
	if err := os.WriteFile(rc, []byte(bench.TerraformRC(overrides)), 0o644); err != nil {
		return err
	}
	runs := 3
	if b.cfg.quick {
		runs = 1
	}
	plan := func(scenario, dir string, resources, times int) {
		r := tfResult{Scenario: scenario, Resources: resources}
		for i := 0; i < times; i++ {
			cmd := exec.Command("terraform", "plan", "-input=false", "-no-color", "-lock=false", "-refresh=false")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
			fmt.Fprintf(b.log, "$ (cd %s && terraform plan)\n", dir)
			run, err := runCmd(cmd, io.Discard, true)
			if err != nil {
				r.Err = firstError(run.Output, err)
				break
			}
			r.PlanBytes = len(run.Output)
			run.Output = nil
			r.Runs = append(r.Runs, run)
		}
		b.tf = append(b.tf, r)
		if r.Err != "" {
			fmt.Printf("    %-58s failed: %s\n", scenario, r.Err)
			return
		}
		fmt.Printf("    %-58s %7.1f s, peak RSS %s (tree)\n", scenario, r.wall().Median(), mib(r.treeRSS()))
	}
	for _, n := range b.sizes.terraform {
		m := bench.Generate(bench.DefaultSpec(n))
		y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
		if err != nil {
			return err
		}
		dir := filepath.Join(tfDir, fmt.Sprintf("scopes-%d", n))
		if err := bench.TerraformScopes(dir, m, y, "", false); err != nil {
			return err
		}
		plan(fmt.Sprintf("offline, %s scopes, mesh without Sidecars", thousands(n)), dir, n, runs)
	}
	n := b.sizes.terraform[len(b.sizes.terraform)-1]
	if err := b.profilePlan(tfDir, filepath.Join(tfDir, fmt.Sprintf("scopes-%d", n)),
		fmt.Sprintf("offline, %s scopes, mesh without Sidecars", thousands(n))); err != nil {
		return err
	}
	m := bench.Generate(bench.DefaultSpec(n))
	y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
	if err != nil {
		return err
	}
	nsYAML, err := os.ReadFile(bench.SidecarsFile(b.meshDir(), n, bench.PolicyNamespace))
	if err != nil {
		return err
	}
	dir := filepath.Join(tfDir, fmt.Sprintf("scopes-%d-nsdefault", n))
	if err := bench.TerraformScopes(dir, m, append(append(y, '\n'), nsYAML...), "", false); err != nil {
		return err
	}
	plan(fmt.Sprintf("offline, %s scopes, mesh with namespace-default Sidecars", thousands(n)), dir, n, runs)

	// Terraform's own cost for as many instances: resource blocks, then for_each.
	var blocks strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&blocks, "resource \"terraform_data\" \"r%d\" {\n  input = \"%d\"\n}\n", i, i)
	}
	dir = filepath.Join(tfDir, "terraform-data-blocks")
	if err := writeFile(filepath.Join(dir, "main.tf"), blocks.String()); err != nil {
		return err
	}
	plan(fmt.Sprintf("terraform_data only, %s resource blocks", thousands(n)), dir, n, 1)
	dir = filepath.Join(tfDir, "terraform-data-for-each")
	if err := writeFile(filepath.Join(dir, "main.tf"), fmt.Sprintf("resource \"terraform_data\" \"r\" {\n  for_each = toset([for i in range(%d) : tostring(i)])\n  input    = each.key\n}\n", n)); err != nil {
		return err
	}
	plan(fmt.Sprintf("terraform_data only, one resource with for_each over %s", thousands(n)), dir, n, 1)

	// Against the test control plane's API server, when it is up: the mesh goes
	// into the API server, and the provider reads its inventory from there.
	if up, why := b.testenvUp(); up {
		if err := b.livePlans(tfDir, m, runs, plan); err != nil {
			return err
		}
	} else {
		b.tfNotes = append(b.tfNotes, "The test control plane was not up during this run ("+why+"), so the plans against its API server were not measured: start it with `make testenv` before `make bench`.")
	}
	return nil
}

// profilePlan plans dir once more with the profiling build of the provider
// and keeps the top of the provider's CPU profile, all processes merged.
func (b *runner) profilePlan(tfDir, dir, scenario string) error {
	rc := filepath.Join(tfDir, "terraformrc-pprof")
	if err := os.WriteFile(rc, []byte(bench.TerraformRC(map[string]string{"registry.terraform.io/meshscope/meshscope": b.pprofProviderDir})), 0o644); err != nil {
		return err
	}
	profDir := filepath.Join(b.work, "plan-profile")
	if err := os.RemoveAll(profDir); err != nil {
		return err
	}
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("terraform", "plan", "-input=false", "-no-color", "-lock=false", "-refresh=false")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
		"MESHSCOPE_CPU_PROFILE="+filepath.Join(profDir, "provider.prof"))
	fmt.Fprintf(b.log, "$ (cd %s && MESHSCOPE_CPU_PROFILE=... terraform plan)\n", dir)
	if _, err := runCmd(cmd, io.Discard, true); err != nil {
		return fmt.Errorf("profiled plan of %s: %w", dir, err)
	}
	profs, err := filepath.Glob(filepath.Join(profDir, "provider.prof.*"))
	if err != nil || len(profs) == 0 {
		return fmt.Errorf("profiled plan of %s wrote no provider profile", dir)
	}
	top, err := pprofTopOf(filepath.Join(b.pprofProviderDir, "terraform-provider-meshscope"), profs,
		"-top", "-cum", "-nodecount=30", "-show=meshscope|terraform-plugin|grpc|runtime.gcBgMarkWorker|runtime.mallocgc$")
	if err != nil {
		return err
	}
	b.planProfile, b.planProfileScenario = top, scenario
	fmt.Printf("    profiled the provider over one more plan: %s\n", scenario)
	return nil
}

// livePlans loads the n-service mesh of m into the test API server, plans the
// first 100 and all of its scopes with only the provider's kubernetes block,
// and plans the same Sidecars as kubectl_manifest resources.
func (b *runner) livePlans(tfDir string, m *bench.Mesh, runs int, plan func(scenario, dir string, resources, times int)) error {
	n := m.Spec.Services
	y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
	if err != nil {
		return err
	}
	// The API server has its own default/kubernetes Service: leave it alone.
	var docs []string
	for _, d := range strings.Split(string(y), "\n---\n") {
		if !strings.Contains(d, "{name: kubernetes, namespace: default,") {
			docs = append(docs, d)
		}
	}
	live := filepath.Join(tfDir, "mesh-live.yaml")
	if err := writeFile(live, strings.Join(docs, "\n---\n")); err != nil {
		return err
	}
	fmt.Printf("    loading the %s-service mesh (%s objects) into the test API server\n", thousands(n), thousands(len(docs)))
	start := time.Now()
	cmd := exec.Command("kubectl", "--kubeconfig", b.cfg.kubeconfig, "apply", "--server-side", "--force-conflicts",
		"--field-manager=meshscope-bench", "-f", live)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.tfNotes = append(b.tfNotes, "Loading the mesh into the test API server failed, so the plans against it were not measured: "+firstLine(out, nil)+" ("+err.Error()+")")
		return nil //nolint:nilerr // the report says why the rows are missing; the rest of the run goes on
	}
	b.tfNotes = append(b.tfNotes, fmt.Sprintf("For the rows against the test API server, `kubectl apply --server-side` loaded the %s-service mesh "+
		"(%s objects, without the API server's own `default/kubernetes`) in %s; there is no controller-manager, so the "+
		"Deployments have no pods and meshscope takes them as workloads, as offline. The API server also holds what the "+
		"acceptance tests left in their own namespaces.", thousands(n), thousands(len(docs)), time.Since(start).Round(time.Second)))
	for _, k := range b.sizes.terraform {
		sub := *m
		sub.Apps = m.Apps[:min(k, len(m.Apps))]
		dir := filepath.Join(tfDir, fmt.Sprintf("live-%d", k))
		if err := bench.TerraformScopes(dir, &sub, nil, b.cfg.kubeconfig, false); err != nil {
			return err
		}
		plan(fmt.Sprintf("test API server (inventory read from it), %s scopes", thousands(len(sub.Apps))), dir, len(sub.Apps), runs)
	}
	if b.kubectlDir == "" {
		b.tfNotes = append(b.tfNotes, "kubectl_manifest was not measured: "+b.kubectlErr)
		return nil
	}
	sc, err := os.ReadFile(bench.SidecarsFile(b.meshDir(), n, bench.PolicyMeshscope))
	if err != nil {
		return err
	}
	// The same Sidecars as kubernetes_manifest, for whoever has a build of
	// hashicorp/kubernetes v2: written, not planned (see the report).
	b.manifestDir = filepath.Join(tfDir, fmt.Sprintf("kubernetes-manifest-%d", n))
	if _, err := bench.TerraformManifests(b.manifestDir, sc, b.cfg.kubeconfig); err != nil {
		return err
	}
	dir := filepath.Join(tfDir, fmt.Sprintf("kubectl-manifest-%d", n))
	count, err := bench.TerraformKubectlManifests(dir, sc, b.cfg.kubeconfig)
	if err != nil {
		return err
	}
	plan(fmt.Sprintf("test API server, the same %s Sidecars as kubectl_manifest", thousands(count)), dir, count, runs)
	return nil
}

func (b *runner) testenvUp() (bool, string) {
	if _, err := os.Stat(b.cfg.kubeconfig); err != nil {
		return false, "no kubeconfig at " + b.cfg.kubeconfig
	}
	cmd := exec.Command("kubectl", "--kubeconfig", b.cfg.kubeconfig, "--request-timeout=5s", "get", "ns")
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, "`kubectl get ns` failed: " + strings.TrimSpace(firstLine(out, nil))
	}
	return true, ""
}

func firstError(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Error:") {
			return strings.TrimSpace(l)
		}
	}
	return err.Error()
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// ---- 4. profiles and baseline ----

type profiles struct {
	CPUTop, MemTop         string // after
	BaseCPUTop, BaseMemTop string // before
	After, Before          map[string]Sample
	BeforeRSS, AfterRSS    map[string]int64
	BaselineNote           string
}

// profiled are the benchmarks compared before and after, at 10,000 services.
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

func (b *runner) profiles() error {
	n := b.profileSize()
	pr := &b.prof
	pr.After, pr.Before = map[string]Sample{}, map[string]Sample{}
	pr.AfterRSS, pr.BeforeRSS = map[string]int64{}, map[string]int64{}
	measure := func(bin string, into map[string]Sample, rss map[string]int64) error {
		for _, p := range profiled {
			args := append([]string{"-test.bench", "^" + p.bench + "$", "-test.count", "3"}, p.args...)
			run, lines, err := b.benchRun(bin, b.benchEnv(n, p.policy), args...)
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s/services=%d/policy=%s", p.bench, n, p.policy)
			if p.bench == "BenchmarkLoad" {
				name = fmt.Sprintf("%s/services=%d", p.bench, n)
			}
			into[p.bench] = values(lines, name, p.unit)
			rss[p.bench] = run.MaxRSS
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
		return err
	}
	if err := measure(b.benchBin, pr.After, pr.AfterRSS); err != nil {
		return err
	}
	switch {
	case b.cfg.baseline == "":
		pr.BaselineNote = "The baseline was skipped (-baseline \"\")."
	case b.baselineErr != nil:
		pr.BaselineNote = fmt.Sprintf("The baseline %s could not be built: %v.", b.cfg.baseline, b.baselineErr)
	default:
		if pr.BaseCPUTop, pr.BaseMemTop, err = top(b.baselineBin, "before"); err != nil {
			return err
		}
		if err := measure(b.baselineBin, pr.Before, pr.BeforeRSS); err != nil {
			return err
		}
	}
	return nil
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
