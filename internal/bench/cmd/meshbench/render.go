package main

import (
	_ "embed"
	"fmt"
	"math"
	"strings"
	"text/template"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
)

// The report's prose and layout; render fills it from a Results.
//
//go:embed report.md.tmpl
var reportTemplate string

// The targets of the diff command on the mesh-wide rollout, in each format.
const (
	targetDiffWall = 10 * time.Second
	targetDiffRSS  = 1 << 30
)

// The targets of the traffic evidence: query and index of the whole mesh,
// suggest of the whole mesh, and a plan with evidence against one without.
const (
	targetEvidenceWall   = 10 * time.Second
	targetSuggestWall    = 30 * time.Second
	targetSuggestRSS     = 1 << 30
	targetEvidencePlanX  = 1.2
	targetEvidenceSeries = 100000
	// The sizes the targets are set at: a smaller (-quick) run meets none.
	targetEvidenceServices   = 10000
	targetEvidencePlanScopes = 1000
)

// The targets of the scope floor, the predictor and terraform plan:
// the cut in clusters per proxy (percent), Istio's time per proxy over
// meshscope's, every proxy of the largest mesh, and an offline plan of 1,000 scopes.
const (
	targetCut            = 95
	targetSpeedup        = 100
	targetEveryProxyWall = 10 * time.Second
	targetEveryProxyRSS  = 1 << 30
	// targetEveryProxyXDS bounds indexing and predicting every proxy's clusters, listeners,
	// routes and endpoints with meshscope's scopes at the largest size.
	targetEveryProxyXDS = 2 * time.Second
	targetOfflinePlan   = 30 * time.Second
)

// reportSize is the mesh size the floor's cut target is read at.
const reportSize = 1000

// clusterStructBytes is the size of one predict.Cluster, for the profile section's arithmetic.
const clusterStructBytes = 104

var funcs = template.FuncMap{
	"dur":       dur,
	"spread":    spread,
	"ratio":     ratio,
	"quotient":  quotient,
	"met":       met,
	"thousands": thousands,
	"joinInts":  joinInts,
	"mib":       mib,
	"gib":       func(bytes int64) string { return fmt.Sprintf("%.0f GiB", float64(bytes)/(1<<30)) },
	"size":      size,
	"cut":       cutString,
	"describe":  func(p string) string { return bench.Policy(p).Describe() },
	// seconds converts nanoseconds.
	"seconds": func(ns int64) float64 { return time.Duration(ns).Seconds() },
	// round formats nanoseconds as a Go duration rounded to unit ("1s", "1m").
	"round": func(ns int64, unit string) (string, error) {
		u, err := time.ParseDuration(unit)
		if err != nil {
			return "", err
		}
		return time.Duration(ns).Round(u).String(), nil
	},
	// cell escapes a cell of a markdown table.
	"cell": func(s string) string { return strings.ReplaceAll(s, "|", "/") },
	"int":  func(f float64) int { return int(f) },
	"mul":  func(a, b float64) float64 { return a * b },
}

var reportTmpl = template.Must(template.New("report.md.tmpl").Funcs(funcs).Option("missingkey=error").Parse(reportTemplate))

// render builds the report from the results of one run. It reads nothing else.
func render(r *Results) (string, error) {
	var w strings.Builder
	if err := reportTmpl.Execute(&w, newView(r)); err != nil {
		return "", err
	}
	return w.String(), nil
}

// view is what the template reads: the results, and what is derived from
// them (lookups, medians, ratios, fits, verdicts), section by section.
type view struct {
	*Results
	// Mid is the size of the floor's cut target; Top the largest mesh of the speed runs.
	Mid, Top   int
	Targets    targets
	FloorLines []floorLine
	PerProxy   []perProxyRow
	Mismatches []IstioResult
	// Scoped compares Istio and meshscope with meshscope's scopes on the largest mesh.
	Scoped   *scopedNote
	Setup    []setupRow
	Every    []everyRow
	XDS      []xdsRow
	Growth   []growthRow
	Shared   []sharedRow
	Plans    []planRow
	Applies  []applyRow
	Diff     *diffView
	Evidence *evidenceView
	Profile  profileView
}

