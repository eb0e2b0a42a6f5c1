// Package provider wires meshscope into Terraform: schemas, models, plan-time
// computation and diagnostics. The domain work happens in internal/mesh,
// internal/scope and internal/predict.
package provider

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/istiod"
	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

var (
	_ provider.Provider = (*meshscopeProvider)(nil)
)

// Defaults of the provider configuration.
const (
	DefaultIstioVersion = istioconfig.DefaultVersion
	// DefaultReviewHostLimit is the most hosts a review element lists as added or removed.
	DefaultReviewHostLimit = 25
	// DefaultProxyWaitTimeout bounds wait_for_proxies.
	DefaultProxyWaitTimeout = 5 * time.Minute
)

// InventorySource adds objects to the inventory when the provider is configured.
// The offline `manifests` are one source; a live cluster is another kind that
// plugs in the same way.
type InventorySource interface {
	// Name says where the objects come from, for logs.
	Name() string
	// Load adds the source's objects to inv. Diagnostics should name the
	// provider attribute that configured the source.
	Load(ctx context.Context, inv *mesh.Inventory) diag.Diagnostics
}

// New returns a constructor of the meshscope provider, as providerserver.Serve wants it.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &meshscopeProvider{version: version}
	}
}

// NewWithSources returns a constructor of the meshscope provider that loads the
// given sources after the configured ones. Tests inject fake inventories here.
func NewWithSources(version string, sources ...InventorySource) func() provider.Provider {
	return func() provider.Provider {
		return &meshscopeProvider{version: version, sources: sources}
	}
}

// NewWithClock returns a constructor of the meshscope provider whose clock is now: observed
// traffic is evaluated at now() (to the minute). Tests that backfill a Prometheus evaluate where
// their samples end.
func NewWithClock(version string, now func() time.Time) func() provider.Provider {
	return func() provider.Provider {
		return &meshscopeProvider{version: version, now: now}
	}
}

type meshscopeProvider struct {
	version string
	// sources are loaded after the configured sources.
	sources []InventorySource
	// now is the clock; time.Now when nil.
	now func() time.Time
	// configured is the data of the last Configure that succeeded, for the protocol's
	// fast path (scopePlanServer), which plans outside the framework's resource calls.
	configured atomic.Pointer[providerData]
}

// providerData is handed to every resource and data source by Configure.
type providerData struct {
	// inv is nil while the inventory cannot be known (unknown manifests at plan time).
	inv         *mesh.Inventory
	predictOpts predict.Options
	scopeOpts   scope.Options
	// predictor predicts on inv as loaded.
	predictor *predict.Predictor
	// reviewer reviews each scope's plan against inv as loaded.
	reviewer *review.Reviewer
	// scopes records the workload scopes planned through this provider instance.
	scopes *scopeRegistry
	// applier applies Sidecars to the cluster; nil without a kubernetes block.
	applier SidecarApplier
	// reviewHostLimit is the most hosts each review element lists (review_host_limit).
	reviewHostLimit int
	// istiod reads istiod's debug endpoints for wait_for_proxies; nil without istiod_debug_url.
	istiod *istiod.Client
	// waitTimeout bounds wait_for_proxies (proxy_wait_timeout).
	waitTimeout time.Duration
	// evidence reads the observed traffic once; nil when none is configured or it is off.
	evidence *evidenceSource

	// liveMu guards liveInv and livePredictor: the inventory as this provider instance has
	// changed the cluster, the loaded one plus the Sidecars it applied and minus those it
	// deleted. Data sources read it, so that a read after the provider's own write sees that
	// write. Plans use inv and predictor, as loaded, so that a resource planned again during
	// apply gets the plan it had.
	liveMu        sync.Mutex
	liveInv       *mesh.Inventory
	livePredictor *predict.Predictor
}

// live returns the inventory and predictor with this provider instance's own writes.
func (d *providerData) live() (*mesh.Inventory, *predict.Predictor) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	if d.liveInv == nil {
		return d.inv, d.predictor
	}
	return d.liveInv, d.livePredictor
}

