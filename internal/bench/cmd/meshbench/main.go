// Command meshbench runs meshscope's benchmarks side by side with Istio's own
// config generator and with Terraform, records the results and renders
// docs/benchmarks.md from them. `make bench` runs it from the repository root:
//
//	go run ./internal/bench/cmd/meshbench [-quick] [-baseline REV] [-results internal/bench/results.json] [-out docs/benchmarks.md]
//	go run ./internal/bench/cmd/meshbench -render internal/bench/results.json [-out docs/benchmarks.md]
//
// It generates the benchmark meshes (internal/bench) into a work directory,
// then measures, each in its own process so that peak RSS is per measurement:
//
//  1. the scope floor: CDS clusters per proxy under four policies;
//  2. prediction speed: internal/bench's Go benchmarks, and the conformance
//     module's BenchmarkIstioClusters on the same mesh files, with a check that
//     both compute the same cluster lists on Istio's sample of proxies;
//  3. `terraform plan` of the workload scopes, offline and, when the test
//     control plane (make testenv) is up, against its API server, where the
//     largest configuration is also applied and destroyed, side by side with
//     the same Sidecars as kubectl_manifest resources;
//  4. the provider binary's `diff` of the mesh-wide rollout of namespace-default
//     Sidecars, in each output format;
//  5. the traffic evidence: meshscope's query against a real Prometheus
//     holding the mesh's call series, suggest of the whole mesh, and
//     terraform plan with evidence against the plan without;
//  6. CPU and memory profiles of the predictor, and the same benchmarks built
//     against a baseline revision of internal/predict and internal/mesh.
//
// Each stage returns a typed result (results.go); the run writes them all to
// one results file and renders the report from that file alone (render.go,
// report.md.tmpl), so that -render rewrites the report, after a change to its
// template, without measuring again.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type config struct {
	out, results, render, work, baseline string
	quick                                bool
	count                                int
	istio, terraform, diff, evidence     bool
	kubeconfig                           string
}

func main() {
	var c config
	var measure bool
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "the report to write (relative to the repository root)")
	flag.StringVar(&c.results, "results", "internal/bench/results.json", "the results file a run writes (relative to the repository root)")
	flag.StringVar(&c.render, "render", "", "render the report from this results file (relative to the repository root) without measuring")
	flag.StringVar(&c.work, "work", filepath.Join(os.TempDir(), "meshscope-bench"), "work directory: meshes, binaries, raw outputs, profiles")
	flag.StringVar(&c.baseline, "baseline", "", "git revision whose internal/predict and internal/mesh are measured as \"before\" in the profiles (empty: no before)")
	flag.BoolVar(&c.quick, "quick", false, "small meshes only (a smoke run of the whole pipeline)")
	flag.IntVar(&c.count, "count", 5, "runs of each Go benchmark and of each diff format (medians are reported)")
	flag.BoolVar(&c.istio, "istio", true, "run Istio's config generator (internal/conformance)")
	flag.BoolVar(&c.terraform, "terraform", true, "run terraform plan")
	flag.BoolVar(&c.diff, "diff", true, "run the provider's diff command on the mesh-wide rollout")
	flag.BoolVar(&c.evidence, "evidence", true, "measure the traffic evidence: a real Prometheus (make prometheus), suggest, and plans with evidence")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "/tmp/meshscope-testenv/kubeconfig", "kubeconfig of the test control plane (make testenv)")
	flag.BoolVar(&measure, "measure-exec", false, "internal: run the command after the flags, discard its output and print its wall time, CPU, peak RSS and output size as JSON")
	flag.Parse()
	var err error
	switch {
	case measure:
		err = measureExec(flag.Args(), os.Stdout, os.Stderr)
	case flag.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", flag.Args())
	case c.render != "":
		err = renderFile(c)
	default:
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "meshbench:", err)
		os.Exit(1)
	}
}

// sizes are the mesh sizes (services) of each part.
type sizes struct {
	floor, speed, istio, terraform []int
	// istioSample is the number of proxies Istio builds, by size.
	istioSample map[int]int
	// diff is the size of the diff command's mesh.
	diff int
	// evidence is the size of the traffic evidence's mesh.
	evidence int
}

