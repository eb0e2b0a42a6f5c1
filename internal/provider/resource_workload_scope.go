package provider

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

var (
	_ resource.Resource               = (*workloadScopeResource)(nil)
	_ resource.ResourceWithConfigure  = (*workloadScopeResource)(nil)
	_ resource.ResourceWithModifyPlan = (*workloadScopeResource)(nil)
)

// NewWorkloadScopeResource returns the meshscope_workload_scope resource.
func NewWorkloadScopeResource() resource.Resource {
	return &workloadScopeResource{}
}

type workloadScopeResource struct {
	resourceWithProviderData
}

// ingressProtocols are the Sidecar ingress listener protocols Istio accepts.
var ingressProtocols = istioconfig.SidecarListenerProtocols()

func (r *workloadScopeResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workload_scope"
}

func (r *workloadScopeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Declares what one workload (or a whole namespace) calls, and compiles it into the smallest " +
			"Istio `Sidecar` that still lets every declared call through. The `manifest`, `egress_hosts` and " +
			"`expected_clusters` are computed at plan time from the provider's inventory, so a reviewer sees the " +
			"Sidecar and the Envoy cluster count the workload will get before anything is applied. With no cluster " +
			"configured, the scope lives in the Terraform state only; feed `manifest` to outputs or to GitOps.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The Sidecar's `namespace/name`.",
				Computed:            true,
			},
			"namespace": schema.StringAttribute{
				MarkdownDescription: "The namespace of the workload and of the Sidecar. Changing it replaces the scope.",
				Required:            true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{validators.NamespaceName()},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "The Sidecar's `metadata.name`. Defaults to a deterministic name derived from " +
					"`workload_selector` (or `default` for a namespace-wide scope). Changing it replaces the scope.",
				Optional:   true,
				Computed:   true,
				Validators: []validator.String{validators.ObjectName()},
			},
			"workload_selector": schema.MapAttribute{
				MarkdownDescription: "Pod labels that select the workload, like the Sidecar's `workloadSelector.labels`. " +
					"Leave it out for the namespace default, which applies to every workload of the namespace " +
					"that no selecting Sidecar covers. It selects every pod whose labels include these; the " +
					"`meshscope_proxy_clusters` data source takes one pod's full `labels` instead.",
				ElementType: types.StringType,
				Optional:    true,
				Validators:  []validator.Map{validators.Labels()},
			},
			"dependencies": schema.SetNestedAttribute{
				MarkdownDescription: "The services the workload calls. The provider's `system_hosts` are always added.",
				Optional:            true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"service": schema.StringAttribute{
							MarkdownDescription: "A Kubernetes service as `name.namespace`, a bare `name` in the scope's " +
								"namespace, or `name.namespace.svc.cluster.local`; a ServiceEntry host such as " +
								"`api.example.com`; or a whole namespace as `namespace/*`.",
							Required:   true,
							Validators: []validator.String{validators.DependencyHost()},
						},
						"ports": schema.SetAttribute{
							MarkdownDescription: "The service ports called. When every dependency lists its ports, the " +
								"Sidecar is port-level and the proxy gets only those clusters. Leave it out to allow every port.",
							ElementType: types.Int64Type,
							Optional:    true,
							Validators: []validator.Set{
								setvalidator.ValueInt64sAre(int64validator.Between(1, 65535)),
							},
						},
					},
				},
			},
			"ingress": schema.ListNestedAttribute{
				MarkdownDescription: "Sidecar ingress listeners: the ports the workload serves on.",
				Optional:            true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"port": schema.Int64Attribute{
							MarkdownDescription: "The port the listener accepts traffic on.",
							Required:            true,
							Validators:          []validator.Int64{int64validator.Between(1, 65535)},
						},
						"protocol": schema.StringAttribute{
							MarkdownDescription: "The listener protocol: one of `" + strings.Join(ingressProtocols, "`, `") + "`.",
							Required:            true,
							Validators:          []validator.String{stringvalidator.OneOf(ingressProtocols...)},
						},
						"default_endpoint": schema.StringAttribute{
							MarkdownDescription: "Where the sidecar forwards the traffic: `127.0.0.1:PORT`, " +
								"`0.0.0.0:PORT` or `unix:///path`.",
							Optional:   true,
							Validators: []validator.String{validators.DefaultEndpoint()},
						},
					},
				},
			},
			"outbound_traffic_policy": schema.StringAttribute{
				MarkdownDescription: "The Sidecar's outbound traffic policy: `ALLOW_ANY` or `REGISTRY_ONLY`. " +
					"Leave it out to inherit the mesh config.",
				Optional:   true,
				Validators: []validator.String{stringvalidator.OneOf("ALLOW_ANY", "REGISTRY_ONLY")},
			},
			"manifest": schema.StringAttribute{
				MarkdownDescription: "The compiled `networking.istio.io/v1` Sidecar as YAML, byte-identical from run to run. " +
					"Known at plan time.",
				Computed: true,
			},
			"egress_hosts": schema.ListAttribute{
				MarkdownDescription: "The Sidecar's egress hosts, sorted. Known at plan time.",
				ElementType:         types.StringType,
				Computed:            true,
			},
			"expected_clusters": schema.Int64Attribute{
				MarkdownDescription: "The number of Envoy CDS clusters istiod is predicted to push to the selected " +
					"workloads once the Sidecar applies: the largest over the workloads of the inventory this Sidecar " +
					"governs (a namespace default yields to selecting Sidecars), or over those it selects, or for a pod " +
					"with the selector labels when the inventory has none. Known at plan time, so an update shows " +
					"`expected_clusters = 19 -> 13`.",
				Computed: true,
			},
			"max_clusters": schema.Int64Attribute{
				MarkdownDescription: "A cluster budget. The plan fails with an error on this attribute, naming the " +
					"workload and its count, when a workload this scope governs would hold more Envoy CDS clusters " +
					"than this once the Sidecar applies. Leave it out for no budget. To assert a budget across " +
					"several scopes, use a Terraform `check` block over their `expected_clusters`.",
				Optional:   true,
				Validators: []validator.Int64{int64validator.AtLeast(1)},
			},
			"wait_for_proxies": schema.BoolAttribute{
				MarkdownDescription: "When `true`, apply ends only once every proxy connected to istiod that this " +
					"Sidecar governs has been pushed the new scope over CDS and has acknowledged that push, as " +
					"istiod's debug endpoints (`/debug/adsz`, `/debug/sidecarz`, `/debug/syncz`) report it. Needs the " +
					"provider's `kubernetes` block and `istiod_debug_url`; the wait lasts at most `proxy_wait_timeout`. " +
					"A proxy that does not acknowledge in time fails the apply with its name and what it lacks; the " +
					"Sidecar stays applied and in the state (a new scope is marked tainted, so the next apply waits " +
					"again). Defaults to `false`.",
				Optional: true,
			},
			"review": schema.ListNestedAttribute{
				MarkdownDescription: "The plan-time review of the change, one element per workload of the inventory that " +
					"the scope selects and that runs sidecars (`meshscope_workloads` lists the others and why), sorted by workload. `before` predicts the workload under the inventory as it " +
					"is (with the Sidecars the inventory holds), `after` under this scope's Sidecar instead. Empty when " +
					"no workload of the inventory is selected. Known at plan time.",
				Computed: true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"workload": schema.StringAttribute{
							MarkdownDescription: "The workload as `namespace/Kind/name`, as Istio names it, for example `foo/Deployment/test-app`.",
							Computed:            true,
						},
						"proxies": schema.StringAttribute{
							MarkdownDescription: "How many sidecar proxies (pods) the workload runs, each with these clusters: `2`, " +
								"a range `2-10` from a HorizontalPodAutoscaler, or `one per node` for a DaemonSet.",
							Computed: true,
						},
						"before": schema.Int64Attribute{
							MarkdownDescription: "The number of CDS clusters the workload holds under the inventory as it is.",
							Computed:            true,
						},
						"after": schema.Int64Attribute{
							MarkdownDescription: "The number of CDS clusters the workload holds once this scope's Sidecar applies.",
							Computed:            true,
						},
						"listeners_before": schema.Int64Attribute{
							MarkdownDescription: "The number of LDS listeners each of the workload's proxies holds under the inventory as it is, " +
								"as `istioctl proxy-config listener` lists them (the `meshscope_proxy_clusters` data source names them).",
							Computed: true,
						},
						"listeners_after": schema.Int64Attribute{
							MarkdownDescription: "The number of LDS listeners each of the workload's proxies holds once this scope's Sidecar applies.",
							Computed:            true,
						},
						"routes_before": schema.Int64Attribute{
							MarkdownDescription: "The number of RDS route configurations each of the workload's proxies holds under the inventory as it is, " +
								"as `istioctl proxy-config route` lists them.",
							Computed: true,
						},
						"routes_after": schema.Int64Attribute{
							MarkdownDescription: "The number of RDS route configurations each of the workload's proxies holds once this scope's Sidecar applies.",
							Computed:            true,
						},
						"virtual_hosts_before": schema.Int64Attribute{
							MarkdownDescription: "The number of virtual hosts in those route configurations under the inventory as it is.",
							Computed:            true,
						},
						"virtual_hosts_after": schema.Int64Attribute{
							MarkdownDescription: "The number of virtual hosts in those route configurations once this scope's Sidecar applies.",
							Computed:            true,
						},
						"added_hosts": schema.ListAttribute{
							MarkdownDescription: "The service hosts (FQDNs) the workload gains outbound clusters for, sorted: " +
								"the first `review_host_limit` of them (a provider setting, 25 by default).",
							ElementType: types.StringType,
							Computed:    true,
						},
						"removed_hosts": schema.ListAttribute{
							MarkdownDescription: "The service hosts (FQDNs) the workload loses every outbound cluster for, sorted: " +
								"the first `review_host_limit` of them.",
							ElementType: types.StringType,
							Computed:    true,
						},
						"added_host_count": schema.Int64Attribute{
							MarkdownDescription: "The number of hosts the workload gains, all of them, however many `added_hosts` lists.",
							Computed:            true,
						},
						"removed_host_count": schema.Int64Attribute{
							MarkdownDescription: "The number of hosts the workload loses, all of them, however many `removed_hosts` lists.",
							Computed:            true,
						},
						"observed_missing": schema.ListAttribute{
							MarkdownDescription: "With observed traffic (the provider's `prometheus` block or `observed_traffic_file`): " +
								"the destinations the workload called over the window that it would have no cluster for under this " +
								"scope, as `host:port` (or `host` when the metrics carry no port), sorted: the first " +
								"`review_host_limit` of them. Each is also a plan warning (an error with `observed_traffic = \"error\"`) " +
								"that names the dependency to add. Null when no observed traffic was checked.",
							ElementType: types.StringType,
							Computed:    true,
						},
						"observed_missing_count": schema.Int64Attribute{
							MarkdownDescription: "The number of destinations in `observed_missing`, all of them. Null when no observed traffic was checked.",
							Computed:            true,
						},
						"unobserved_dependencies": schema.ListAttribute{
							MarkdownDescription: "The declared dependencies, as written, that the workload did not call over the window: " +
								"candidates to drop, not errors (a call rarer than the window, such as a monthly job, is not seen). " +
								"Null when no observed traffic was checked.",
							ElementType: types.StringType,
							Computed:    true,
						},
						"risks": schema.ListAttribute{
							MarkdownDescription: "Risky tightenings that the mesh configuration itself points out: a dropped host " +
								"that a VirtualService still in scope routes to, or the loss of every service of the root " +
								"namespace. Each is also a plan warning.",
							ElementType: types.StringType,
							Computed:    true,
						},
					},
				},
			},
		},
	}
}