func newView(r *Results) *view {
	v := &view{Results: r, Mid: reportSize}
	if n := len(r.Speed.Sizes); n > 0 {
		v.Top = r.Speed.Sizes[n-1]
	}
	v.FloorLines = floorLines(r.Floor)
	v.speed()
	v.Plans = planRows(r.Terraform)
	if r.Terraform != nil {
		v.Applies = applyRows(r.Terraform.Applies)
	}
	v.Diff = newDiffView(r.Diff)
	v.Evidence = newEvidenceView(r.Evidence)
	v.Targets = v.targets()
	v.Profile = v.profile()
	return v
}

func (r *Results) prediction(n int, pol bench.Policy) *Prediction {
	for i, p := range r.Speed.Predictions {
		if p.Services == n && p.Policy == string(pol) {
			return &r.Speed.Predictions[i]
		}
	}
	return nil
}

func (r *Results) istio(n int, pol bench.Policy) *IstioResult {
	if r.Istio == nil {
		return nil
	}
	for i, x := range r.Istio.Results {
		if x.Services == n && x.Policy == string(pol) {
			return &r.Istio.Results[i]
		}
	}
	return nil
}

func (r *Results) load(n int) Sample {
	for _, l := range r.Speed.Loads {
		if l.Services == n {
			return l.Ns
		}
	}
	return nil
}

func (r *Results) istioSizes() []int {
	if r.Istio == nil {
		return nil
	}
	return r.Istio.Sizes
}

// ---- targets ----

type targets struct {
	// FloorAt of FloorAll meshscope-bare proxies are at their floor, at every size.
	FloorAt, FloorAll int
	FloorPct          float64
	AllFloor          bool
	// CutNone and CutScoped are the mean clusters per proxy at Mid without a
	// Sidecar and with meshscope's scopes; Cut is the cut in percent.
	CutNone, CutScoped, Cut float64
	CutOK                   bool
	Speed                   *speedTarget
	EveryProxy              *everyProxyTarget
	// EveryProxyXDS is EveryProxy with listeners, routes and endpoints (< 2 s).
	EveryProxyXDS *everyProxyTarget
	OfflinePlans  []offlinePlanTarget
	// Gap compares meshscope with kubectl_manifest; nil unless both were planned.
	Gap      *gap
	Diff     *diffView
	Evidence *evidenceView
}

// gap is the median plan times of 1,000 scopes and of the same Sidecars as
// kubectl_manifest of Provider, against the test API server, in seconds.
type gap struct {
	Live, Kubectl float64
	Provider      string
	// LiveApply, KubectlApply, LiveDestroy and KubectlDestroy are the median
	// apply and destroy times of the same configurations; zero when not measured.
	LiveApply, KubectlApply, LiveDestroy, KubectlDestroy float64
}

// Applied says whether both configurations were applied and destroyed.
func (g *gap) Applied() bool { return g.LiveApply > 0 && g.KubectlApply > 0 }

type speedTarget struct {
	Prediction *Prediction
	// IstioNs and Factor: Istio's time per proxy and its ratio to meshscope's.
	IstioNs, Factor float64
	OK              bool
	Scoped          *scopedNote
}

type offlinePlanTarget struct {
	planRow
	OK bool
}

type everyProxyTarget struct {
	Prediction *Prediction
	// TotalNs is index and every proxy; WithLoadNs adds loading the YAML.
	TotalNs, WithLoadNs float64
	OK                  bool
}

