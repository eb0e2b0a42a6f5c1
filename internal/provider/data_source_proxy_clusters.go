package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
)

var (
	_ datasource.DataSource              = (*proxyClustersDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*proxyClustersDataSource)(nil)
)

// NewProxyClustersDataSource returns the meshscope_proxy_clusters data source.
func NewProxyClustersDataSource() datasource.DataSource {
	return &proxyClustersDataSource{}
}

type proxyClustersDataSource struct {
	dataSourceWithProviderData
}

func (d *proxyClustersDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_proxy_clusters"
}

func (d *proxyClustersDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Predicts the Envoy clusters and listeners istiod pushes to one sidecar proxy, identified by its namespace " +
			"and pod labels, from the provider's inventory. `sidecars` evaluates Sidecar manifests as if applied, so " +
			"the effect of a `meshscope_workload_scope` can be read before anything reaches a cluster. The cluster " +
			"names match `istioctl proxy-config cluster`.",
		Attributes: map[string]schema.Attribute{
			"namespace": schema.StringAttribute{
				MarkdownDescription: "The proxy's namespace. It must be a namespace of the inventory.",
				Required:            true,
				Validators:          []validator.String{validators.NamespaceName()},
			},
			"labels": schema.MapAttribute{
				MarkdownDescription: "The proxy's pod labels, for example `{ app = \"test-app\" }`: one pod's identity, which " +
					"the Sidecars of its namespace select by their `workloadSelector`. It is named `labels`, not `workload_selector` " +
					"as in `meshscope_workload_scope`, because it describes a pod rather than selecting pods: a scope's selector " +
					"`{ app = \"web\" }` selects a pod with labels `{ app = \"web\", version = \"v2\" }`, and that pod is given here " +
					"with all its labels.",
				ElementType: types.StringType,
				Optional:    true,
				Validators:  []validator.Map{validators.Labels()},
			},
			"sidecars": schema.ListAttribute{
				MarkdownDescription: "Sidecar manifests (YAML; a string may hold several documents, as " +
					"`file(\"sidecars.yaml\")` does) evaluated as if applied: each Sidecar replaces the inventory's Sidecar " +
					"with the same namespace and name, or is added, and a later one replaces an earlier one of the same name. " +
					"Typically the `manifest` of `meshscope_workload_scope` resources. A document that is not a Sidecar is an error.",
				ElementType: types.StringType,
				Optional:    true,
			},
			"sidecar": schema.StringAttribute{
				MarkdownDescription: "The `namespace/name` of the Sidecar that applies to the proxy, or `\"\"` when none does.",
				Computed:            true,
			},
			"clusters": schema.ListAttribute{
				MarkdownDescription: "The CDS cluster names, sorted, for example `outbound|80||foo.foo.svc.cluster.local`.",
				ElementType:         types.StringType,
				Computed:            true,
			},
			"cluster_count": schema.Int64Attribute{
				MarkdownDescription: "The number of CDS clusters.",
				Computed:            true,
			},
			"outbound_count": schema.Int64Attribute{
				MarkdownDescription: "The number of `outbound|...` clusters.",
				Computed:            true,
			},
			"inbound_count": schema.Int64Attribute{
				MarkdownDescription: "The number of `inbound|...` clusters.",
				Computed:            true,
			},
			"baseline_count": schema.Int64Attribute{
				MarkdownDescription: "The number of CDS clusters of the same proxy with no Sidecar in effect at all " +
					"(neither the inventory's nor `sidecars`).",
				Computed: true,
			},
			"istioctl_count": schema.Int64Attribute{
				MarkdownDescription: "The number of rows `istioctl proxy-config cluster` prints: the CDS clusters plus " +
					"the bootstrap clusters (agent, prometheus_stats, sds-grpc, xds-grpc and a tracer when configured).",
				Computed: true,
			},
			"listeners": schema.ListAttribute{
				MarkdownDescription: "The LDS listener names, sorted, as `istioctl proxy-config listener` names them: " +
					"`0.0.0.0_80` for an HTTP port, `<VIP>_<port>` for a TCP or protocol-detected port, `virtualOutbound`, " +
					"`virtualInbound`. An address the inventory does not carry (a Service's `clusterIP` or a pod's IP, " +
					"which the API server assigns on create) is named by what it stands for, for example " +
					"`<reviews.bookinfo VIP>_9080`; `listeners_address_unknown` counts them. A live inventory carries them.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"listener_count": schema.Int64Attribute{
				MarkdownDescription: "The number of LDS listeners.",
				Computed:            true,
			},
			"listeners_address_unknown": schema.Int64Attribute{
				MarkdownDescription: "How many of `listeners` are named by a placeholder, because the inventory does not " +
					"carry their address.",
				Computed: true,
			},
			"baseline_listener_count": schema.Int64Attribute{
				MarkdownDescription: "The number of LDS listeners of the same proxy with no Sidecar in effect at all.",
				Computed:            true,
			},
			"routes": schema.ListAttribute{
				MarkdownDescription: "The RDS route configuration names the listeners ask for, sorted, as `istioctl proxy-config " +
					"route` names them: `80` for the route HTTP services on port 80 share, `<host>:<port>` for a protocol-detected " +
					"service port's own route (`proxy-config route` on the command line lists their virtual hosts and domains).",
				ElementType: types.StringType,
				Computed:    true,
			},
			"route_count": schema.Int64Attribute{
				MarkdownDescription: "The number of RDS route configurations.",
				Computed:            true,
			},
			"virtual_hosts": schema.ListAttribute{
				MarkdownDescription: "The virtual hosts of every route configuration as `<route>/<virtual host>`, sorted, for example " +
					"`80/reviews.bookinfo.svc.cluster.local:80` and `80/allow_any`; a route without virtual hosts is its name alone.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"virtual_host_count": schema.Int64Attribute{
				MarkdownDescription: "The number of virtual hosts over every route configuration, catch-alls included.",
				Computed:            true,
			},
			"endpoints": schema.ListAttribute{
				MarkdownDescription: "The endpoints of every EDS cluster as `<cluster>/<address>:<port>`, sorted, as `istioctl " +
					"proxy-config endpoint` lists them, for example `outbound|80||reviews.bookinfo.svc.cluster.local/10.244.0.7:9080`. " +
					"A Service's are its selected Pods as Kubernetes' EndpointSlice controller lists them: a completed Pod has none, a Pod " +
					"being deleted none (unless it is ready and the Service carries `istio.io/persistent-session`), a Pod that is not " +
					"ready one that istiod sends as unhealthy, or leaves out when the DestinationRule sets `outlierDetection.minHealthPercent`. " +
					"A Pod without a status (a manifest) and a controller's replicas count as ready. A Service without a selector has the " +
					"endpoints of its EndpointSlices; with none in the manifests they are unknown, and the data source warns.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"unhealthy_endpoints": schema.ListAttribute{
				MarkdownDescription: "The `endpoints` istiod sends with a status other than HEALTHY (UNHEALTHY: the Pod is not ready; " +
					"DRAINING), in the same form. Envoy sends them no traffic.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"endpoint_count": schema.Int64Attribute{
				MarkdownDescription: "The number of `endpoints`.",
				Computed:            true,
			},
			"endpoints_address_unknown": schema.Int64Attribute{
				MarkdownDescription: "How many of the endpoints are replicas of workloads whose Pods the inventory does not hold: " +
					"their count is known, their addresses are not. A live inventory holds the Pods.",
				Computed: true,
			},
		},
	}
}

