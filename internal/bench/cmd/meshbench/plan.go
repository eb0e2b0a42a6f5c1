package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
)

// ---- 3. terraform plan ----

// planner plans the configurations of the terraform stage into its result.
type planner struct {
	b  *runner
	rc string
	tf *Terraform
}

// planConfig is a configuration that the terraform stage plans (and, for the live ones,
// applies and destroys): resources in dir.
type planConfig struct {
	scenario  Scenario
	dir       string
	resources int
}

// plan runs terraform plan in dir times, stopping at the first failure.
func (p *planner) plan(scenario Scenario, dir string, resources, times int) {
	p.inTurn(times, planConfig{scenario, dir, resources})
}

// inTurn plans each configuration times, the configurations in turn (one run of each, then
// the next round), so that the rows compared with each other see the same machine and API
// server; a configuration stops at its first failure.
func (p *planner) inTurn(times int, configs ...planConfig) {
	rows := make([]Plan, len(configs))
	for i, c := range configs {
		rows[i] = Plan{Scenario: c.scenario, Resources: c.resources}
	}
	for range times {
		for i, c := range configs {
			if rows[i].Error != "" {
				continue
			}
			run, output, err := p.b.terraformPlan(c.dir, p.rc)
			if err != nil {
				rows[i].Error = err.Error()
				continue
			}
			rows[i].PlanBytes = len(output)
			rows[i].Runs = append(rows[i].Runs, run)
		}
	}
	for _, r := range rows {
		p.tf.Plans = append(p.tf.Plans, r)
		name := scenarioName(r.Scenario, r.Resources)
		if r.Error != "" {
			fmt.Printf("    %-58s failed: %s\n", name, r.Error)
			continue
		}
		row := planRows(&Terraform{Plans: []Plan{r}})[0]
		fmt.Printf("    %-58s %7.1f s, peak RSS %s (tree)\n", name, row.Wall, mib(row.TreeRSS))
	}
}

// planCmd is terraform plan in dir, with the CLI configuration file rc and env added to the
// environment.
func planCmd(dir, rc string, env ...string) *exec.Cmd {
	return terraformCmd(dir, rc, "plan", []string{"-refresh=false"}, env...)
}

