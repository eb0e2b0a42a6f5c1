package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

var (
	_ datasource.DataSource              = (*observedDependenciesDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*observedDependenciesDataSource)(nil)
)

// NewObservedDependenciesDataSource returns the meshscope_observed_dependencies data source.
func NewObservedDependenciesDataSource() datasource.DataSource {
	return &observedDependenciesDataSource{}
}

type observedDependenciesDataSource struct {
	dataSourceWithProviderData
}

// observedDependenciesModel is the meshscope_observed_dependencies data source.
type observedDependenciesModel struct {
	Namespace        types.String `tfsdk:"namespace"`
	WorkloadSelector types.Map    `tfsdk:"workload_selector"` //< types.String
	Workload         types.String `tfsdk:"workload"`
	Workloads        types.List   `tfsdk:"workloads"`    //< types.String
	Dependencies     types.Set    `tfsdk:"dependencies"` //< dependencyModel
	Calls            types.List   `tfsdk:"calls"`        //< observedCallModel
	Window           types.String `tfsdk:"window"`
}

// observedCallModel is one element of meshscope_observed_dependencies.calls.
type observedCallModel struct {
	Workload    types.String `tfsdk:"workload"`
	Host        types.String `tfsdk:"host"`
	Port        types.Int64  `tfsdk:"port"`
	Protocol    types.String `tfsdk:"protocol"`
	Count       types.Int64  `tfsdk:"count"`
	Unit        types.String `tfsdk:"unit"`
	Class       types.String `tfsdk:"class"`
	Passthrough types.Bool   `tfsdk:"passthrough"`
	Dependency  types.String `tfsdk:"dependency"`
}

var observedCallType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"workload": types.StringType, "host": types.StringType, "port": types.Int64Type, "protocol": types.StringType,
	"count": types.Int64Type, "unit": types.StringType, "class": types.StringType, "passthrough": types.BoolType,
	"dependency": types.StringType,
}}

// dependencyType is the object type of a workload scope's dependencies element.
var dependencyType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"service": types.StringType,
	"ports":   types.SetType{ElemType: types.Int64Type},
}}

func (d *observedDependenciesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_observed_dependencies"
}