func (v *view) targets() targets {
	r := v.Results
	t := targets{AllFloor: true, Cut: math.NaN(), Diff: v.Diff, Evidence: v.Evidence}
	for _, row := range r.Floor {
		if row.Policy == string(bench.PolicyMeshscopeBare) {
			t.FloorAt += row.AtFloor
			t.FloorAll += row.Proxies
			if row.AtFloor != row.Proxies {
				t.AllFloor = false
			}
		}
		if row.Services == v.Mid {
			switch bench.Policy(row.Policy) {
			case bench.PolicyNone:
				t.CutNone = row.Clusters.Mean
			case bench.PolicyMeshscope:
				t.CutScoped = row.Clusters.Mean
			}
		}
	}
	if t.FloorAll > 0 {
		t.FloorPct = 100 * float64(t.FloorAt) / float64(t.FloorAll)
	}
	t.Cut = cutPercent(t.CutNone, t.CutScoped)
	t.CutOK = t.Cut >= targetCut
	if p, ir := r.prediction(v.Top, bench.PolicyNone), r.istio(v.Top, bench.PolicyNone); p != nil && ir != nil {
		x := quotient(ir.PerProxyNs.Median(), p.PerProxyNs.Median())
		t.Speed = &speedTarget{Prediction: p, IstioNs: ir.PerProxyNs.Median(), Factor: x, OK: x >= targetSpeedup, Scoped: v.Scoped}
	}
	if p := r.prediction(v.Top, bench.PolicyMeshscope); p != nil {
		total := p.EveryProxyNs.Median()
		withLoad := total + r.load(v.Top).Median()
		t.EveryProxy = &everyProxyTarget{Prediction: p, TotalNs: total, WithLoadNs: withLoad,
			OK: withLoad < float64(targetEveryProxyWall) && p.PeakRSSBytes < targetEveryProxyRSS}
		if p.XDS != nil {
			total := p.XDS.EveryProxyNs.Median()
			t.EveryProxyXDS = &everyProxyTarget{Prediction: p, TotalNs: total, OK: total < float64(targetEveryProxyXDS)}
		}
	}
	var live, kubectl *planRow
	for i, p := range v.Plans {
		switch {
		case p.Error != "" || p.Resources < 1000:
		case p.Scenario == ScenarioLive:
			live = &v.Plans[i]
		case p.Scenario == ScenarioLiveKubectl:
			kubectl = &v.Plans[i]
		}
		if p.Resources == 1000 && (p.Scenario == ScenarioOffline || p.Scenario == ScenarioOfflineNSDefault) && p.Error == "" {
			t.OfflinePlans = append(t.OfflinePlans, offlinePlanTarget{planRow: p, OK: p.Wall < targetOfflinePlan.Seconds()})
		}
	}
	if live != nil && kubectl != nil {
		t.Gap = &gap{Live: live.Wall, Kubectl: kubectl.Wall, Provider: r.Terraform.KubectlProvider}
		for _, a := range v.Applies {
			switch {
			case a.Error != "" || a.Runs == 0:
			case a.Scenario == ScenarioLive && a.Resources == live.Resources:
				t.Gap.LiveApply, t.Gap.LiveDestroy = a.Apply, a.Destroy
			case a.Scenario == ScenarioLiveKubectl && a.Resources == kubectl.Resources:
				t.Gap.KubectlApply, t.Gap.KubectlDestroy = a.Apply, a.Destroy
			}
		}
	}
	return t
}

// ---- 1. scope floor ----

type floorLine struct {
	FloorRow
	// Base is the mean without a Sidecar that the cut is taken from.
	Base float64
	// Last is the last policy of a size, followed by the theoretical floor.
	Last bool
}

func floorLines(rows []FloorRow) []floorLine {
	var out []floorLine
	var base float64
	for i, r := range rows {
		if r.Policy == string(bench.PolicyNone) {
			base = r.Clusters.Mean
		}
		out = append(out, floorLine{FloorRow: r, Base: base, Last: i+1 == len(rows) || rows[i+1].Services != r.Services})
	}
	return out
}

// ---- 2. prediction speed ----

type perProxyRow struct {
	*Prediction
	// Istio is nil when Istio was not run on this mesh and policy; then
	// IstioNever says Istio is never run on the policy.
	Istio      *IstioResult
	IstioNever bool
}

type scopedNote struct {
	Prediction *Prediction
	IstioNs    float64
}

type setupRow struct {
	*Prediction
	Load  Sample
	Istio *IstioResult
}

