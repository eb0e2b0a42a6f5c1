// Command meshbench runs meshscope's benchmarks side by side with Istio's own
// config generator and with Terraform, prints a table and writes
// docs/benchmarks.md. `make bench` runs it from the repository root:
//
//	go run ./internal/bench/cmd/meshbench [-quick] [-out docs/benchmarks.md]
//
// It generates the benchmark meshes (internal/bench) into a work directory,
// then measures, each in its own process so that peak RSS is per measurement:
//
//  1. the scope floor: CDS clusters per proxy under four policies;
//  2. prediction speed: internal/bench's Go benchmarks, and the conformance
//     module's BenchmarkIstioClusters on the same mesh files, with a check that
//     both compute the same cluster lists on Istio's sample of proxies;
//  3. `terraform plan` of the workload scopes, offline and, when the test
//     control plane (make testenv) is up, against its API server;
//  4. CPU and memory profiles of the predictor, and the same benchmarks built
//     against a baseline revision of internal/predict and internal/mesh.
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
	out, work, baseline string
	quick               bool
	count               int
	istio, terraform    bool
	kubeconfig          string
}

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "the report to write")
	flag.StringVar(&c.work, "work", filepath.Join(os.TempDir(), "meshscope-bench"), "work directory: meshes, binaries, raw outputs, profiles")
	flag.StringVar(&c.baseline, "baseline", defaultBaseline, "git revision whose internal/predict and internal/mesh are measured as \"before\" (empty: skip)")
	flag.BoolVar(&c.quick, "quick", false, "small meshes only (a smoke run of the whole pipeline)")
	flag.IntVar(&c.count, "count", 5, "runs of each Go benchmark (medians are reported)")
	flag.BoolVar(&c.istio, "istio", true, "run Istio's config generator (internal/conformance)")
	flag.BoolVar(&c.terraform, "terraform", true, "run terraform plan")
	flag.StringVar(&c.kubeconfig, "kubeconfig", "/tmp/meshscope-testenv/kubeconfig", "kubeconfig of the test control plane (make testenv)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "meshbench:", err)
		os.Exit(1)
	}
}

// defaultBaseline is the last revision before the performance fixes of issue 6.
const defaultBaseline = "e85556c"

// sizes are the mesh sizes (services) of each part.
type sizes struct {
	floor, speed, istio, terraform []int
	// istioSample is the number of proxies Istio builds, by size.
	istioSample map[int]int
}

func sizesFor(quick bool) sizes {
	if quick {
		return sizes{floor: []int{100, 1000}, speed: []int{100, 300, 1000}, istio: []int{100, 300, 1000}, terraform: []int{100},
			istioSample: map[int]int{100: 20, 300: 20, 1000: 10}}
	}
	return sizes{floor: []int{100, 1000, 10000}, speed: []int{1000, 2000, 5000, 10000}, istio: []int{1000, 2000, 5000, 10000},
		terraform: []int{100, 1000}, istioSample: map[int]int{1000: 20, 2000: 12, 5000: 6, 10000: 4}}
}

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
	b.machine = machineInfo()
	b.step("building the benchmark binaries")
	if err := b.build(); err != nil {
		return err
	}
	b.step("generating the meshes")
	if err := b.generate(); err != nil {
		return err
	}
	b.step("1. scope floor")
	if err := b.floor(); err != nil {
		return err
	}
	b.step("2. prediction speed")
	if err := b.predictor(); err != nil {
		return err
	}
	if c.istio {
		b.step("2. Istio's config generator")
		if err := b.istioRuns(); err != nil {
			return err
		}
	}
	if c.terraform {
		b.step("3. terraform plan")
		if err := b.terraformRuns(); err != nil {
			return err
		}
	}
	b.step("4. profiles and baseline")
	if err := b.profiles(); err != nil {
		return err
	}
	b.elapsed = time.Since(start)
	report := b.report()
	fmt.Println()
	fmt.Println(b.table())
	out := c.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s in %v; raw outputs, profiles and meshes are in %s\n", c.out, b.elapsed.Round(time.Second), c.work)
	return nil
}

type runner struct {
	cfg     config
	root    string
	work    string
	log     io.Writer
	sizes   sizes
	machine machine
	elapsed time.Duration

	benchBin, baselineBin, istioBin, providerDir string
	baselineErr                                  error
	// kubectlDir holds terraform-provider-kubectl, built from the Go module
	// proxy; empty when the build failed, with kubectlErr saying why.
	kubectlDir, kubectlErr string
	pprofProviderDir       string
	// manifestDir holds the Sidecars as kubernetes_manifest resources, unplanned.
	manifestDir string
	// planProfile is the provider's CPU profile over the profiled plan, and
	// planProfileScenario the plan it profiles.
	planProfile, planProfileScenario string

	genTime   map[int]time.Duration
	floorRows []floorResult
	pred      map[string]*predResult // by "size/policy"
	loads     map[int]Sample         // ns/op by size
	istioRes  map[string]*istioResult
	tf        []tfResult
	tfNotes   []string
	prof      profiles
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
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
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

type machine struct {
	CPUs                   int
	Model, Go, Terraform   string
	Memory, Date, Kernel   string
	LoadAtStart, LoadAtEnd string
	Commit                 string
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
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
		b.kubectlErr = fmt.Sprintf("`go install %s` failed (%v); see %s", kubectlProvider, err, filepath.Join(b.work, "meshbench.log"))
		return
	}
	b.kubectlDir = dir
}
