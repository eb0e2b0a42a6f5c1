package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// SchemaVersion is the layout of the results file. It changes when a field is
// removed or changes meaning, not when one is added.
const SchemaVersion = 1

// Results is everything one run of meshbench measured: the report is rendered
// from it alone, so that rewording the report needs no new measurement.
// Durations are in the unit their field name ends with (ns, ms, seconds),
// sizes in bytes; a Sample holds every run of one measurement.
type Results struct {
	SchemaVersion int       `json:"schema_version"`
	Run           RunInfo   `json:"run"`
	Machine       Machine   `json:"machine"`
	Meshes        []MeshGen `json:"meshes"`
	// Floor is the scope-floor table, in measurement order: by size, then policy.
	Floor []FloorRow `json:"floor"`
	Speed Speed      `json:"speed"`
	// Istio is nil when Istio's config generator was not run (-istio=false).
	Istio *Istio `json:"istio,omitempty"`
	// Terraform is nil when terraform plan was not run (-terraform=false).
	Terraform *Terraform `json:"terraform,omitempty"`
	// Diff is nil when the diff command was not run (-diff=false).
	Diff *Diff `json:"diff,omitempty"`
	// Evidence is nil when the traffic evidence was not measured (-evidence=false).
	Evidence *Evidence `json:"evidence,omitempty"`
	Profiles Profiles  `json:"profiles"`
}

// RunInfo is how the run was made.
type RunInfo struct {
	Quick bool `json:"quick"`
	// Count is the number of runs of each Go benchmark (-count).
	Count int `json:"count"`
	// Work is the work directory: meshes, binaries, raw outputs, profiles.
	Work string `json:"work"`
	// DurationNs is the wall time of the whole run.
	DurationNs int64 `json:"duration_ns"`
}

// Machine describes where the run was made.
type Machine struct {
	Date        string `json:"date"`
	Commit      string `json:"commit"`
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	Memory      string `json:"memory"`
	Kernel      string `json:"kernel"`
	Go          string `json:"go"`
	Terraform   string `json:"terraform"`
	LoadAtStart string `json:"load_at_start"`
	LoadAtEnd   string `json:"load_at_end"`
}

// MeshGen is the generation of one benchmark mesh and its Sidecars.
type MeshGen struct {
	Services   int   `json:"services"`
	GenerateNs int64 `json:"generate_ns"`
}

// Stats summarise a count per proxy.
type Stats struct {
	Mean float64 `json:"mean"`
	P50  int     `json:"p50"`
	Max  int     `json:"max"`
}

// FloorRow is the CDS clusters per proxy of one mesh under one policy.
type FloorRow struct {
	Services int    `json:"services"`
	Proxies  int    `json:"proxies"`
	Policy   string `json:"policy"`
	Clusters Stats  `json:"clusters"`
	// AtFloor counts the proxies whose count equals their own floor.
	AtFloor int `json:"at_floor"`
	// Floor summarises the proxies' floors.
	Floor Stats `json:"floor"`
}

// Speed is the predictor's benchmarks (internal/bench).
type Speed struct {
	Sizes []int `json:"sizes"`
	// Loads is BenchmarkLoad: the mesh and meshscope's Sidecars from YAML.
	Loads       []Load       `json:"loads"`
	Predictions []Prediction `json:"predictions"`
}

// Load is BenchmarkLoad at one size.
type Load struct {
	Services int    `json:"services"`
	Ns       Sample `json:"ns"`
}

// Prediction is BenchmarkPredictAll and BenchmarkPredictProxy on one mesh
// under one policy.
type Prediction struct {
	Services         int     `json:"services"`
	Policy           string  `json:"policy"`
	Proxies          int     `json:"proxies"`
	ClustersPerProxy float64 `json:"clusters_per_proxy"`
	// EveryProxyNs is one operation of BenchmarkPredictAll: index the
	// inventory and predict every proxy.
	EveryProxyNs Sample `json:"every_proxy_ns"`
	// PerProxyNs is EveryProxyNs divided by the proxies.
	PerProxyNs Sample `json:"per_proxy_ns"`
	// IndexMs is the index alone (predict.New).
	IndexMs Sample `json:"index_ms"`
	// FirstWorkloadNs is per proxy over the first workload of each service,
	// which computes its Sidecar's scope; SecondWorkloadNs over the others.
	FirstWorkloadNs  Sample `json:"first_workload_ns"`
	SecondWorkloadNs Sample `json:"second_workload_ns"`
	// SteadyNs is BenchmarkPredictProxy: one proxy, scopes computed.
	SteadyNs Sample `json:"steady_ns"`
	// PeakRSSBytes is the peak resident set of the BenchmarkPredictAll process.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// XDS is BenchmarkPredictAllXDS: the same with listeners, routes and endpoints; nil in
	// results recorded before it.
	XDS *XDSCounts `json:"xds,omitempty"`
}