// xdsRow is BenchmarkPredictAllXDS on one mesh, beside BenchmarkPredictAll and, where it
// ran, Istio's BenchmarkIstioXDS on its sample.
type xdsRow struct {
	*Prediction
	Istio *IstioResult
}

type everyRow struct {
	*Prediction
	// WithLoadNs adds loading the YAML to EveryProxyNs's median.
	WithLoadNs float64
}

// growthRow is one fitted exponent: Measure is "per-proxy", "every-proxy",
// "istio-per-proxy", "istio-setup", "index" or "load".
type growthRow struct {
	Measure, Policy string
	K               float64
}

type sharedRow struct{ *Prediction }

func (v *view) speed() {
	r := v.Results
	for _, n := range r.Speed.Sizes {
		for _, pol := range bench.Policies {
			p := r.prediction(n, pol)
			if p == nil {
				continue
			}
			row := perProxyRow{Prediction: p, Istio: r.istio(n, pol)}
			if row.Istio == nil {
				row.IstioNever = pol == bench.PolicyNamespace || pol == bench.PolicyMeshscopeBare
			}
			v.PerProxy = append(v.PerProxy, row)
			v.Every = append(v.Every, everyRow{Prediction: p, WithLoadNs: p.EveryProxyNs.Median() + r.load(n).Median()})
			if p.XDS != nil {
				row := xdsRow{Prediction: p}
				if ir := r.istio(n, pol); ir != nil && ir.XDS != nil {
					row.Istio = ir
				}
				v.XDS = append(v.XDS, row)
			}
		}
		for _, pol := range istioPolicies {
			if p := r.prediction(n, pol); p != nil {
				v.Setup = append(v.Setup, setupRow{Prediction: p, Load: r.load(n), Istio: r.istio(n, pol)})
			}
		}
		for _, pol := range []bench.Policy{bench.PolicyMeshscope, bench.PolicyNone} {
			if p := r.prediction(n, pol); p != nil {
				v.Shared = append(v.Shared, sharedRow{p})
			}
		}
	}
	for _, n := range r.istioSizes() {
		for _, pol := range istioPolicies {
			if ir := r.istio(n, pol); ir != nil && ir.Mismatch != "" {
				v.Mismatches = append(v.Mismatches, *ir)
			}
		}
	}
	if p, ir := r.prediction(v.Top, bench.PolicyMeshscope), r.istio(v.Top, bench.PolicyMeshscope); p != nil && ir != nil {
		v.Scoped = &scopedNote{Prediction: p, IstioNs: ir.PerProxyNs.Median()}
	}
	v.Growth = v.growth()
}

func (v *view) growth() []growthRow {
	r := v.Results
	var rows []growthRow
	add := func(measure string, pol bench.Policy, sizes []int, get func(n int) float64) {
		if k, ok := growth(sizes, get); ok {
			rows = append(rows, growthRow{Measure: measure, Policy: string(pol), K: k})
		}
	}
	pred := func(pol bench.Policy, f func(*Prediction) float64) func(int) float64 {
		return func(n int) float64 {
			if p := r.prediction(n, pol); p != nil {
				return f(p)
			}
			return 0
		}
	}
	istio := func(pol bench.Policy, f func(*IstioResult) float64) func(int) float64 {
		return func(n int) float64 {
			if ir := r.istio(n, pol); ir != nil {
				return f(ir)
			}
			return 0
		}
	}
	for _, pol := range istioPolicies {
		add("per-proxy", pol, r.Speed.Sizes, pred(pol, func(p *Prediction) float64 { return p.PerProxyNs.Median() }))
		add("every-proxy", pol, r.Speed.Sizes, pred(pol, func(p *Prediction) float64 { return p.EveryProxyNs.Median() }))
		add("istio-per-proxy", pol, r.istioSizes(), istio(pol, func(ir *IstioResult) float64 { return ir.PerProxyNs.Median() }))
		add("istio-setup", pol, r.istioSizes(), istio(pol, func(ir *IstioResult) float64 { return ir.SetupSeconds.Median() }))
	}
	add("index", bench.PolicyMeshscope, r.Speed.Sizes, pred(bench.PolicyMeshscope, func(p *Prediction) float64 { return p.IndexMs.Median() }))
	add("load", bench.PolicyMeshscope, r.Speed.Sizes, func(n int) float64 { return r.load(n).Median() })
	return rows
}

