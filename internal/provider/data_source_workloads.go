package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
)

var (
	_ datasource.DataSource              = (*workloadsDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*workloadsDataSource)(nil)
)

// NewWorkloadsDataSource returns the meshscope_workloads data source: the census.
func NewWorkloadsDataSource() datasource.DataSource { return &workloadsDataSource{} }

type workloadsDataSource struct {
	dataSourceWithProviderData
}

type workloadsModel struct {
	Namespace      types.String `tfsdk:"namespace"`
	Workloads      types.List   `tfsdk:"workloads"`
	SidecarCount   types.Int64  `tfsdk:"sidecar_workload_count"`
	NoSidecarCount types.Int64  `tfsdk:"no_sidecar_workload_count"`
}

var workloadAttrTypes = map[string]attr.Type{
	"namespace": types.StringType, "workload": types.StringType, "proxy": types.StringType,
	"reason": types.StringType, "why": types.StringType, "replicas": types.StringType,
	"revision": types.StringType, "istio_version": types.StringType,
}

func (d *workloadsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workloads"
}

func (d *workloadsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The census of the provider's inventory: every workload as Istio names it (a Deployment's " +
			"ReplicaSets and Pods are the Deployment; a CronJob's Jobs the CronJob), whether it runs an Envoy sidecar, " +
			"and why not. Only sidecars are predicted and reviewed: Sidecar resources configure nothing else.",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{
				MarkdownDescription: "Only the workloads of this namespace. Omitted: every namespace.",
				Optional:            true,
				Validators:          []validator.String{validators.NamespaceName()},
			},
			"workloads": schema.ListNestedAttribute{
				MarkdownDescription: "The workloads, sorted by namespace, name and kind.",
				Computed:            true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"namespace": schema.StringAttribute{Computed: true, MarkdownDescription: "The workload's namespace."},
					"workload":  schema.StringAttribute{Computed: true, MarkdownDescription: "`Kind/name`, as Istio names the workload in its metrics."},
					"proxy": schema.StringAttribute{Computed: true, MarkdownDescription: "`sidecar`, `gateway`, " +
						"`proxyless-grpc`, `ztunnel` (ambient) or `none`."},
					"reason": schema.StringAttribute{Computed: true, MarkdownDescription: "A stable code for why: `injected`, " +
						"`namespace-unknown`, `pods-run-proxy`, `pods-without-proxy`, `not-injected`, `injection-disabled`, " +
						"`opted-out`, `never-inject`, `policy-disabled`, `ignored-namespace`, `host-network`, `ambient`, " +
						"`proxyless-grpc`, `gateway` or `no-replicas`."},
					"why":      schema.StringAttribute{Computed: true, MarkdownDescription: "The reason in a sentence, with the fix when there is one."},
					"replicas": schema.StringAttribute{Computed: true, MarkdownDescription: "How many proxies (pods) it runs: `3`, a range `2-10` from an autoscaler, or `one per node`."},
					"revision": schema.StringAttribute{Computed: true, MarkdownDescription: "The istiod revision that injects its sidecars " +
						"(`default`, or the `istio.io/rev` of a revision), as its webhook or its Pods say; empty when it runs none or it is not known."},
					"istio_version": schema.StringAttribute{Computed: true, MarkdownDescription: "The Istio release of that revision, " +
						"from its istiod Deployment's image tag (`1.30`); empty when the inventory does not say."},
				}},
			},
			"sidecar_workload_count":    schema.Int64Attribute{Computed: true, MarkdownDescription: "How many of the workloads run sidecars."},
			"no_sidecar_workload_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "How many run none."},
		},
	}
}

func (d *workloadsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m workloadsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if readsUnknownInventory(d.data, req, resp, "The provider's manifests are not known yet, so the workloads cannot be "+
		"listed. Give the provider manifests that are known at plan time.") {
		return
	}
	inv, pr := d.data.live()
	ns := m.Namespace.ValueString()
	if ns != "" && namespaceNotFound(&resp.Diagnostics, inv, ns, "") {
		return
	}
	c := pr.Census()
	ws := c.All()
	if ns != "" {
		ws = c.In(ns)
	}
	elems := make([]attr.Value, 0, len(ws))
	var sidecars, others int64
	for _, w := range ws {
		if w.RunsSidecar() {
			sidecars++
		} else {
			others++
		}
		obj, ds := types.ObjectValue(workloadAttrTypes, map[string]attr.Value{
			"namespace": types.StringValue(w.Namespace), "workload": types.StringValue(w.ID()),
			"proxy": types.StringValue(string(w.Proxy)), "reason": types.StringValue(string(w.Reason)),
			"why": types.StringValue(w.Why), "replicas": types.StringValue(w.Replicas.String()),
			"revision": types.StringValue(w.Revision), "istio_version": types.StringValue(w.Version),
		})
		resp.Diagnostics.Append(ds...)
		elems = append(elems, obj)
	}
	list, ds := types.ListValue(types.ObjectType{AttrTypes: workloadAttrTypes}, elems)
	resp.Diagnostics.Append(ds...)
	m.Workloads, m.SidecarCount, m.NoSidecarCount = list, types.Int64Value(sidecars), types.Int64Value(others)
	if v := c.VMSentence(); v != "" {
		resp.Diagnostics.AddWarning(census.CodeVMsNotModelled.Summary(), v)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