// terraformCmd is the terraform subcommand sub in dir, without input, colour or
// state lock, with flags, the CLI configuration file rc and env added to the
// environment.
func terraformCmd(dir, rc, sub string, flags []string, env ...string) *exec.Cmd {
	cmd := exec.Command("terraform", append([]string{sub, "-input=false", "-no-color", "-lock=false"}, flags...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"), env...)
	return cmd
}

// terraformPlan runs terraform plan in dir once, with the CLI configuration file rc, and
// returns the run and its output. The error is the output's first error.
func (b *runner) terraformPlan(dir, rc string) (PlanRun, []byte, error) {
	return b.terraformRun(terraformCmd(dir, rc, "plan", []string{"-refresh=false"}))
}

// terraformRun runs cmd, a terraform command, once and returns the run of its
// process tree and its output. The error is the output's first error.
func (b *runner) terraformRun(cmd *exec.Cmd) (PlanRun, []byte, error) {
	fmt.Fprintf(b.log, "$ (cd %s && %s)\n", cmd.Dir, strings.Join(cmd.Args, " "))
	run, err := runCmd(cmd, io.Discard, true)
	if err != nil {
		return PlanRun{}, run.Output, errors.New(firstError(run.Output, err))
	}
	var provider time.Duration
	for comm, c := range run.ChildCPU {
		if strings.HasPrefix(comm, "terraform-provi") {
			provider += c
		}
	}
	return PlanRun{WallNs: int64(run.Wall), CPUNs: int64(run.CPU), ProviderCPUNs: int64(provider), TreeRSSBytes: run.TreeRSS}, run.Output, nil
}

func (b *runner) terraformRuns() (*Terraform, error) {
	tf := &Terraform{KubectlProvider: kubectlProvider, KubectlError: b.kubectlErr}
	tfDir := filepath.Join(b.work, "terraform")
	if err := emptyDir(tfDir); err != nil {
		return nil, err
	}
	rc := filepath.Join(tfDir, "terraformrc")
	overrides := map[string]string{"registry.terraform.io/meshscope/meshscope": b.providerDir}
	if b.kubectlDir != "" {
		overrides["registry.terraform.io/gavinbunney/kubectl"] = b.kubectlDir
	}
	if err := os.WriteFile(rc, []byte(bench.TerraformRC(overrides)), 0o644); err != nil {
		return nil, err
	}
	runs := 3
	if b.cfg.quick {
		runs = 1
	}
	p := &planner{b: b, rc: rc, tf: tf}
	for _, n := range b.sizes.terraform {
		m := bench.Generate(bench.DefaultSpec(n))
		y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(tfDir, fmt.Sprintf("scopes-%d", n))
		if err := bench.TerraformScopes(dir, m, y, "", false); err != nil {
			return nil, err
		}
		p.plan(ScenarioOffline, dir, n, runs)
	}
	n := b.sizes.terraform[len(b.sizes.terraform)-1]
	var err error
	if tf.Profile, err = b.profilePlan(tfDir, filepath.Join(tfDir, fmt.Sprintf("scopes-%d", n)), n); err != nil {
		return nil, err
	}
	m := bench.Generate(bench.DefaultSpec(n))
	y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
	if err != nil {
		return nil, err
	}
	nsYAML, err := os.ReadFile(bench.SidecarsFile(b.meshDir(), n, bench.PolicyNamespace))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tfDir, fmt.Sprintf("scopes-%d-nsdefault", n))
	if err := bench.TerraformScopes(dir, m, append(append(y, '\n'), nsYAML...), "", false); err != nil {
		return nil, err
	}
	p.plan(ScenarioOfflineNSDefault, dir, n, runs)

	// Terraform's own cost for as many instances: resource blocks, then for_each.
	var blocks strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&blocks, "resource \"terraform_data\" \"r%d\" {\n  input = \"%d\"\n}\n", i, i)
	}
	dir = filepath.Join(tfDir, "terraform-data-blocks")
	if err := writeFile(filepath.Join(dir, "main.tf"), blocks.String()); err != nil {
		return nil, err
	}
	p.plan(ScenarioDataBlocks, dir, n, 1)
	dir = filepath.Join(tfDir, "terraform-data-for-each")
	if err := writeFile(filepath.Join(dir, "main.tf"), fmt.Sprintf("resource \"terraform_data\" \"r\" {\n  for_each = toset([for i in range(%d) : tostring(i)])\n  input    = each.key\n}\n", n)); err != nil {
		return nil, err
	}
	p.plan(ScenarioDataForEach, dir, n, 1)

	// Against the test control plane's API server, when it is up: the mesh goes
	// into the API server, and the provider reads its inventory from there.
	if up, why := b.testenvUp(); up {
		if err := b.livePlans(tfDir, m, runs, p); err != nil {
			return nil, err
		}
	} else {
		tf.TestenvDown = why
	}
	return tf, nil
}

