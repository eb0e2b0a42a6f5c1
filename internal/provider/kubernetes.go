package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// SidecarApplier is what the workload scope resource does to a cluster. The
// provider hands it to resources; tests inject fakes through NewWithApplier.
type SidecarApplier interface {
	ApplySidecar(ctx context.Context, manifest string) error
	ReadSidecar(ctx context.Context, namespace, name string) (*kube.Observed, error)
	DeleteSidecar(ctx context.Context, namespace, name string) error
	FieldManager() string
}

var _ SidecarApplier = (*kube.Client)(nil)

// kubernetesModel is the provider's `kubernetes` block.
type kubernetesModel struct {
	ConfigPath           types.String `tfsdk:"config_path"`
	ConfigPaths          types.List   `tfsdk:"config_paths"`
	ConfigContext        types.String `tfsdk:"config_context"`
	Host                 types.String `tfsdk:"host"`
	Token                types.String `tfsdk:"token"`
	ClusterCACertificate types.String `tfsdk:"cluster_ca_certificate"`
	ClientCertificate    types.String `tfsdk:"client_certificate"`
	ClientKey            types.String `tfsdk:"client_key"`
	Insecure             types.Bool   `tfsdk:"insecure"`
	Exec                 *execModel   `tfsdk:"exec"`
	FieldManager         types.String `tfsdk:"field_manager"`
	ForceConflicts       types.Bool   `tfsdk:"force_conflicts"`
	RequestTimeout       types.String `tfsdk:"request_timeout"`
}

type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

func kubernetesBlockSchema() schema.Block {
	return schema.SingleNestedBlock{
		MarkdownDescription: "A live cluster. With this block, the inventory is read from the cluster (namespaces, services, " +
			"pods and workloads, ServiceEntries, DestinationRules, VirtualServices, Sidecars, the injection webhooks, " +
			"autoscalers and the `istio` and `istio-sidecar-injector` ConfigMaps), `manifests` add to it, and " +
			"`meshscope_workload_scope` server-side applies its Sidecar. Unset attributes follow the kubeconfig loading " +
			"rules (`KUBECONFIG`, `~/.kube/config`, the current context). Credentials set here (`token`, " +
			"`client_certificate` and `client_key`, `exec`) replace the kubeconfig user's, never join them. Credentials " +
			"never reach the state or the logs.",
		Attributes: map[string]schema.Attribute{
			"config_path": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path to a kubeconfig file. Defaults to `KUBECONFIG`, then `~/.kube/config`."},
			"config_paths": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Several kubeconfig files, merged like `KUBECONFIG`."},
			"config_context": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The kubeconfig context to use instead of the current one."},
			"host": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The API server URL, overriding the kubeconfig."},
			"token": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "A bearer token."},
			"cluster_ca_certificate": schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM-encoded CA bundle of the API server."},
			"client_certificate": schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM-encoded client certificate."},
			"client_key": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "PEM-encoded client key."},
			"insecure": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip TLS verification of the API server. For tests only."},
			"field_manager": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The server-side apply field manager. Default `meshscope`."},
			"force_conflicts": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Take over fields that another field manager owns. Default `false`: a conflict is an error naming the other manager."},
			"request_timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "How long one request to the API server may take, as a Go duration. Default `" +
					kube.DefaultRequestTimeout.String() + "`. An API server that accepts the connection but does not answer " +
					"fails the plan or apply after this long, with an error naming it, instead of hanging."},
		},
		Blocks: map[string]schema.Block{
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "A client-go credential plugin, like a kubeconfig user's `exec`.",
				Attributes: map[string]schema.Attribute{
					"api_version": schema.StringAttribute{Optional: true,
						MarkdownDescription: "The plugin's API version, for example `client.authentication.k8s.io/v1`."},
					"command": schema.StringAttribute{Optional: true, MarkdownDescription: "The command to run."},
					"args":    schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Its arguments."},
					"env":     schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Extra environment variables."},
				},
			},
		},
	}
}