func (d *observedDependenciesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The services a workload really called over the provider's observed-traffic window (its " +
			"`prometheus` block or `observed_traffic_file`), as dependencies in exactly the shape " +
			"`meshscope_workload_scope` takes: `dependencies = data.meshscope_observed_dependencies.x.dependencies`. " +
			"Calls that leave the registry (through PassthroughCluster to hosts no ServiceEntry holds, or into " +
			"BlackHoleCluster) are listed in `calls` but never become dependencies. Evidence only covers the window: " +
			"a call rarer than it (a monthly job) is not seen.",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{
				MarkdownDescription: "The workload's namespace.",
				Required:            true,
				Validators:          []validator.String{validators.NamespaceName()},
			},
			"workload_selector": schema.MapAttribute{
				MarkdownDescription: "Pod labels that select the workloads, as `meshscope_workload_scope` takes them: the " +
					"calls of every workload of the inventory in the namespace whose pod labels include these. Exactly one " +
					"of `workload_selector` and `workload`.",
				ElementType: types.StringType,
				Optional:    true,
				Validators:  []validator.Map{validators.Labels()},
			},
			"workload": schema.StringAttribute{
				MarkdownDescription: "The workload's name as Istio names it in `source_workload`: the Deployment, " +
					"StatefulSet, DaemonSet, Job or bare Pod name. Exactly one of `workload_selector` and `workload`.",
				Optional: true,
			},
			"workloads": schema.ListAttribute{
				MarkdownDescription: "The workloads of the inventory read, as `namespace/Kind/name`, sorted.",
				ElementType:         types.StringType,
				Computed:            true,
			},
			"dependencies": schema.SetNestedAttribute{
				MarkdownDescription: "The destinations of the registry the workloads called: a Kubernetes Service as " +
					"`name.namespace`, a ServiceEntry host as it is. `ports` lists the ports called when they are certain " +
					"(the metrics carry `destination_port`, or the destination has a single port); when any dependency's " +
					"port is uncertain, none lists ports, as a scope with one port-less dependency imports every port anyway.",
				Computed: true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"service": schema.StringAttribute{MarkdownDescription: "The service, as a dependency names it.", Computed: true},
						"ports": schema.SetAttribute{MarkdownDescription: "The ports called, or null for every port.",
							ElementType: types.Int64Type, Computed: true},
					},
				},
			},
			"calls": schema.ListNestedAttribute{
				MarkdownDescription: "Every observed destination of the workloads, sorted by workload, host and port.",
				Computed:            true,
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"workload": schema.StringAttribute{MarkdownDescription: "The calling workload, `namespace/name` as Istio names it.", Computed: true},
						"host": schema.StringAttribute{MarkdownDescription: "The destination host: a Service FQDN, a ServiceEntry host, " +
							"the Host header of a passthrough call, or `\"\"` when Istio could not name it (TCP passthrough).", Computed: true},
						"port":     schema.Int64Attribute{MarkdownDescription: "The port, when the metrics carry `destination_port`; else null.", Computed: true},
						"protocol": schema.StringAttribute{MarkdownDescription: "`http`, `grpc` or `tcp` (several joined by commas).", Computed: true},
						"count": schema.Int64Attribute{MarkdownDescription: "Requests (HTTP, gRPC) or connections opened (TCP) over the window, " +
							"rounded: Prometheus extrapolates `increase()`.", Computed: true},
						"unit": schema.StringAttribute{MarkdownDescription: "`requests` or `connections`.", Computed: true},
						"class": schema.StringAttribute{MarkdownDescription: "`service` (a Kubernetes Service of the inventory), " +
							"`service_entry`, `passthrough` (a host outside the registry, through PassthroughCluster), `blackhole` " +
							"(dropped into BlackHoleCluster) or `unknown` (a service host the inventory does not hold).", Computed: true},
						"passthrough": schema.BoolAttribute{MarkdownDescription: "The client's proxy sent these calls through " +
							"PassthroughCluster: no mTLS, routing or per-service telemetry.", Computed: true},
						"dependency": schema.StringAttribute{MarkdownDescription: "The dependency that lets the call through, or `\"\"` " +
							"when none can (the host is outside the registry: add a ServiceEntry first).", Computed: true},
					},
				},
			},
			"window": schema.StringAttribute{
				MarkdownDescription: "The window the counts cover.",
				Computed:            true,
			},
		},
	}
}