func (d *proxyClustersDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var model proxyClustersDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &model)...)
	if resp.Diagnostics.HasError() {
		return
	}

	if readsUnknownInventory(d.data, req, resp,
		"The provider's manifests are not known yet, so the clusters cannot be predicted. "+
			"Give the provider manifests that are known at plan time (for example read with file()), "+
			"or apply the resources they come from first with -target.") {
		return
	}

	proxy, diags := model.proxy(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	// The inventory with this provider's own writes: a read after an apply sees it.
	inv, livePr := d.data.live()
	if namespaceNotFound(&resp.Diagnostics, inv, proxy.Namespace, ", so no pod can run there") {
		return
	}

	w := census.Pod(inv, proxy.Namespace, proxy.Labels)
	if !w.RunsSidecar() {
		resp.Diagnostics.AddAttributeError(path.Root("labels"), census.CodeRunsNoSidecar.Summary(),
			fmt.Sprintf("A pod in namespace %q with these labels runs no sidecar (%s): %s. Sidecar resources configure "+
				"sidecars only, so there is no sidecar cluster list to predict.", proxy.Namespace, w.Reason, w.Why))
		return
	}

	proxy.Version = w.Version

	// The Sidecars given are evaluated as if applied.
	pr := livePr
	if !model.Sidecars.IsNull() {
		var sidecars []*mesh.Sidecar
		for i, v := range model.Sidecars.Elements() {
			s, ok := v.(types.String)
			if !ok || s.IsNull() {
				continue
			}
			source := fmt.Sprintf("sidecars[%d]", i)
			scs, err := mesh.ParseSidecars(source, []byte(s.ValueString()))
			if err != nil {
				resp.Diagnostics.Append(sidecarDiagnostic(path.Root("sidecars").AtListIndex(i), source, err))
				continue
			}
			sidecars = append(sidecars, scs...)
		}
		if resp.Diagnostics.HasError() {
			return
		}
		pr = pr.WithSidecars(sidecars...)
	}
	basePr := livePr.WithoutSidecars(func(*mesh.Sidecar) bool { return true })

	res := pr.Predict(proxy)
	if patches := pr.ClusterPatches(proxy); len(patches) > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("labels"), review.CodeEnvoyFilterNotModelled.Summary(),
			fmt.Sprintf("EnvoyFilters patch this proxy's clusters in ways meshscope does not apply: %s. Its clusters "+
				"and the counts may differ from istiod's by what they add, remove or change.", strings.Join(patches, "; ")))
	}
	if patches := pr.ListenerPatches(proxy); len(patches) > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("labels"), review.CodeEnvoyFilterNotModelled.Summary(),
			fmt.Sprintf("EnvoyFilters patch this proxy's listeners in ways meshscope does not apply: %s. Its listeners "+
				"and their count may differ from istiod's by what they add, remove or rename.", strings.Join(patches, "; ")))
	}
	if hosts := pr.EndpointsUnknown(res); len(hosts) > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("labels"), review.CodeEndpointsNotInInventory.Summary(),
			fmt.Sprintf("%s: Kubernetes Services without a selector, for which the inventory holds no EndpointSlice, so "+
				"their endpoints are not predicted and none are counted. Add their EndpointSlices to manifests, or read "+
				"the cluster through the kubernetes block.", capList(hosts, 5)))
	}
	baseline := basePr.Predict(proxy)
	tflog.Debug(ctx, "predicted proxy clusters", map[string]any{
		"namespace": proxy.Namespace, "sidecar": res.Sidecar, "clusters": len(res.Clusters), "baseline": len(baseline.Clusters),
	})

	resp.Diagnostics.Append(model.setPrediction(res, baseline, pr.Listeners(proxy), basePr.ListenerCount(proxy), pr.Routes(proxy), pr.Endpoints(res))...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
}

// namespaceNotFound adds the error of a namespace attribute the inventory does not know, with the
// nearest names (or why the inventory is empty), and reports whether it did. why follows "is not
// in the inventory" (", so no pod can run there"; "" for nothing).
func namespaceNotFound(diags *diag.Diagnostics, inv *mesh.Inventory, ns, why string) bool {
	if namespaceKnown(inv, ns) {
		return false
	}
	hint := didyoumean.DidYouMean(ns, inv.NamespaceNames())
	if inv.Empty() {
		hint = mesh.EmptyHint
	}
	diags.AddAttributeError(path.Root("namespace"), "Namespace Not Found",
		fmt.Sprintf("The namespace %q is not in the inventory%s.%s Add the Namespace to the provider's manifests or correct the name.", ns, why, hint))
	return true
}

// namespaceKnown reports whether the inventory declares the namespace or holds an object in it.
func namespaceKnown(inv *mesh.Inventory, ns string) bool {
	for _, n := range inv.NamespaceNames() {
		if n == ns {
			return true
		}
	}
	return false
}

// capList joins at most n names, saying how many more there are.
func capList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