// wrote records a Sidecar this provider applied to the cluster.
func (d *providerData) wrote(sc *mesh.Sidecar) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	inv, pr := d.inv, d.predictor
	if d.liveInv != nil {
		inv, pr = d.liveInv, d.livePredictor
	}
	d.liveInv, d.livePredictor = inv.WithSidecars(sc), pr.WithSidecars(sc)
}

// deleted records a Sidecar this provider deleted from the cluster.
func (d *providerData) deleted(ns, name string) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	inv, pr := d.inv, d.predictor
	if d.liveInv != nil {
		inv, pr = d.liveInv, d.livePredictor
	}
	gone := func(sc *mesh.Sidecar) bool { return sc.Namespace == ns && sc.Name == name }
	d.liveInv, d.livePredictor = inv.WithoutSidecars(gone), pr.WithoutSidecars(gone)
}

// known reports whether the inventory is known.
func (d *providerData) known() bool { return d != nil && d.inv != nil }

// configuredData is the provider data handed to the Configure of a resource or data
// source (what names which, for the error): ok is false while there is none yet, as
// Terraform hands it over only after it calls the ConfigureProvider RPC, and when it
// is not the provider's.
func configuredData(pd any, what string, diags *diag.Diagnostics) (data *providerData, ok bool) {
	if pd == nil {
		return nil, false
	}
	data, ok = pd.(*providerData)
	if !ok {
		diags.AddError(
			"Unexpected "+what+" Configure Type",
			fmt.Sprintf("Expected *providerData, got: %T. Please report this issue to the provider developers.", pd),
		)
	}
	return data, ok
}

// resourceWithProviderData is embedded by every resource: its Configure keeps the
// provider's data in data.
type resourceWithProviderData struct {
	data *providerData
}

func (r *resourceWithProviderData) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if data, ok := configuredData(req.ProviderData, "Resource", &resp.Diagnostics); ok {
		r.data = data
	}
}

// dataSourceWithProviderData is embedded by every data source: its Configure keeps the
// provider's data in data.
type dataSourceWithProviderData struct {
	data *providerData
}

func (d *dataSourceWithProviderData) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if data, ok := configuredData(req.ProviderData, "Data Source", &resp.Diagnostics); ok {
		d.data = data
	}
}

// readsUnknownInventory is the start of a data source's Read: while the inventory is not
// known, it defers the read where Terraform allows it and otherwise fails it with an
// "Inventory Unknown" error of the given detail. It reports whether Read must stop.
func readsUnknownInventory(d *providerData, req datasource.ReadRequest, resp *datasource.ReadResponse, detail string) bool {
	if d.known() {
		return false
	}
	if req.ClientCapabilities.DeferralAllowed {
		resp.Deferred = &datasource.Deferred{Reason: datasource.DeferredReasonProviderConfigUnknown}
		return true
	}
	resp.Diagnostics.AddError("Inventory Unknown", detail)
	return true
}

func (p *meshscopeProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "meshscope"
	resp.Version = p.version
}