// attributes are the values of the block's attributes (the exec block's aside).
func (m *kubernetesModel) attributes() []attr.Value {
	return []attr.Value{m.ConfigPath, m.ConfigPaths, m.ConfigContext, m.Host, m.Token,
		m.ClusterCACertificate, m.ClientCertificate, m.ClientKey, m.Insecure, m.FieldManager, m.ForceConflicts, m.RequestTimeout}
}

// set reports whether the block is present (all of its attributes null means absent).
func (m *kubernetesModel) set() bool {
	if m == nil {
		return false
	}
	for _, v := range m.attributes() {
		if !v.IsNull() {
			return true
		}
	}
	return m.Exec != nil
}

// known reports whether every attribute is known (a config from another resource may not be yet).
func (m *kubernetesModel) known() bool {
	if m == nil {
		return true
	}
	vals := m.attributes()
	if m.Exec != nil {
		vals = append(vals, m.Exec.APIVersion, m.Exec.Command, m.Exec.Args, m.Exec.Env)
	}
	for _, v := range vals {
		if v.IsUnknown() {
			return false
		}
	}
	return true
}

func (m *kubernetesModel) config(ctx context.Context) (kube.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg := kube.Config{
		ConfigContext:        m.ConfigContext.ValueString(),
		Host:                 m.Host.ValueString(),
		Token:                m.Token.ValueString(),
		ClusterCACertificate: m.ClusterCACertificate.ValueString(),
		ClientCertificate:    m.ClientCertificate.ValueString(),
		ClientKey:            m.ClientKey.ValueString(),
		Insecure:             m.Insecure.ValueBool(),
		FieldManager:         m.FieldManager.ValueString(),
		ForceConflicts:       m.ForceConflicts.ValueBool(),
	}
	if !m.RequestTimeout.IsNull() {
		d, err := time.ParseDuration(m.RequestTimeout.ValueString())
		if err != nil || d <= 0 {
			diags.AddAttributeError(path.Root("kubernetes").AtName("request_timeout"), "Invalid Request Timeout",
				fmt.Sprintf("The value %q is not a positive duration. Use a Go duration such as \"30s\" or \"2m\".", m.RequestTimeout.ValueString()))
		}
		cfg.RequestTimeout = d
	}
	if !m.ConfigPath.IsNull() {
		cfg.ConfigPaths = []string{m.ConfigPath.ValueString()}
	}
	if !m.ConfigPaths.IsNull() {
		var paths []string
		diags.Append(m.ConfigPaths.ElementsAs(ctx, &paths, false)...)
		cfg.ConfigPaths = append(cfg.ConfigPaths, paths...)
	}
	if m.Exec != nil {
		ex := &kube.ExecConfig{APIVersion: m.Exec.APIVersion.ValueString(), Command: m.Exec.Command.ValueString()}
		if !m.Exec.Args.IsNull() {
			diags.Append(m.Exec.Args.ElementsAs(ctx, &ex.Args, false)...)
		}
		if !m.Exec.Env.IsNull() {
			diags.Append(m.Exec.Env.ElementsAs(ctx, &ex.Env, false)...)
		}
		if ex.Command == "" {
			diags.AddAttributeError(path.Root("kubernetes").AtName("exec").AtName("command"), "Missing Exec Command",
				"The kubernetes.exec block needs a command, for example \"aws\" or \"gke-gcloud-auth-plugin\".")
		}
		cfg.Exec = ex
	}
	return cfg, diags
}

// clusterSource reads the live inventory.
type clusterSource struct {
	client *kube.Client
	root   string
}

func (s clusterSource) Name() string { return "kubernetes" }

func (s clusterSource) Load(ctx context.Context, inv *mesh.Inventory) diag.Diagnostics {
	var diags diag.Diagnostics
	if err := s.client.LoadInventory(ctx, inv, s.root); err != nil {
		diags.AddAttributeError(clusterErrorPath(err), clusterErrorSummary(err),
			"meshscope could not read the inventory from the cluster. "+clusterErrorAdvice(err)+"\n\nOriginal Error: "+err.Error())
	}
	return diags
}