// ---- 3. terraform plan ----

type planRow struct {
	Plan
	// Wall, CPU and ProviderCPU are medians (seconds, ns, ns); TreeRSS the largest.
	Wall             float64
	WallNs           Sample
	CPU, ProviderCPU float64
	TreeRSS          int64
	PlanMiB          float64
}

func planRows(tf *Terraform) []planRow {
	if tf == nil {
		return nil
	}
	var rows []planRow
	for _, p := range tf.Plans {
		row := planRow{Plan: p}
		var cpu, prov Sample
		for _, run := range p.Runs {
			row.WallNs = append(row.WallNs, float64(run.WallNs))
			cpu = append(cpu, float64(run.CPUNs))
			prov = append(prov, float64(run.ProviderCPUNs))
			row.TreeRSS = max(row.TreeRSS, run.TreeRSSBytes)
		}
		row.Wall = row.WallNs.Median() / 1e9
		row.CPU, row.ProviderCPU = cpu.Median(), prov.Median()
		row.PlanMiB = float64(p.PlanBytes) / (1 << 20)
		rows = append(rows, row)
	}
	return rows
}

// applyRow is an Apply with its medians: Apply and Destroy in seconds,
// ApplyCPU and ApplyProviderCPU in ns; TreeRSS is the largest of every run.
type applyRow struct {
	Scenario           Scenario
	Resources          int
	Error              string
	Runs               int
	ApplyNs, DestroyNs Sample
	Apply, Destroy     float64
	ApplyCPU           float64
	ApplyProviderCPU   float64
	TreeRSS            int64
}

func applyRows(applies []Apply) []applyRow {
	rows := make([]applyRow, 0, len(applies))
	for _, a := range applies {
		row := applyRow{Scenario: a.Scenario, Resources: a.Resources, Error: a.Error, Runs: len(a.Runs)}
		var cpu, prov Sample
		for _, run := range a.Runs {
			row.ApplyNs = append(row.ApplyNs, float64(run.Apply.WallNs))
			row.DestroyNs = append(row.DestroyNs, float64(run.Destroy.WallNs))
			cpu = append(cpu, float64(run.Apply.CPUNs))
			prov = append(prov, float64(run.Apply.ProviderCPUNs))
			row.TreeRSS = max(row.TreeRSS, run.Apply.TreeRSSBytes, run.Destroy.TreeRSSBytes)
		}
		if len(a.Runs) > 0 {
			row.Apply, row.Destroy = row.ApplyNs.Median()/1e9, row.DestroyNs.Median()/1e9
			row.ApplyCPU, row.ApplyProviderCPU = cpu.Median(), prov.Median()
		}
		rows = append(rows, row)
	}
	return rows
}

// ---- 4. diff ----

type diffView struct {
	*Diff
	Rows []diffRow
	// Runs is the most runs of a format.
	Runs int
	// OK is every format within the targets.
	OK bool
	// TargetSeconds and TargetRSS are the targets.
	TargetSeconds float64
	TargetRSS     int64
}

type diffRow struct {
	Format string
	Runs   int
	WallNs Sample
	CPUNs  float64
	// PeakRSS is the largest of the runs.
	PeakRSS     int64
	OutputBytes int64
	OK          bool
}

func newDiffView(d *Diff) *diffView {
	if d == nil {
		return nil
	}
	v := &diffView{Diff: d, OK: true, TargetSeconds: targetDiffWall.Seconds(), TargetRSS: targetDiffRSS}
	for _, f := range d.Formats {
		row := diffRow{Format: f.Format, Runs: len(f.Runs)}
		row.WallNs, row.CPUNs, row.PeakRSS, row.OutputBytes = commandRuns(f.Runs)
		row.OK = len(f.Runs) > 0 && row.WallNs.Median() < float64(targetDiffWall) && row.PeakRSS < targetDiffRSS
		v.OK = v.OK && row.OK
		v.Runs = max(v.Runs, row.Runs)
		v.Rows = append(v.Rows, row)
	}
	v.OK = v.OK && len(v.Rows) > 0
	return v
}