func (p *meshscopeProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The meshscope provider compiles declared service dependencies into Istio `Sidecar` " +
			"resources and predicts, at plan time, the Envoy clusters istiod pushes to each sidecar proxy. " +
			"It works offline from Kubernetes and Istio YAML given in `manifests`, or against a live cluster " +
			"configured in the `kubernetes` block.",
		Attributes: map[string]schema.Attribute{
			"manifests": schema.ListAttribute{
				MarkdownDescription: "The offline inventory: a list of multi-document Kubernetes and Istio YAML strings " +
					"(Namespaces, Services, Pods and workload controllers, ServiceEntries, DestinationRules, " +
					"VirtualServices, Sidecars and the `istio` mesh ConfigMap). Other kinds are skipped. " +
					"Typically `[for f in fileset(path.module, \"manifests/*.yaml\") : file(\"${path.module}/${f}\")]`.",
				ElementType: types.StringType,
				Optional:    true,
			},
			"istio_version": schema.StringAttribute{
				MarkdownDescription: "The Istio release whose istiod behaviour is predicted, as `MAJOR.MINOR`. " +
					"Defaults to `\"" + DefaultIstioVersion + "\"`.",
				Optional:   true,
				Validators: []validator.String{validators.IstioVersion()},
			},
			"root_namespace": schema.StringAttribute{
				MarkdownDescription: "The Istio root namespace. Defaults to `rootNamespace` of the `istio` ConfigMap " +
					"in `manifests`, else `" + mesh.DefaultRootNamespace + "`.",
				Optional:   true,
				Validators: []validator.String{validators.NamespaceName()},
			},
			"domain_suffix": schema.StringAttribute{
				MarkdownDescription: "The cluster DNS domain suffix. Defaults to `" + mesh.DefaultDomainSuffix + "`.",
				Optional:            true,
				Validators:          []validator.String{validators.DNSName()},
			},
			"system_hosts": schema.ListAttribute{
				MarkdownDescription: "Sidecar egress hosts added to every workload scope, in `namespace/dnsName` form. " +
					"Defaults to `[\"<root_namespace>/*\"]`, that is `[\"istio-system/*\"]`. An empty list adds none, " +
					"and every scope then warns that telemetry and tracing are at risk. A `~` prefix on the namespace " +
					"(`~kube-system/*`) excludes hosts, which Istio understands from " + istioconfig.EgressExclusionsSince.String() + " on: with an older " +
					"`istio_version` it is an error.",
				ElementType: types.StringType,
				Optional:    true,
				Validators: []validator.List{
					listvalidator.ValueStringsAre(validators.EgressHost()),
				},
			},
			"review_host_limit": schema.Int64Attribute{
				MarkdownDescription: "The most hosts each element of a workload scope's `review` lists in `added_hosts` and " +
					"`removed_hosts`, the first in sorted order; `added_host_count` and `removed_host_count` always count " +
					"them all, and risks are found on the full lists. Defaults to `" + fmt.Sprint(DefaultReviewHostLimit) + "`. " +
					"A scope's first plan on a mesh without Sidecars removes nearly every service of the mesh from each " +
					"workload it selects: listed in full, a thousand such scopes make a plan of a hundred megabytes that " +
					"no reviewer reads. `0` lists no hosts. The full delta of a proxy is the `meshscope_proxy_clusters` " +
					"data source, or the `diff` command.",
				Optional:   true,
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"istiod_debug_url": schema.StringAttribute{
				MarkdownDescription: "The base URL of istiod's HTTP debug endpoints, which `wait_for_proxies` of " +
					"`meshscope_workload_scope` polls: for example `http://127.0.0.1:8080` while " +
					"`kubectl -n istio-system port-forward deploy/istiod 8080` runs. istiod serves them on its HTTP " +
					"port (8080) when `ENABLE_DEBUG_ON_HTTP` is on, its default. Leave it out when no scope waits.",
				Optional: true,
			},
			"proxy_wait_timeout": schema.StringAttribute{
				MarkdownDescription: "How long `wait_for_proxies` waits for the proxies of one scope, as a Go duration " +
					"(`90s`, `5m`). Defaults to `" + DefaultProxyWaitTimeout.String() + "`.",
				Optional: true,
			},
		},
		Blocks: map[string]schema.Block{
			"kubernetes": kubernetesBlockSchema(),
			"prometheus": prometheusBlockSchema(),
		},
	}
	for name, a := range evidenceAttributes() {
		resp.Schema.Attributes[name] = a
	}
}