// clusterErrorPath is the kubernetes block's attribute a cluster error is about.
func clusterErrorPath(err error) path.Path {
	var ke *kube.ConfigError
	if errors.As(err, &ke) {
		if ke.Problem == kube.ConfigContextUnknown {
			return path.Root("kubernetes").AtName("config_context")
		}
		return path.Root("kubernetes").AtName("config_path")
	}
	return path.Root("kubernetes")
}

func clusterErrorSummary(err error) string {
	var pe *kube.PermissionError
	var me *kube.MissingCRDError
	var ce *kube.ConflictError
	var ke *kube.ConfigError
	var te *kube.TimeoutError
	var ie *kube.InvalidObjectError
	switch {
	case errors.As(err, &ie):
		return "Invalid Object In The Cluster"
	case errors.As(err, &te):
		return "Cluster Not Answering"
	case errors.As(err, &ke):
		switch ke.Problem {
		case kube.ConfigFileMissing:
			return "Kubeconfig Not Found"
		case kube.ConfigFileInvalid:
			return "Invalid Kubeconfig"
		default:
			return "Unknown Kubeconfig Context"
		}
	case errors.As(err, &pe):
		return "Permission Denied"
	case errors.As(err, &me):
		return "Istio CRDs Missing"
	case errors.As(err, &ce):
		return "Field Manager Conflict"
	}
	return "Cluster Unreachable"
}

func clusterErrorAdvice(err error) string {
	var pe *kube.PermissionError
	var me *kube.MissingCRDError
	var ce *kube.ConflictError
	var ke *kube.ConfigError
	var te *kube.TimeoutError
	var ie *kube.InvalidObjectError
	switch {
	case errors.As(err, &ie):
		return fmt.Sprintf("The API server holds %s %s, which Kubernetes' or Istio's validation rejects: %v. "+
			"It was written where that validation did not run (for example without Istio's validating webhook), and "+
			"meshscope cannot predict the mesh with it. Fix or delete that object in the cluster, then plan again.",
			ie.Kind, ie.Object(), ie.Err)
	case errors.As(err, &te):
		return fmt.Sprintf("The API server accepted the connection but did not answer %s within %s. Check its health and "+
			"the network path to it (a proxy or load balancer that holds connections open), or raise "+
			"kubernetes.request_timeout for a cluster whose lists are slow.", te.Request, te.After)
	case errors.As(err, &ke):
		switch ke.Problem {
		case kube.ConfigFileMissing:
			return fmt.Sprintf("The kubeconfig file %q does not exist. Fix kubernetes.config_path (or config_paths), or remove it to use KUBECONFIG or ~/.kube/config.", ke.Path)
		case kube.ConfigFileInvalid:
			return fmt.Sprintf("The kubeconfig file %q is not a kubeconfig clientcmd can parse. Fix the file, or point kubernetes.config_path at another.", ke.Path)
		default:
			if len(ke.Contexts) == 0 {
				return "The kubeconfig has no contexts. Remove kubernetes.config_context, or use a kubeconfig that defines it."
			}
			return fmt.Sprintf("Set kubernetes.config_context to one of the kubeconfig's contexts: %s.", quoteAll(ke.Contexts))
		}
	case errors.As(err, &pe):
		return fmt.Sprintf("Grant the provider's identity verb %q on %q (see the ClusterRole in the README).", pe.Verb, pe.Resource.Resource)
	case errors.As(err, &me):
		return "Install Istio (its CRDs) in the cluster, or drop the kubernetes block to work offline from manifests."
	case errors.As(err, &ce):
		return fmt.Sprintf("Another field manager (%v) owns fields meshscope wants to set. Remove that manager's changes, "+
			"or set kubernetes.force_conflicts = true to take the fields over.", ce.Managers)
	}
	return "Check kubernetes.host / config_path / config_context and that the API server is reachable."
}