// profilePlan plans dir (the n scopes of ScenarioOffline) once more with the
// profiling build of the provider and keeps the top of the provider's CPU
// profile, all processes merged.
func (b *runner) profilePlan(tfDir, dir string, n int) (*PlanProfile, error) {
	rc := filepath.Join(tfDir, "terraformrc-pprof")
	if err := os.WriteFile(rc, []byte(bench.TerraformRC(map[string]string{"registry.terraform.io/meshscope/meshscope": b.pprofProviderDir})), 0o644); err != nil {
		return nil, err
	}
	profDir := filepath.Join(b.work, "plan-profile")
	if err := emptyDir(profDir); err != nil {
		return nil, err
	}
	cmd := planCmd(dir, rc, "MESHSCOPE_CPU_PROFILE="+filepath.Join(profDir, "provider.prof"))
	fmt.Fprintf(b.log, "$ (cd %s && MESHSCOPE_CPU_PROFILE=... terraform plan)\n", dir)
	if _, err := runCmd(cmd, io.Discard, true); err != nil {
		return nil, fmt.Errorf("profiled plan of %s: %w", dir, err)
	}
	profs, err := filepath.Glob(filepath.Join(profDir, "provider.prof.*"))
	if err != nil || len(profs) == 0 {
		return nil, fmt.Errorf("profiled plan of %s wrote no provider profile", dir)
	}
	top, err := pprofTopOf(filepath.Join(b.pprofProviderDir, "terraform-provider-meshscope"), profs,
		"-top", "-cum", "-nodecount=30", "-show=meshscope|terraform-plugin|grpc|runtime.gcBgMarkWorker|runtime.mallocgc$")
	if err != nil {
		return nil, err
	}
	fmt.Printf("    profiled the provider over one more plan: %s\n", scenarioName(ScenarioOffline, n))
	return &PlanProfile{Scenario: ScenarioOffline, Resources: n, Dir: profDir, Top: top}, nil
}

// livePlans loads the n-service mesh of m into the test API server, plans the
// first 100 and all of its scopes with only the provider's kubernetes block,
// and plans the same Sidecars as kubectl_manifest resources.
func (b *runner) livePlans(tfDir string, m *bench.Mesh, runs int, p *planner) error {
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
	p.tf.Live = &LiveLoad{Services: n, Objects: len(docs)}
	start := time.Now()
	cmd := exec.Command("kubectl", "--kubeconfig", b.cfg.kubeconfig, "apply", "--server-side", "--force-conflicts",
		"--field-manager=meshscope-bench", "-f", live)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.tf.Live.Error = firstLine(out, nil) + " (" + err.Error() + ")"
		return nil //nolint:nilerr // the report says why the rows are missing; the rest of the run goes on
	}
	p.tf.Live.LoadNs = int64(time.Since(start))
	var all planConfig
	for _, k := range b.sizes.terraform {
		sub := *m
		sub.Apps = m.Apps[:min(k, len(m.Apps))]
		c := planConfig{ScenarioLive, filepath.Join(tfDir, fmt.Sprintf("live-%d", k)), len(sub.Apps)}
		if err := bench.TerraformScopes(c.dir, &sub, nil, b.cfg.kubeconfig, false); err != nil {
			return err
		}
		if k < n {
			p.plan(c.scenario, c.dir, c.resources, runs)
		}
		all = c
	}
	if b.kubectlDir == "" {
		p.plan(all.scenario, all.dir, all.resources, runs)
		p.tf.Applies = b.applies(p.rc, m.Namespaces, runs, all)
		return nil
	}
	sc, err := os.ReadFile(bench.SidecarsFile(b.meshDir(), n, bench.PolicyMeshscope))
	if err != nil {
		return err
	}
	// The same Sidecars as kubernetes_manifest, for whoever has a build of
	// hashicorp/kubernetes v2: written, not planned (see the report).
	p.tf.ManifestDir = filepath.Join(tfDir, fmt.Sprintf("kubernetes-manifest-%d", n))
	if _, err := bench.TerraformManifests(p.tf.ManifestDir, sc, b.cfg.kubeconfig); err != nil {
		return err
	}
	dir := filepath.Join(tfDir, fmt.Sprintf("kubectl-manifest-%d", n))
	count, err := bench.TerraformKubectlManifests(dir, sc, b.cfg.kubeconfig)
	if err != nil {
		return err
	}
	// The ratio of these two is a target: they are planned in turn, more times than the rest.
	p.inTurn(comparedRuns(runs), all, planConfig{ScenarioLiveKubectl, dir, count})
	p.tf.InTurn = true
	p.tf.Applies = b.applies(p.rc, m.Namespaces, runs, all, planConfig{ScenarioLiveKubectl, dir, count})
	return nil
}