func (r *workloadScopeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	// Plan does not need to be modified when the resource is being destroyed.
	if req.Plan.Raw.IsNull() {
		return
	}

	// Create and update are planned alike, and there is no no-op shortcut: the
	// inventory can change while the configuration does not, and the computed
	// values must follow it. They are a pure function of both, so an unchanged
	// inventory and configuration give back exactly the state, an empty plan.

	var plan workloadScopeResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	var state *workloadScopeResourceModel
	if !req.State.Raw.IsNull() {
		state = &workloadScopeResourceModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}

	// The name is an input when configured; otherwise the compiler derives it.
	var configName types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("name"), &configName)...)
	if resp.Diagnostics.HasError() {
		return
	}

	replace, diags := r.plan(ctx, &plan, state, configName)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.RequiresReplace = append(resp.RequiresReplace, replace...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// plan is ModifyPlan without the framework's values: it completes the planned scope
// from the configured name, the prior state (nil on create) and the inventory, and
// returns the attributes whose change replaces the scope. Both ModifyPlan and the
// protocol's fast path (scopePlanServer) plan through it.
func (r *workloadScopeResource) plan(ctx context.Context, plan *workloadScopeResourceModel,
	state *workloadScopeResourceModel, configName types.String) ([]path.Path, diag.Diagnostics) {
	plan.Name = configName

	// Only known inputs are used. A value that cannot be known yet stays unknown.
	if !r.data.known() || !plan.inputsKnown() {
		plan.setComputedUnknown()
		// A derived name depends on the selector only: keep it while that is unchanged.
		if configName.IsNull() && state != nil && sameSelection(ctx, *plan, *state) {
			plan.Name = state.Name
			plan.ID = state.ID
		}
		return nil, nil
	}

	diags := r.checkWait(*plan)
	diags.Append(r.compile(ctx, plan)...)
	if diags.HasError() {
		return nil, diags
	}

	// On update, the Sidecar's name is its identity: a new name is a new object.
	if state != nil && !state.Name.IsNull() && !state.Name.IsUnknown() && !state.Name.Equal(plan.Name) {
		return []path.Path{path.Root("name")}, diags
	}
	return nil, diags
}

func (r *workloadScopeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State)...)
}