// XDSCounts is a run that predicts, besides clusters, the listeners, route configurations,
// virtual hosts and endpoints of proxies: EveryProxyNs (meshscope: index and every proxy) or
// PerProxyNs (Istio: one proxy of the sample), and the means per proxy.
type XDSCounts struct {
	EveryProxyNs      Sample  `json:"every_proxy_ns,omitempty"`
	PerProxyNs        Sample  `json:"per_proxy_ns"`
	ListenersPerProxy float64 `json:"listeners_per_proxy"`
	RoutesPerProxy    float64 `json:"routes_per_proxy"`
	VhostsPerProxy    float64 `json:"vhosts_per_proxy"`
	EndpointsPerProxy float64 `json:"endpoints_per_proxy,omitempty"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
}

// Istio is the conformance module's BenchmarkIstioClusters.
type Istio struct {
	Sizes   []int         `json:"sizes"`
	Results []IstioResult `json:"results"`
}

// IstioResult is Istio's config generator on a sample of one mesh's proxies.
type IstioResult struct {
	// XDS is BenchmarkIstioXDS on the same sample: BuildClusters, BuildListeners and
	// BuildHTTPRoutes; nil in results recorded before it.
	XDS          *XDSCounts `json:"xds,omitempty"`
	Services     int        `json:"services"`
	Policy       string     `json:"policy"`
	PerProxyNs   Sample     `json:"per_proxy_ns"`
	P50Ns        Sample     `json:"p50_ns"`
	SetupSeconds Sample     `json:"setup_seconds"`
	PeakRSSBytes int64      `json:"peak_rss_bytes"`
	// Identical counts the sampled proxies whose cluster lists Istio and the
	// predictor agree on; Mismatch describes the first disagreement.
	Identical int    `json:"identical"`
	Sampled   int    `json:"sampled"`
	Mismatch  string `json:"mismatch,omitempty"`
}

// Scenario names a terraform plan configuration.
type Scenario string

// The scenarios, in the order they are planned.
const (
	ScenarioOffline          Scenario = "offline-scopes"
	ScenarioOfflineNSDefault Scenario = "offline-scopes-namespace-default"
	ScenarioDataBlocks       Scenario = "terraform-data-blocks"
	ScenarioDataForEach      Scenario = "terraform-data-for-each"
	ScenarioLive             Scenario = "live-scopes"
	ScenarioLiveKubectl      Scenario = "live-kubectl-manifest"
)

// Terraform is the terraform plan stage.
type Terraform struct {
	Plans []Plan `json:"plans"`
	// Profile is the provider's CPU profile over one more plan.
	Profile *PlanProfile `json:"profile,omitempty"`
	// KubectlProvider is the module of the generic-manifest provider planned
	// for comparison, and KubectlError why it could not be built.
	KubectlProvider string `json:"kubectl_provider"`
	KubectlError    string `json:"kubectl_error,omitempty"`
	// ManifestDir holds the Sidecars as kubernetes_manifest resources, unplanned.
	ManifestDir string `json:"manifest_dir,omitempty"`
	// TestenvDown says why the test control plane was not used; empty when it was.
	TestenvDown string `json:"testenv_down,omitempty"`
	// Live is the loading of the mesh into the test API server.
	Live *LiveLoad `json:"live,omitempty"`
	// InTurn says that the plans of the live scopes and of kubectl_manifest, whose ratio is a
	// target, ran in turn (one of each per round); results from before that was so lack it.
	InTurn bool `json:"in_turn,omitempty"`
	// Applies are terraform apply and destroy of the live configurations
	// (ScenarioLive, ScenarioLiveKubectl), in turn, against the test API server.
	Applies []Apply `json:"applies,omitempty"`
}

// Apply is the runs of terraform apply, then destroy, of one configuration
// against the test API server. Each run starts from an empty state and no
// Sidecars, and is checked: after apply the API server holds Resources
// Sidecars in the mesh's namespaces, after destroy none.
type Apply struct {
	Scenario  Scenario   `json:"scenario"`
	Resources int        `json:"resources"`
	Runs      []ApplyRun `json:"runs"`
	// Error is the first error of a failed run, or the check it failed.
	Error string `json:"error,omitempty"`
}

// ApplyRun is one terraform apply and the terraform destroy after it.
type ApplyRun struct {
	Apply   PlanRun `json:"apply"`
	Destroy PlanRun `json:"destroy"`
}

// Plan is the runs of terraform plan on one configuration.
type Plan struct {
	Scenario  Scenario  `json:"scenario"`
	Resources int       `json:"resources"`
	Runs      []PlanRun `json:"runs"`
	// PlanBytes is the size of the plan's output.
	PlanBytes int `json:"plan_bytes"`
	// Error is the first error of a failed plan.
	Error string `json:"error,omitempty"`
}

// PlanRun is one terraform plan process and its descendants.
type PlanRun struct {
	WallNs int64 `json:"wall_ns"`
	// CPUNs is the CPU of the whole process tree (getrusage).
	CPUNs int64 `json:"cpu_ns"`
	// ProviderCPUNs is the CPU of the provider processes, from /proc.
	ProviderCPUNs int64 `json:"provider_cpu_ns"`
	// TreeRSSBytes is the largest sum of the tree's resident sets at one instant.
	TreeRSSBytes int64 `json:"tree_rss_bytes"`
}

// PlanProfile is the top of the provider's CPU profile over one plan.
type PlanProfile struct {
	Scenario  Scenario `json:"scenario"`
	Resources int      `json:"resources"`
	Dir       string   `json:"dir"`
	Top       string   `json:"top"`
}

// LiveLoad is the mesh loaded into the test API server with kubectl.
type LiveLoad struct {
	Services int   `json:"services"`
	Objects  int   `json:"objects"`
	LoadNs   int64 `json:"load_ns"`
	// Error is kubectl's first line and exit status when loading failed.
	Error string `json:"error,omitempty"`
}

// Diff is the provider binary's diff command on the mesh-wide rollout: from
// the mesh without Sidecars to the same mesh with a namespace-default Sidecar
// in every namespace.
type Diff struct {
	Services   int          `json:"services"`
	Workloads  int          `json:"workloads"`
	Namespaces int          `json:"namespaces"`
	Formats    []DiffFormat `json:"formats"`
}

// DiffFormat is the runs of diff in one output format.
type DiffFormat struct {
	Format string    `json:"format"`
	Runs   []DiffRun `json:"runs"`
}

// DiffRun is one diff (or suggest) process.
type DiffRun struct {
	WallNs int64 `json:"wall_ns"`
	CPUNs  int64 `json:"cpu_ns"`
	// PeakRSSBytes is the process's getrusage ru_maxrss.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	OutputBytes  int64 `json:"output_bytes"`
}

// Evidence is the traffic-evidence stage: Istio's metrics for every call of
// the mesh (internal/bench/evidence.Calls), queried from a real Prometheus and resolved,
// then the provider binary's suggest of the whole mesh, then terraform plan of
// the scopes with and without the evidence.
type Evidence struct {
	Services  int `json:"services"`
	Workloads int `json:"workloads"`
	// Series is the number of call series Prometheus holds and answers.
	Series int `json:"series"`
	// QueryMs and IndexMs are BenchmarkEvidence's split of one evaluation:
	// traffic.Fetch against the server, then traffic.Resolve; TotalNs is both.
	QueryMs Sample `json:"query_ms"`
	IndexMs Sample `json:"index_ms"`
	TotalNs Sample `json:"total_ns"`
	// PeakRSSBytes is the peak resident set of the BenchmarkEvidence process
	// (the Prometheus server not included).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// SnapshotBytes is the size of the answer as a snapshot file.
	SnapshotBytes int64 `json:"snapshot_bytes"`
	// Suggest is the runs of `suggest -f mesh --observed snapshot` on the mesh.
	Suggest []DiffRun `json:"suggest"`
	// SuggestScopes is the number of resource blocks suggest wrote.
	SuggestScopes int `json:"suggest_scopes"`
	// PlanScopes is the number of scopes planned with and without evidence, on
	// the mesh of that many services; the runs alternate, without first.
	PlanScopes  int       `json:"plan_scopes"`
	PlanWithout []PlanRun `json:"plan_without"`
	PlanWith    []PlanRun `json:"plan_with"`
	// PlanError is the first error of a failed plan.
	PlanError string `json:"plan_error,omitempty"`
}

// Profiles compares internal/bench's benchmarks built against a baseline
// revision ("before") with this tree ("after").
type Profiles struct {
	Services int `json:"services"`
	// Baseline is the revision measured as before; empty when none was given.
	Baseline string `json:"baseline"`
	// BaselineError is why the baseline could not be built.
	BaselineError string       `json:"baseline_error,omitempty"`
	Rows          []ProfileRow `json:"rows"`
	// The tops of go tool pprof of BenchmarkPredictAll, after and before.
	CPUTop         string `json:"cpu_top"`
	MemTop         string `json:"mem_top"`
	BaselineCPUTop string `json:"baseline_cpu_top,omitempty"`
	BaselineMemTop string `json:"baseline_mem_top,omitempty"`
}

// ProfileRow is one benchmark before and after.
type ProfileRow struct {
	Benchmark      string `json:"benchmark"`
	BeforeNs       Sample `json:"before_ns"`
	AfterNs        Sample `json:"after_ns"`
	BeforeRSSBytes int64  `json:"before_rss_bytes"`
	AfterRSSBytes  int64  `json:"after_rss_bytes"`
}

// WriteResults writes r as indented JSON.
func WriteResults(path string, r *Results) error {
	r.SchemaVersion = SchemaVersion
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadResults reads a results file strictly: an unknown field or another
// schema version is an error.
func ReadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v struct {
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d, this meshbench reads %d: render it with the meshbench of its commit", path, v.SchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