func sizesFor(quick bool) sizes {
	if quick {
		return sizes{floor: []int{100, 1000}, speed: []int{100, 300, 1000}, istio: []int{100, 300, 1000}, terraform: []int{100},
			istioSample: map[int]int{100: 20, 300: 20, 1000: 10}, diff: 1000, evidence: 1000}
	}
	return sizes{floor: []int{100, 1000, 10000}, speed: []int{1000, 2000, 5000, 10000}, istio: []int{1000, 2000, 5000, 10000},
		terraform: []int{100, 1000}, istioSample: map[int]int{1000: 20, 2000: 12, 5000: 6, 10000: 4}, diff: 5000, evidence: 10000}
}

// inRepo resolves a path relative to the repository root.
func inRepo(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// renderFile writes the report rendered from a results file.
func renderFile(c config) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	r, err := ReadResults(inRepo(root, c.render))
	if err != nil {
		return err
	}
	if err := writeReport(inRepo(root, c.out), r); err != nil {
		return err
	}
	fmt.Printf("wrote %s from %s\n", c.out, c.render)
	return nil
}

// writeReport renders r into the file out.
func writeReport(out string, r *Results) error {
	report, err := render(r)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(report), 0o644)
}

// run measures everything, writes the results file and renders the report from it.
func run(c config) error {
	start := time.Now()
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(c.work, "meshbench.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	b := &runner{cfg: c, root: root, work: c.work, log: logf, sizes: sizesFor(c.quick)}
	r, err := b.measure()
	if err != nil {
		return err
	}
	r.Run.DurationNs = int64(time.Since(start))
	r.Machine.LoadAtEnd = loadAvg()
	if err := WriteResults(inRepo(root, c.results), r); err != nil {
		return err
	}
	if err := writeReport(inRepo(root, c.out), r); err != nil {
		return err
	}
	fmt.Println()
	fmt.Println(summary(r))
	fmt.Printf("wrote %s and %s in %v; raw outputs, profiles and meshes are in %s\n", c.results, c.out, time.Since(start).Round(time.Second), c.work)
	return nil
}

// measure runs every stage and gathers their results.
func (b *runner) measure() (*Results, error) {
	c := b.cfg
	r := &Results{SchemaVersion: SchemaVersion, Run: RunInfo{Quick: c.quick, Count: c.count, Work: c.work}, Machine: machineInfo()}
	stages := []struct {
		name string
		on   bool
		run  func() error
	}{
		{"building the benchmark binaries", true, b.build},
		{"generating the meshes", true, into(&r.Meshes, b.generate)},
		{"1. scope floor", true, into(&r.Floor, b.floor)},
		{"2. prediction speed", true, into(&r.Speed, b.predictor)},
		{"2. Istio's config generator", c.istio, into(&r.Istio, b.istioRuns)},
		{"3. terraform plan", c.terraform, into(&r.Terraform, b.terraformRuns)},
		{"4. diff of the mesh-wide rollout", c.diff, into(&r.Diff, b.diffRuns)},
		{"5. traffic evidence", c.evidence, into(&r.Evidence, b.evidenceRuns)},
		{"6. profiles and baseline", true, into(&r.Profiles, b.profiles)},
	}
	for _, s := range stages {
		if !s.on {
			continue
		}
		b.step(s.name)
		if err := s.run(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// into is a stage that runs run and keeps its result in *dst.
func into[T any](dst *T, run func() (T, error)) func() error {
	return func() error {
		v, err := run()
		*dst = v
		return err
	}
}

type runner struct {
	cfg   config
	root  string
	work  string
	log   io.Writer
	sizes sizes

	benchBin, baselineBin, istioBin, providerDir string
	// evidenceBin is internal/bench/evidence's test binary (BenchmarkEvidence).
	evidenceBin string
	baselineErr error
	// kubectlDir holds terraform-provider-kubectl, built from the Go module
	// proxy; empty when the build failed, with kubectlErr saying why.
	kubectlDir, kubectlErr string
	pprofProviderDir       string
}

func (b *runner) step(s string) {
	msg := fmt.Sprintf("==> %s (%s)", s, time.Now().Format("15:04:05"))
	fmt.Println(msg)
	fmt.Fprintln(b.log, msg)
}

func (b *runner) meshDir() string { return filepath.Join(b.work, "meshes") }

// goCmd runs the go command in dir.
func (b *runner) goCmd(dir string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	fmt.Fprintf(b.log, "$ (cd %s && go %s)\n", dir, strings.Join(args, " "))
	_, err := runCmd(cmd, b.log, false)
	return err
}

func (b *runner) build() error {
	b.benchBin = filepath.Join(b.work, "bench.test")
	if err := b.goCmd(b.root, "test", "-c", "-o", b.benchBin, "./internal/bench"); err != nil {
		return err
	}
	if b.cfg.evidence {
		b.evidenceBin = filepath.Join(b.work, "evidence.test")
		if err := b.goCmd(b.root, "test", "-c", "-o", b.evidenceBin, "./internal/bench/evidence"); err != nil {
			return err
		}
	}
	b.providerDir = filepath.Join(b.work, "bin")
	if err := b.goCmd(b.root, "build", "-o", filepath.Join(b.providerDir, "terraform-provider-meshscope"), "."); err != nil {
		return err
	}
	// The same provider with a CPU profiling hook (main_pprof.go), for one profiled plan.
	b.pprofProviderDir = filepath.Join(b.work, "bin-pprof")
	if err := b.goCmd(b.root, "build", "-tags", "meshscope_pprof", "-o", filepath.Join(b.pprofProviderDir, "terraform-provider-meshscope"), "."); err != nil {
		return err
	}
	if b.cfg.istio {
		b.istioBin = filepath.Join(b.work, "conformance.test")
		if err := b.goCmd(filepath.Join(b.root, "internal", "conformance"), "test", "-c", "-o", b.istioBin, "."); err != nil {
			return err
		}
	}
	if b.cfg.terraform {
		b.buildKubectl()
	}
	if b.cfg.baseline != "" {
		b.baselineErr = b.buildBaseline()
		if b.baselineErr != nil {
			fmt.Fprintf(b.log, "baseline: %v\n", b.baselineErr)
		}
	}
	return nil
}

// buildBaseline builds internal/bench's benchmarks against the baseline
// revision's packages: the revision's tree, with this tree's internal/bench.
func (b *runner) buildBaseline() error {
	src := filepath.Join(b.work, "baseline-src")
	if err := emptyDir(src); err != nil {
		return err
	}
	archive := exec.Command("sh", "-c", fmt.Sprintf("git archive %s | tar -x -C %s", shellQuote(b.cfg.baseline), shellQuote(src)))
	archive.Dir = b.root
	if _, err := runCmd(archive, b.log, false); err != nil {
		return err
	}
	dst := filepath.Join(src, "internal", "bench")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(b.root, "internal", "bench", "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	b.baselineBin = filepath.Join(b.work, "bench-baseline.test")
	return b.goCmd(src, "test", "-c", "-o", b.baselineBin, "./internal/bench")
}

// emptyDir makes dir an empty directory, removing what it held.
func emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/meshscope/terraform-provider-meshscope\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run meshbench inside the meshscope repository")
		}
		dir = parent
	}
}

func machineInfo() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if l, _, ok := strings.Cut(string(data), "\n"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:")), "%d kB", &kb); err == nil {
				m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	m.Go = firstLine(exec.Command("go", "version").Output())
	m.Terraform = firstLine(exec.Command("terraform", "version").Output())
	m.Kernel = firstLine(exec.Command("uname", "-sr").Output())
	m.LoadAtStart = loadAvg()
	m.Commit = firstLine(exec.Command("git", "describe", "--always", "--dirty").Output())
	return m
}

func firstLine(out []byte, err error) string {
	if err != nil {
		return "unknown"
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// kubectlProvider is the generic-manifest provider the Terraform comparison
// plans: gavinbunney/kubectl, pinned, from the Go module proxy (which serves no
// release of hashicorp/terraform-provider-kubernetes with kubernetes_manifest).
const kubectlProvider = "github.com/gavinbunney/terraform-provider-kubectl@v1.19.0"

// buildKubectl installs kubectlProvider into the work directory.
func (b *runner) buildKubectl() {
	dir := filepath.Join(b.work, "kubectl-provider")
	cmd := exec.Command("go", "install", kubectlProvider)
	cmd.Dir = b.work
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOWORK=off")
	fmt.Fprintf(b.log, "$ GOBIN=%s go install %s\n", dir, kubectlProvider)
	if _, err := runCmd(cmd, b.log, false); err != nil {
		b.kubectlErr = err.Error()
		return
	}
	b.kubectlDir = dir
}