func (r *workloadScopeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if r.data == nil {
		return
	}
	var state workloadScopeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var (
		exists bool
		diags  diag.Diagnostics
	)
	switch {
	case r.data.applier == nil:
		// Without a cluster the scope lives in the state only: changes of the inventory
		// show up in the next plan, which recomputes everything. Only a scope just imported
		// from the manifests is read, to fill in its declarations.
		if !state.Manifest.IsNull() || !r.data.known() {
			return
		}
		exists, diags = r.importFromInventory(ctx, &state)
	case state.Manifest.IsNull():
		// Just imported: only namespace and name are known.
		exists, diags = r.importFromCluster(ctx, &state)
	default:
		exists, diags = r.readFromCluster(ctx, &state)
	}
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !exists {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *workloadScopeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State)...)
}

// apply is Create and Update alike: it completes the plan, applies the Sidecar and
// records it in the state, then waits for the proxies.
func (r *workloadScopeResource) apply(ctx context.Context, planned tfsdk.Plan, state *tfsdk.State) diag.Diagnostics {
	var plan workloadScopeResourceModel
	diags := planned.Get(ctx, &plan)
	if diags.HasError() {
		return diags
	}

	diags.Append(r.completeAtApply(ctx, &plan)...)
	if diags.HasError() {
		return diags
	}

	// With a kubernetes block, server-side apply the Sidecar; without one, the
	// scope lives in the Terraform state only.
	diags.Append(r.applyToCluster(ctx, &plan)...)
	if diags.HasError() {
		return diags
	}
	// The Sidecar is applied: it goes into the state even when the wait fails.
	diags.Append(state.Set(ctx, &plan)...)
	diags.Append(r.waitForProxies(ctx, &plan)...)
	return diags
}