// comparedRuns is how many times the plans whose ratio is a target run, when the others run
// runs times: a ratio of two medians of three moves with one slow run.
func comparedRuns(runs int) int {
	if runs <= 1 {
		return runs
	}
	return runs + 2
}

// applies runs terraform apply, then terraform destroy, of each configuration,
// runs times, the configurations in turn so that each sees the same machine and
// API server. A configuration whose run fails, or whose check fails, is not
// run again.
func (b *runner) applies(rc string, namespaces []string, runs int, configs ...planConfig) []Apply {
	out := make([]Apply, len(configs))
	for i, c := range configs {
		out[i] = Apply{Scenario: c.scenario, Resources: c.resources}
	}
	for range runs {
		for i, c := range configs {
			if out[i].Error != "" {
				continue
			}
			run, err := b.applyOnce(rc, namespaces, c)
			if err != nil {
				out[i].Error = err.Error()
				continue
			}
			out[i].Runs = append(out[i].Runs, run)
		}
	}
	for _, row := range applyRows(out) {
		name := "apply and destroy: " + scenarioName(row.Scenario, row.Resources)
		if row.Error != "" {
			fmt.Printf("    %-58s failed: %s\n", name, row.Error)
			continue
		}
		fmt.Printf("    %-58s %7.1f s + %.1f s\n", name, row.Apply, row.Destroy)
	}
	return out
}

// applyOnce applies the configuration c to an API server that holds none of
// its Sidecars, checks that it then holds all of them, destroys them and
// checks that none is left.
func (b *runner) applyOnce(rc string, namespaces []string, c planConfig) (ApplyRun, error) {
	if n, err := b.liveSidecars(namespaces); err != nil {
		return ApplyRun{}, err
	} else if n != 0 {
		return ApplyRun{}, fmt.Errorf("before apply, the test API server already holds %d Sidecars in the mesh's namespaces, "+
			"left by an interrupted run: delete them (kubectl delete sidecars --all -n NAMESPACE) or restart the test control plane (make testenv-down testenv)", n)
	}
	apply, _, err := b.terraformRun(terraformCmd(c.dir, rc, "apply", []string{"-auto-approve"}))
	if err != nil {
		return ApplyRun{}, fmt.Errorf("apply: %w", err)
	}
	if n, err := b.liveSidecars(namespaces); err != nil {
		return ApplyRun{}, err
	} else if n != c.resources {
		return ApplyRun{}, fmt.Errorf("after apply, the test API server holds %d Sidecars in the mesh's namespaces, not %d", n, c.resources)
	}
	destroy, _, err := b.terraformRun(terraformCmd(c.dir, rc, "destroy", []string{"-auto-approve"}))
	if err != nil {
		return ApplyRun{}, fmt.Errorf("destroy: %w", err)
	}
	if n, err := b.liveSidecars(namespaces); err != nil {
		return ApplyRun{}, err
	} else if n != 0 {
		return ApplyRun{}, fmt.Errorf("after destroy, the test API server still holds %d Sidecars in the mesh's namespaces", n)
	}
	return ApplyRun{Apply: apply, Destroy: destroy}, nil
}

// liveSidecars counts the Sidecars that the test API server holds in namespaces.
func (b *runner) liveSidecars(namespaces []string) (int, error) {
	cmd := exec.Command("kubectl", "--kubeconfig", b.cfg.kubeconfig, "--request-timeout=60s", "get", "sidecars.networking.istio.io",
		"--all-namespaces", "-o", `jsonpath={range .items[*]}{.metadata.namespace}{"\n"}{end}`)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("counting the Sidecars of the test API server: %w", err)
	}
	return countIn(strings.Fields(string(out)), namespaces), nil
}

// countIn counts the items of list that are in set.
func countIn(list, set []string) int {
	in := make(map[string]bool, len(set))
	for _, s := range set {
		in[s] = true
	}
	n := 0
	for _, l := range list {
		if in[l] {
			n++
		}
	}
	return n
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