func (p *meshscopeProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerConfigModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	data := &providerData{scopes: newScopeRegistry(), reviewHostLimit: DefaultReviewHostLimit, waitTimeout: DefaultProxyWaitTimeout}
	defer func() {
		if !resp.Diagnostics.HasError() {
			p.configured.Store(data)
		}
	}()
	resp.Diagnostics.Append(configureWait(cfg, data)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !cfg.ReviewHosts.IsNull() && !cfg.ReviewHosts.IsUnknown() {
		data.reviewHostLimit = int(cfg.ReviewHosts.ValueInt64())
	}
	data.predictOpts = predict.Options{
		IstioVersion: stringOr(cfg.IstioVersion, DefaultIstioVersion),
		DomainSuffix: stringOr(cfg.DomainSuffix, mesh.DefaultDomainSuffix),
	}
	data.scopeOpts = scope.Options{DomainSuffix: data.predictOpts.DomainSuffix, IstioVersion: data.predictOpts.IstioVersion}

	resp.DataSourceData = data
	resp.ResourceData = data

	sources, known, ds := p.configuredSources(ctx, cfg, data)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !known || cfg.IstioVersion.IsUnknown() || cfg.DomainSuffix.IsUnknown() ||
		cfg.RootNamespace.IsUnknown() || !fullyKnown(cfg.SystemHosts) || cfg.ReviewHosts.IsUnknown() {
		// Values that depend on the inventory stay unknown until apply.
		tflog.Debug(ctx, "meshscope inventory is not known yet; plan-time values stay unknown")
		return
	}

	inv := mesh.New()
	for _, src := range append(sources, p.sources...) {
		start := time.Now()
		resp.Diagnostics.Append(src.Load(ctx, inv)...)
		// Info level: a plan over a large inventory is otherwise silent while it loads.
		tflog.Info(ctx, "loaded meshscope inventory source", map[string]any{
			"source": src.Name(), "objects": inv.ObjectCount(), "duration": time.Since(start).Round(time.Millisecond).String(),
		})
	}
	if resp.Diagnostics.HasError() {
		return
	}

	if !cfg.RootNamespace.IsNull() {
		inv.Mesh.RootNamespace = cfg.RootNamespace.ValueString()
	}
	if cfg.SystemHosts.IsNull() {
		data.scopeOpts.SystemHosts = []string{inv.Mesh.RootNamespace + "/*"}
	} else {
		hosts, diags := stringList(ctx, cfg.SystemHosts)
		resp.Diagnostics.Append(diags...)
		data.scopeOpts.SystemHosts = hosts
		// What the target Istio release accepts, for example "~" exclusions from 1.31 on.
		for _, pb := range scope.ValidateSystemHosts(hosts, data.scopeOpts.IstioVersion) {
			p := path.Root("system_hosts").AtListIndex(pb.Index)
			if pb.Warning {
				resp.Diagnostics.AddAttributeWarning(p, pb.Summary, pb.Detail)
			} else {
				resp.Diagnostics.AddAttributeError(p, pb.Summary, pb.Detail)
			}
		}
		if resp.Diagnostics.HasError() {
			return
		}
	}

	indexStart := time.Now()
	pr, err := predict.New(inv, data.predictOpts)
	tflog.Info(ctx, "indexed meshscope inventory for prediction", map[string]any{"duration": time.Since(indexStart).Round(time.Millisecond).String()})
	if err != nil {
		resp.Diagnostics.AddAttributeError(
			path.Root("manifests"),
			"Inventory Not Usable",
			"The inventory loaded from the provider configuration cannot be indexed for prediction. "+
				"Fix the object named below in the manifests.\n\n"+
				fmt.Sprintf("Original Error: %s", err),
		)
		return
	}
	data.inv = inv
	data.predictor = pr
	data.reviewer = review.NewReviewer(inv, pr, review.Options{DomainSuffix: data.predictOpts.DomainSuffix, Scope: data.scopeOpts})

	if !cfg.Prometheus.known() || cfg.ObservedTrafficFile.IsUnknown() || cfg.ObservedTraffic.IsUnknown() {
		tflog.Debug(ctx, "meshscope observed traffic settings are not known yet; scopes are not checked against traffic")
		return
	}
	ev, ds := configureEvidence(ctx, cfg, data.predictOpts.DomainSuffix)
	resp.Diagnostics.Append(ds...)
	if ev != nil && p.now != nil {
		ev.src.Now = p.now
	}
	data.evidence = ev

	tflog.Info(ctx, "configured meshscope inventory", map[string]any{
		"namespaces":     len(inv.NamespaceNames()),
		"services":       len(inv.Services),
		"workloads":      len(inv.Workloads),
		"sidecars":       len(inv.Sidecars),
		"root_namespace": inv.Mesh.RootNamespace,
		"istio_version":  data.predictOpts.IstioVersion,
	})
}

// configuredSources returns the inventory sources the configuration names, and
// whether all of them are known: the live cluster of the kubernetes block first,
// then the manifests, which add to it.
func (p *meshscopeProvider) configuredSources(ctx context.Context, cfg providerConfigModel, data *providerData) ([]InventorySource, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	if !fullyKnown(cfg.Manifests) || !cfg.Kubernetes.known() {
		return nil, false, diags
	}
	var sources []InventorySource
	if cfg.Kubernetes.set() {
		kcfg, ds := cfg.Kubernetes.config(ctx)
		diags.Append(ds...)
		if diags.HasError() {
			return nil, true, diags
		}
		client := kube.New(kcfg)
		data.applier = client
		root := mesh.DefaultRootNamespace
		if !cfg.RootNamespace.IsNull() && !cfg.RootNamespace.IsUnknown() {
			root = cfg.RootNamespace.ValueString()
		}
		sources = append(sources, clusterSource{client: client, root: root})
	}
	var docs []string
	for _, v := range cfg.Manifests.Elements() {
		s, ok := v.(types.String)
		if !ok {
			continue
		}
		docs = append(docs, s.ValueString())
	}
	return append(sources, manifestsSource{docs: docs}), true, diags
}

func (p *meshscopeProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewWorkloadScopeResource,
		NewKustomizeOverlayResource,
	}
}