func (r *workloadScopeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	// Without a cluster there is nothing outside the state; the framework removes the resource from it.
	var state workloadScopeResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.deleteFromCluster(ctx, &state)...)
}

// compile resolves the scope's declaration against the inventory, checks it for
// conflicts and fills in the computed attributes. It is a pure function of the
// known inputs and the inventory.
func (r *workloadScopeResource) compile(ctx context.Context, m *workloadScopeResourceModel) diag.Diagnostics {
	return r.compileScope(ctx, m, true)
}

// compileScope is compile. Without claim, the scope is not recorded among the scopes this
// configuration plans: an import compiles the Sidecar it reads, which the configuration may
// then change under the same name.
func (r *workloadScopeResource) compileScope(ctx context.Context, m *workloadScopeResourceModel, claim bool) diag.Diagnostics {
	var diags diag.Diagnostics
	decl, deps, ds := m.declaration(ctx)
	diags.Append(ds...)
	if diags.HasError() {
		return diags
	}

	res, problems := scope.Compile(r.data.inv, decl, r.data.scopeOpts)
	addProblems(&diags, problems, deps)
	if diags.HasError() {
		return diags
	}
	if res == nil || res.Sidecar == nil {
		diags.AddError("Scope Not Compiled",
			fmt.Sprintf("The scope %s in namespace %q produced no Sidecar and no error. "+
				"Please report this issue to the provider developers.", decl.Name, decl.Namespace))
		return diags
	}

	// Conflicts with other scopes of this configuration, then with the inventory's Sidecars.
	if claim {
		clashes := r.data.scopes.claim(r.data.inv, decl.Namespace, plannedScope{
			Name: res.Name, Selector: decl.Selector, Fingerprint: res.Manifest,
		})
		for _, c := range clashes {
			addClash(&diags, decl, res.Name, c)
		}
	}
	addProblems(&diags, scope.Conflicts(r.data.inv, res.Sidecar), deps)
	if diags.HasError() {
		return diags
	}

	// The review of every workload the scope selects, against the observed traffic when there is some.
	// The risks come first, then what the evidence says about itself, then its findings.
	var ev *traffic.Evidence
	var evDiags diag.Diagnostics
	if src := r.data.evidence; src != nil {
		ev, evDiags = src.get(ctx, r.data.inv)
	}
	rv := r.data.reviewer.Scope(decl, res, ev)
	addNoSidecar(&diags, rv, decl)
	addRisks(&diags, rv.Workloads, scopeWarned(problems), r.data.predictOpts.DomainSuffix)
	addUnreached(&diags, rv.Workloads, deps)
	diags.Append(evDiags...)
	if ev != nil {
		addObserved(&diags, r.data.evidence, ev.Span(), rv.Workloads, r.data.reviewHostLimit)
	}
	checkBudget(&diags, m.MaxClusters, rv, decl)
	if diags.HasError() {
		return diags
	}

	tflog.Debug(ctx, "compiled workload scope", map[string]any{
		"id": decl.Namespace + "/" + res.Name, "egress_hosts": strings.Join(res.EgressHosts, ","),
		"expected_clusters": rv.ExpectedClusters, "reviewed_workloads": len(rv.Workloads),
	})
	m.setCompiled(res, rv, r.data.reviewHostLimit)
	return diags
}