// ---- 5. traffic evidence ----

type evidenceView struct {
	*Evidence
	// QueryMs, IndexMs and TotalNs are medians.
	QueryMs, IndexMs, TotalNs float64
	// SuggestWallNs is suggest's runs; SuggestCPU the median; SuggestRSS the
	// largest; SuggestOutput the median output.
	SuggestWallNs             Sample
	SuggestCPU                float64
	SuggestRSS, SuggestOutput int64
	// PlanWithout and PlanWith are the median wall times (ns), PlanRatio
	// with ÷ without; the Samples are the runs.
	PlanWithoutNs, PlanWithNs         Sample
	PlanWithoutMedian, PlanWithMedian float64
	PlanRatio                         float64
	PlanRSSWithout                    int64
	PlanRSSWith                       int64
	// The verdicts, and the targets they are read against.
	QueryOK, SuggestOK, PlanOK bool
	TargetQuerySeconds         float64
	TargetSuggestSeconds       float64
	TargetSuggestRSS           int64
	TargetPlanRatio            float64
	TargetSeries               int
}

func newEvidenceView(e *Evidence) *evidenceView {
	if e == nil {
		return nil
	}
	v := &evidenceView{Evidence: e, TargetQuerySeconds: targetEvidenceWall.Seconds(), TargetSuggestSeconds: targetSuggestWall.Seconds(),
		TargetSuggestRSS: targetSuggestRSS, TargetPlanRatio: targetEvidencePlanX, TargetSeries: targetEvidenceSeries}
	v.QueryMs, v.IndexMs, v.TotalNs = e.QueryMs.Median(), e.IndexMs.Median(), e.TotalNs.Median()
	v.QueryOK = len(e.TotalNs) > 0 && v.TotalNs < float64(targetEvidenceWall) && e.Series >= targetEvidenceSeries
	v.SuggestWallNs, v.SuggestCPU, v.SuggestRSS, v.SuggestOutput = commandRuns(e.Suggest)
	v.SuggestOK = len(e.Suggest) > 0 && e.Services >= targetEvidenceServices && v.SuggestWallNs.Median() < float64(targetSuggestWall) && v.SuggestRSS < targetSuggestRSS
	v.PlanWithoutNs, v.PlanRSSWithout = planRuns(e.PlanWithout)
	v.PlanWithNs, v.PlanRSSWith = planRuns(e.PlanWith)
	v.PlanWithoutMedian, v.PlanWithMedian = v.PlanWithoutNs.Median(), v.PlanWithNs.Median()
	v.PlanRatio = quotient(v.PlanWithMedian, v.PlanWithoutMedian)
	v.PlanOK = e.PlanError == "" && e.PlanScopes >= targetEvidencePlanScopes && len(e.PlanWith) > 0 && len(e.PlanWithout) > 0 && v.PlanRatio <= targetEvidencePlanX
	return v
}

// commandRuns sums up runs of the command line: their wall times, the median CPU time and
// output size, and the largest peak RSS.
func commandRuns(runs []DiffRun) (wall Sample, cpu float64, rss, output int64) {
	var cpus, outputs Sample
	for _, r := range runs {
		wall = append(wall, float64(r.WallNs))
		cpus = append(cpus, float64(r.CPUNs))
		outputs = append(outputs, float64(r.OutputBytes))
		rss = max(rss, r.PeakRSSBytes)
	}
	return wall, cpus.Median(), rss, int64(outputs.Median())
}

// planRuns sums up terraform plans: their wall times and the largest RSS of a process tree.
func planRuns(runs []PlanRun) (wall Sample, rss int64) {
	for _, r := range runs {
		wall = append(wall, float64(r.WallNs))
		rss = max(rss, r.TreeRSSBytes)
	}
	return wall, rss
}

// ---- 6. profiles ----