func (d *observedDependenciesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m observedDependenciesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if readsUnknownInventory(d.data, req, resp,
		"The provider's inventory is not known yet, so observed calls cannot be mapped to its workloads and services. "+
			"Give the provider manifests that are known at plan time, or apply the resources they come from first with -target.") {
		return
	}
	if d.data.evidence == nil {
		resp.Diagnostics.AddError("No Observed Traffic Configured",
			"meshscope_observed_dependencies reads observed traffic, but the provider has none: set a prometheus block or "+
				"observed_traffic_file in the provider configuration (and observed_traffic other than \"off\").")
		return
	}
	hasSel, hasName := !m.WorkloadSelector.IsNull(), !m.Workload.IsNull()
	if hasSel == hasName {
		resp.Diagnostics.AddAttributeError(path.Root("workload"), "Select One Workload",
			"Give exactly one of workload_selector (pod labels, as meshscope_workload_scope takes them) and workload "+
				"(the name Istio gives it: the Deployment, StatefulSet, ... or bare Pod name).")
		return
	}

	inv := d.data.inv
	ns := m.Namespace.ValueString()
	workloads, ds := d.selectWorkloads(ctx, inv, m, ns)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}
	ev, ds := d.data.evidence.require(ctx, inv)
	resp.Diagnostics.Append(ds...)
	if resp.Diagnostics.HasError() {
		return
	}

	var calls []traffic.Call
	names := make([]string, 0, len(workloads))
	seen := map[string]bool{}
	for _, w := range workloads {
		names = append(names, w.Namespace+"/"+w.Kind+"/"+w.Name)
		// Istio names a workload by its name alone: two kinds of the same name are one caller.
		if !seen[w.Name] {
			seen[w.Name] = true
			calls = append(calls, ev.Calls(w.Namespace, w.Name)...)
		}
	}
	if len(calls) == 0 {
		resp.Diagnostics.AddWarning("No Calls Observed",
			fmt.Sprintf("%s holds Istio traffic over the last %s, but none from %v: dependencies is empty. A workload "+
				"deployed within the window, or one whose calls are rarer than it, shows no calls; check before you scope it "+
				"to nothing.", d.data.evidence.describe(), ev.Span(), names))
	}
	resp.Diagnostics.Append(m.set(ctx, names, calls, ev.Window)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// selectWorkloads finds the inventory workloads the configuration names.
func (d *observedDependenciesDataSource) selectWorkloads(ctx context.Context, inv *mesh.Inventory, m observedDependenciesModel, ns string) ([]*mesh.Workload, diag.Diagnostics) {
	var diags diag.Diagnostics
	var inNs []*mesh.Workload
	var known []string
	// The workloads as Istio names them in its metrics (census).
	for _, cw := range census.Take(inv).In(ns) {
		inNs = append(inNs, cw.Mesh())
		known = append(known, cw.Name)
	}
	if namespaceNotFound(&diags, inv, ns, "") {
		return nil, diags
	}
	var out []*mesh.Workload
	if !m.Workload.IsNull() {
		name := m.Workload.ValueString()
		for _, w := range inNs {
			if w.Name == name {
				out = append(out, w)
			}
		}
		if len(out) == 0 {
			diags.AddAttributeError(path.Root("workload"), "Workload Not Found",
				fmt.Sprintf("No workload named %q is in namespace %q of the inventory.%s Istio names a workload by its "+
					"controller (Deployment, StatefulSet, DaemonSet, CronJob, Argo Rollout; a Job of its own) or a bare Pod's name.", name, ns, didyoumean.DidYouMean(name, known)))
		}
		return out, diags
	}
	sel := map[string]string{}
	diags.Append(m.WorkloadSelector.ElementsAs(ctx, &sel, false)...)
	if diags.HasError() {
		return nil, diags
	}
	for _, w := range inNs {
		if scope.Selects(sel, w.PodLabels) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		diags.AddAttributeError(path.Root("workload_selector"), "No Workload Selected",
			fmt.Sprintf("No workload of namespace %q in the inventory has pod labels that include %s. The namespace holds %d "+
				"workload(s)%s. Correct the labels, or add the workload's manifest to the inventory.",
				ns, formatSelector(sel), len(inNs), listHint(known)))
	}
	return out, diags
}

// listHint lists up to 10 names after ": ", or nothing.
func listHint(names []string) string {
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
	}
	return fmt.Sprintf(": %q%s", firstN(names, 10), more)
}

// set fills in the computed values.
func (m *observedDependenciesModel) set(ctx context.Context, workloads []string, calls []traffic.Call, window string) diag.Diagnostics {
	var diags diag.Diagnostics
	m.Window = types.StringValue(window)
	var ds diag.Diagnostics
	m.Workloads, ds = types.ListValueFrom(ctx, types.StringType, nonNil(workloads))
	diags.Append(ds...)

	deps := make([]attr.Value, 0)
	for _, dep := range traffic.Dependencies(calls) {
		ports := types.SetNull(types.Int64Type)
		if len(dep.Ports) > 0 {
			vals := make([]attr.Value, len(dep.Ports))
			for i, p := range dep.Ports {
				vals[i] = types.Int64Value(int64(p))
			}
			ports = types.SetValueMust(types.Int64Type, vals)
		}
		deps = append(deps, types.ObjectValueMust(dependencyType.AttrTypes, map[string]attr.Value{
			"service": types.StringValue(dep.Service), "ports": ports,
		}))
	}
	m.Dependencies, ds = types.SetValue(dependencyType, deps)
	diags.Append(ds...)

	elems := make([]observedCallModel, 0, len(calls))
	for _, c := range calls {
		port := types.Int64Null()
		if c.Port != 0 {
			port = types.Int64Value(int64(c.Port))
		}
		elems = append(elems, observedCallModel{
			Workload: types.StringValue(c.Namespace + "/" + c.Workload), Host: types.StringValue(c.Host), Port: port,
			Protocol: types.StringValue(c.Protocol), Count: types.Int64Value(int64(c.Count + 0.5)), Unit: types.StringValue(c.Unit()),
			Class: types.StringValue(string(c.Class)), Passthrough: types.BoolValue(c.Passthrough), Dependency: types.StringValue(c.Dependency()),
		})
	}
	m.Calls, ds = types.ListValueFrom(ctx, observedCallType, elems)
	diags.Append(ds...)
	return diags
}