// completeAtApply computes what the plan left unknown, which happens only when
// the final plan still lacked the inventory.
func (r *workloadScopeResource) completeAtApply(ctx context.Context, m *workloadScopeResourceModel) diag.Diagnostics {
	if !m.Manifest.IsUnknown() && !m.ExpectedClusters.IsUnknown() && !m.EgressHosts.IsUnknown() &&
		!m.Review.IsUnknown() && !m.Name.IsUnknown() {
		return nil
	}
	var diags diag.Diagnostics
	if !r.data.known() {
		diags.AddError("Inventory Unknown At Apply",
			"The provider's manifests were still unknown when the scope was applied, so its Sidecar cannot be compiled. "+
				"Make the manifests known at plan time (for example from files) or apply in two steps with -target.")
		return diags
	}
	if m.Name.IsUnknown() {
		m.Name = types.StringNull()
	}
	return r.compile(ctx, m)
}

// sameSelection reports whether the plan selects what the state selected, so that
// a derived name can be carried over while other values are still unknown.
func sameSelection(ctx context.Context, plan, state workloadScopeResourceModel) bool {
	if !fullyKnown(plan.WorkloadSelector) || !fullyKnown(plan.Namespace) {
		return false
	}
	a, d1 := plan.selector(ctx)
	b, d2 := state.selector(ctx)
	if d1.HasError() || d2.HasError() || !maps.Equal(a, b) {
		return false
	}
	return plan.Namespace.Equal(state.Namespace)
}

// addProblems maps compiler problems onto the scope's attributes. deps[i] is the
// dependencies set element behind Declaration.Dependencies[i].
func addProblems(diags *diag.Diagnostics, problems []scope.Problem, deps []attr.Value) {
	for _, pb := range problems {
		if pb.Attribute == scope.AttrSystemHosts {
			// The provider's attribute, which the provider's Configure checks first:
			// reported on the scope, as the resource has no such attribute.
			addSystemHostsProblem(diags, pb)
			continue
		}
		pb.Detail += remedy(pb)
		p, ok := problemPath(pb, deps)
		switch {
		case !ok && pb.Warning:
			diags.AddWarning(pb.Summary, pb.Detail)
		case !ok:
			diags.AddError(pb.Summary, pb.Detail)
		case pb.Warning:
			diags.AddAttributeWarning(p, pb.Summary, pb.Detail)
		default:
			diags.AddAttributeError(p, pb.Summary, pb.Detail)
		}
	}
}