func (p *meshscopeProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewProxyClustersDataSource,
		NewObservedDependenciesDataSource,
		NewWorkloadsDataSource,
	}
}

// manifestsSource is the offline inventory of the `manifests` attribute.
type manifestsSource struct {
	docs []string
}

func (s manifestsSource) Name() string { return "manifests" }

func (s manifestsSource) Load(_ context.Context, inv *mesh.Inventory) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, doc := range s.docs {
		source := fmt.Sprintf("manifests[%d]", i)
		if err := inv.AddYAML(source, []byte(doc)); err != nil {
			diags.Append(manifestDiagnostic(path.Root("manifests").AtListIndex(i), source, err))
		}
	}
	return diags
}

// stringOr returns the string value, or def when it is null or empty.
func stringOr(v types.String, def string) string {
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return def
	}
	return v.ValueString()
}

// configureWait reads istiod_debug_url and proxy_wait_timeout.
func configureWait(cfg providerConfigModel, data *providerData) diag.Diagnostics {
	var diags diag.Diagnostics
	if !cfg.IstiodDebug.IsNull() && !cfg.IstiodDebug.IsUnknown() {
		c, err := istiod.New(cfg.IstiodDebug.ValueString(), nil)
		if err != nil {
			diags.AddAttributeError(path.Root("istiod_debug_url"), "Invalid istiod Debug URL",
				fmt.Sprintf("The value %q is not a base URL of istiod's debug endpoints. Use the form "+
					"\"http://127.0.0.1:8080\".\n\nOriginal Error: %s", cfg.IstiodDebug.ValueString(), err))
		}
		data.istiod = c
	}
	if !cfg.WaitTimeout.IsNull() && !cfg.WaitTimeout.IsUnknown() {
		d, err := time.ParseDuration(cfg.WaitTimeout.ValueString())
		if err != nil || d <= 0 {
			diags.AddAttributeError(path.Root("proxy_wait_timeout"), "Invalid Proxy Wait Timeout",
				fmt.Sprintf("The value %q is not a positive duration. Use a Go duration such as \"90s\" or \"5m\".",
					cfg.WaitTimeout.ValueString()))
		}
		data.waitTimeout = d
	}
	return diags
}