type profileView struct {
	Rows []ProfileRow
	// NoneClusters is the clusters per proxy without Sidecars on the profiled
	// mesh, and NoneMiB their size as predict.Cluster structs.
	NoneClusters, NoneMiB float64
}

func (v *view) profile() profileView {
	pr := v.Profiles
	out := profileView{}
	for _, b := range profiled {
		row := ProfileRow{Benchmark: b.bench}
		for _, x := range pr.Rows {
			if x.Benchmark == b.bench {
				row = x
			}
		}
		out.Rows = append(out.Rows, row)
	}
	if p := v.prediction(pr.Services, bench.PolicyNone); p != nil {
		out.NoneClusters = p.ClustersPerProxy
	}
	out.NoneMiB = out.NoneClusters * clusterStructBytes / (1 << 20)
	return out
}

// ---- the summary printed at the end of a run ----

// summary is the table `make bench` prints when it is done.
func summary(r *Results) string {
	var t strings.Builder
	fmt.Fprintf(&t, "%-9s %-15s %12s %14s %14s %14s %9s %10s %10s\n", "services", "policy", "clusters/px", "meshscope/px", "Istio/px", "every proxy", "ratio", "RSS ms", "RSS Istio")
	for _, n := range r.Speed.Sizes {
		for _, pol := range bench.Policies {
			p := r.prediction(n, pol)
			if p == nil {
				continue
			}
			ip, irss, rat := "–", "–", "–"
			if ir := r.istio(n, pol); ir != nil {
				ip, irss = dur(ir.PerProxyNs.Median()), mib(ir.PeakRSSBytes)
				rat = ratio(ir.PerProxyNs.Median(), p.PerProxyNs.Median())
			}
			fmt.Fprintf(&t, "%-9d %-15s %12.1f %14s %14s %14s %9s %10s %10s\n", n, pol, p.ClustersPerProxy, dur(p.PerProxyNs.Median()), ip,
				dur(p.EveryProxyNs.Median()), rat, mib(p.PeakRSSBytes), irss)
		}
	}
	for _, p := range planRows(r.Terraform) {
		if p.Error != "" {
			fmt.Fprintf(&t, "terraform: %s: %s\n", scenarioName(p.Scenario, p.Resources), p.Error)
			continue
		}
		fmt.Fprintf(&t, "terraform: %-60s %8.1f s  %s\n", scenarioName(p.Scenario, p.Resources), p.Wall, mib(p.TreeRSS))
	}
	if r.Terraform != nil {
		for _, a := range applyRows(r.Terraform.Applies) {
			if a.Error != "" {
				fmt.Fprintf(&t, "terraform apply and destroy: %s: %s\n", scenarioName(a.Scenario, a.Resources), a.Error)
				continue
			}
			fmt.Fprintf(&t, "terraform apply and destroy: %-42s %8.1f s + %.1f s  %s\n", scenarioName(a.Scenario, a.Resources), a.Apply, a.Destroy, mib(a.TreeRSS))
		}
	}
	if d := newDiffView(r.Diff); d != nil {
		for _, row := range d.Rows {
			fmt.Fprintf(&t, "diff -o %-9s %8.2f s  %s  %s\n", row.Format, row.WallNs.Median()/1e9, mib(row.PeakRSS), size(row.OutputBytes))
		}
	}
	if e := newEvidenceView(r.Evidence); e != nil {
		fmt.Fprintf(&t, "evidence: query %d series %.2f s, index %.2f s; suggest %.2f s, %s; plan of %d scopes %.2f× with evidence\n",
			e.Series, e.QueryMs/1e3, e.IndexMs/1e3, e.SuggestWallNs.Median()/1e9, mib(e.SuggestRSS), e.PlanScopes, e.PlanRatio)
	}
	return t.String()
}

// scenarioName is the report's name of a plan scenario.
func scenarioName(s Scenario, resources int) string {
	var w strings.Builder
	if err := reportTmpl.ExecuteTemplate(&w, "scenario", struct {
		Scenario  Scenario
		Resources int
	}{s, resources}); err != nil {
		return string(s)
	}
	return w.String()
}
