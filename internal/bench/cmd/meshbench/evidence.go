package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/bench/evidence"
	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
)

// ---- 5. traffic evidence ----

// evidenceWindow is the window of the evidence stage's query and snapshot.
const evidenceWindow = "7d"

// evidenceRuns measures the traffic evidence of the evidence mesh: the query
// and index against a real Prometheus (BenchmarkEvidence), suggest of the
// whole mesh from its snapshot, then terraform plan of the terraform stage's
// largest set of scopes without and with the snapshot, taking turns.
func (b *runner) evidenceRuns() (*Evidence, error) {
	n := b.sizes.evidence
	m := bench.Generate(bench.DefaultSpec(n))
	e := &Evidence{Services: n, Workloads: len(m.Proxies), Series: len(evidence.Calls(m))}

	run, lines, err := b.benchRun(b.evidenceBin, b.benchEnv(n, bench.PolicyNone),
		"-test.bench", "^BenchmarkEvidence$", "-test.benchtime", "1x", "-test.count", fmt.Sprint(b.cfg.count), "-test.timeout", "60m")
	if err != nil {
		return nil, fmt.Errorf("BenchmarkEvidence (it needs prometheus and promtool: make prometheus): %w", err)
	}
	name := fmt.Sprintf("BenchmarkEvidence/services=%d", n)
	e.QueryMs, e.IndexMs, e.TotalNs, e.PeakRSSBytes = values(lines, name, "query-ms"), values(lines, name, "index-ms"), values(lines, name, "ns/op"), run.MaxRSS
	if got := int(values(lines, name, "series").Median()); got != e.Series || len(e.TotalNs) == 0 {
		return nil, fmt.Errorf("BenchmarkEvidence reported %d series in %d runs, want %d series: see %s", got, len(e.TotalNs), e.Series, filepath.Join(b.work, "meshbench.log"))
	}
	fmt.Printf("    query %d series from Prometheus %8.2f s, index %6.2f s, peak RSS %s\n", e.Series, e.QueryMs.Median()/1e3, e.IndexMs.Median()/1e3, mib(e.PeakRSSBytes))

	dir := filepath.Join(b.work, "evidence")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	// The snapshot is evaluated at a fixed instant: BenchmarkEvidence checks
	// that a real Prometheus answers exactly it.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	snap, err := evidence.Snapshot(m, evidenceWindow, at)
	if err != nil {
		return nil, err
	}
	e.SnapshotBytes = int64(len(snap))
	snapFile := filepath.Join(dir, fmt.Sprintf("observed-%d.json", n))
	if err := writeFile(snapFile, string(snap)); err != nil {
		return nil, err
	}
	bin := filepath.Join(b.providerDir, "terraform-provider-meshscope")
	argv := []string{bin, "suggest", "-f", bench.MeshFile(b.meshDir(), n), "--observed", snapFile, "--quiet"}
	for range b.cfg.count {
		r, err := runMeasured(dir, b.log, argv...)
		if err != nil {
			return nil, err
		}
		if r.ExitCode != cli.ExitOK {
			return nil, fmt.Errorf("suggest exited %d: see %s", r.ExitCode, filepath.Join(b.work, "meshbench.log"))
		}
		e.Suggest = append(e.Suggest, DiffRun{WallNs: r.WallNs, CPUNs: r.CPUNs, PeakRSSBytes: r.MaxRSSBytes, OutputBytes: r.OutputBytes})
	}
	// One more run to count what it wrote.
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	e.SuggestScopes = strings.Count(string(out), "resource \"meshscope_workload_scope\"")
	v := newEvidenceView(e)
	fmt.Printf("    suggest of %d workloads %8.2f s, peak RSS %s, %d scopes\n", e.Workloads, v.SuggestWallNs.Median()/1e9, mib(v.SuggestRSS), e.SuggestScopes)

	if !b.cfg.terraform {
		return e, nil
	}
	return e, b.evidencePlans(e, dir, at)
}

// evidencePlans plans the terraform stage's largest set of scopes without and
// with evidence (the snapshot of the same mesh), taking turns. The plan with
// evidence must show it was read (observed_missing_count) and warn about
// nothing: the mesh's calls are its declarations.
func (b *runner) evidencePlans(e *Evidence, dir string, at time.Time) error {
	n := b.sizes.terraform[len(b.sizes.terraform)-1]
	e.PlanScopes = n
	m := bench.Generate(bench.DefaultSpec(n))
	y, err := os.ReadFile(bench.MeshFile(b.meshDir(), n))
	if err != nil {
		return err
	}
	snap, err := evidence.Snapshot(m, evidenceWindow, at)
	if err != nil {
		return err
	}
	without, with := filepath.Join(dir, fmt.Sprintf("scopes-%d", n)), filepath.Join(dir, fmt.Sprintf("scopes-%d-observed", n))
	if err := bench.TerraformScopes(without, m, y, "", false); err != nil {
		return err
	}
	if err := bench.TerraformScopesObserved(with, m, y, snap); err != nil {
		return err
	}
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, []byte(bench.TerraformRC(map[string]string{"registry.terraform.io/meshscope/meshscope": b.providerDir})), 0o644); err != nil {
		return err
	}
	runs := 3
	if b.cfg.quick {
		runs = 1
	}
	for range runs {
		for _, d := range []string{without, with} {
			pr, output, err := b.terraformPlan(d, rc)
			if err != nil {
				e.PlanError = err.Error()
				fmt.Printf("    plan of %d scopes in %s failed: %s\n", n, d, e.PlanError)
				return nil //nolint:nilerr // PlanError says why the plans are missing; the rest of the run goes on
			}
			out := string(output)
			switch {
			case d == without:
				e.PlanWithout = append(e.PlanWithout, pr)
				continue
			case providerWarning(out) != "":
				e.PlanError = "the plan with evidence warned: " + providerWarning(out)
			case strings.Count(out, "observed_missing_count") < n:
				e.PlanError = fmt.Sprintf("the plan with evidence shows observed_missing_count %d times, want one per scope (%d)", strings.Count(out, "observed_missing_count"), n)
			}
			if e.PlanError != "" {
				fmt.Printf("    plan of %d scopes with evidence: %s\n", n, e.PlanError)
				return nil
			}
			e.PlanWith = append(e.PlanWith, pr)
		}
	}
	v := newEvidenceView(e)
	fmt.Printf("    plan of %d scopes %6.1f s without evidence, %6.1f s with (%.2f×)\n", n, v.PlanWithoutMedian/1e9, v.PlanWithMedian/1e9, v.PlanRatio)
	return nil
}

// providerWarning is the first warning of a plan's output other than
// Terraform's own about the dev_overrides the run loads the provider through.
func providerWarning(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(l, "│╷╵ "))
		if strings.HasPrefix(l, "Warning:") && !strings.Contains(l, "Provider development overrides") {
			return l
		}
	}
	return ""
}