// remedy is what mends a compiler problem whose fix depends on how the inventory is given: in
// Terraform, through the provider's manifests.
func remedy(pb scope.Problem) string {
	switch {
	case pb.Code == scope.CodeUnknownNamespace && pb.Attribute == scope.AttrNamespace:
		return " Add its Namespace manifest (or objects in it) to the provider's manifests, or fix the name."
	case pb.Code == scope.CodeUnknownService:
		return " Add the service's manifest to the provider's manifests, or fix the name."
	}
	return ""
}

// addSystemHostsProblem reports a problem of the provider's system_hosts on the scope.
func addSystemHostsProblem(diags *diag.Diagnostics, pb scope.Problem) {
	detail := fmt.Sprintf("In the provider's system_hosts[%d]: %s", pb.Index, pb.Detail)
	if pb.Warning {
		diags.AddWarning(pb.Summary, detail)
		return
	}
	diags.AddError(pb.Summary, detail)
}

// scopeWarned reports whether the compiler warned about the scope as a whole:
// that it imports nothing from the mesh root namespace.
func scopeWarned(problems []scope.Problem) bool {
	for _, pb := range problems {
		if pb.Code == scope.CodeSystemHostsMissing {
			return true
		}
	}
	return false
}

// problemPath returns the attribute path a problem belongs to.
func problemPath(pb scope.Problem, deps []attr.Value) (path.Path, bool) {
	if pb.Attribute == "" {
		return path.Empty(), false
	}
	p := path.Root(pb.Attribute)
	switch pb.Attribute {
	case scope.AttrDependencies:
		if pb.Index >= 0 && pb.Index < len(deps) {
			p = p.AtSetValue(deps[pb.Index])
		}
	case scope.AttrIngress:
		if pb.Index >= 0 {
			p = p.AtListIndex(pb.Index)
		}
	case scope.AttrWorkloadSelector:
		if pb.Key != "" {
			p = p.AtMapKey(pb.Key)
		}
	}
	return p, true
}

// addClash reports a scope of this configuration that selects what this one selects.
func addClash(diags *diag.Diagnostics, decl scope.Declaration, name string, c scopeClash) {
	if len(decl.Selector) == 0 && len(c.Other.Selector) == 0 {
		diags.AddAttributeError(path.Root("workload_selector"),
			"Conflicting Namespace Default Sidecar",
			fmt.Sprintf("This scope (Sidecar \"%s/%s\") and the scope \"%s/%s\" both have no workload_selector: both "+
				"would be the namespace default Sidecar of %q. Istio applies only the oldest selector-less Sidecar in a "+
				"namespace (istioctl analyze IST0111). Merge the two scopes, or give one a workload_selector.",
				decl.Namespace, name, decl.Namespace, c.Other.Name, decl.Namespace))
		return
	}
	if c.SameName {
		diags.AddAttributeError(path.Root("name"),
			"Duplicate Scope Name",
			fmt.Sprintf("Another meshscope_workload_scope also compiles to the Sidecar \"%s/%s\" (selector %s), "+
				"with a different declaration. Give one of the two scopes its own `name`, or merge them.",
				decl.Namespace, name, formatSelector(c.Other.Selector)))
		return
	}
	what := fmt.Sprintf("every pod labelled %s", formatSelector(unionLabels(decl.Selector, c.Other.Selector)))
	if c.Workload != "" {
		what = "the " + c.Workload
	}
	diags.AddAttributeError(path.Root("workload_selector"),
		"Workload Selected By Two Scopes",
		fmt.Sprintf("This scope (Sidecar \"%s/%s\", selector %s) and the scope \"%s/%s\" (selector %s) both select %s "+
			"in namespace %q. Istio applies one Sidecar per workload and ignores the other (istioctl analyze IST0110). "+
			"Narrow workload_selector so that each workload is selected by one scope, or merge the two scopes.",
			decl.Namespace, name, formatSelector(decl.Selector), decl.Namespace, c.Other.Name,
			formatSelector(c.Other.Selector), what, decl.Namespace))
}

func unionLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
