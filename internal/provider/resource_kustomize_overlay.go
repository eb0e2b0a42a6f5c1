package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
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

	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
	"github.com/meshscope/terraform-provider-meshscope/internal/provider/validators"
)

var (
	_ resource.Resource               = (*kustomizeOverlayResource)(nil)
	_ resource.ResourceWithConfigure  = (*kustomizeOverlayResource)(nil)
	_ resource.ResourceWithModifyPlan = (*kustomizeOverlayResource)(nil)
)

// NewKustomizeOverlayResource returns the meshscope_kustomize_overlay resource.
func NewKustomizeOverlayResource() resource.Resource {
	return &kustomizeOverlayResource{}
}

type kustomizeOverlayResource struct {
	// The provider's configuration. The layout depends on the resource's own
	// inputs only, so nothing of it is used yet.
	resourceWithProviderData
}

// envNamePattern is a DNS label: the environment names a directory and an Application.
var envNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (r *kustomizeOverlayResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_kustomize_overlay"
}

func (r *kustomizeOverlayResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	optionalString := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{MarkdownDescription: desc, Optional: true}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Writes Sidecar manifests into a directory of a GitOps repository as a kustomize base with " +
			"one overlay per environment, and optionally one Argo CD `Application` per environment. It owns the files " +
			"it writes and nothing else: their sha256 are in `files` (known at plan time, so the plan shows which files " +
			"change) and in `.meshscope-files.json` in the directory. A file edited by hand shows up as drift in the " +
			"next plan; unchanged files are never rewritten; destroy deletes only the files it wrote.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "The `path`.",
				Computed:            true,
			},
			"path": schema.StringAttribute{
				MarkdownDescription: "The directory to write, relative to the working directory or absolute; created when " +
					"missing. Changing it deletes the files from the old directory and writes the new one.",
				Required: true,
				PlanModifiers: []planmodifier.String{
					stringplanmodifier.RequiresReplace(),
				},
				Validators: []validator.String{stringvalidator.LengthAtLeast(1), validators.InsideWorkingDirectory()},
			},
			"sidecars": schema.ListAttribute{
				MarkdownDescription: "Sidecar manifests as YAML strings, typically " +
					"`[for s in meshscope_workload_scope.x : s.manifest]`. Each string holds one or more " +
					"`networking.istio.io` Sidecar documents, each with `metadata.namespace`; each Sidecar becomes " +
					"`base/<namespace>/<name>.yaml`. Any other kind is an error.",
				ElementType: types.StringType,
				Required:    true,
			},
			"environments": schema.MapNestedAttribute{
				MarkdownDescription: "The environments, by name; each gets `overlays/<name>/kustomization.yaml` on top of " +
					"`../../base`. A name is a DNS label such as `dev` or `eu-west-1`.",
				Required: true,
				Validators: []validator.Map{
					mapvalidator.SizeAtLeast(1),
					mapvalidator.KeysAre(stringvalidator.RegexMatches(envNamePattern,
						"must be a DNS label: lowercase letters, digits and '-', at most 63 characters")),
				},
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"extra_system_hosts": schema.ListAttribute{
							MarkdownDescription: "Egress hosts (`namespace/dnsName`) added, in this environment, to every " +
								"egress listener of every Sidecar, as the provider's `system_hosts` are; a port-level " +
								"Sidecar without a catch-all listener gets one. One JSON patch per Sidecar.",
							ElementType: types.StringType,
							Optional:    true,
							Validators:  []validator.List{listvalidator.ValueStringsAre(validators.EgressHost())},
						},
						"outbound_traffic_policy": schema.StringAttribute{
							MarkdownDescription: "Overrides every Sidecar's `outboundTrafficPolicy.mode` in this " +
								"environment: `ALLOW_ANY` or `REGISTRY_ONLY`.",
							Optional:   true,
							Validators: []validator.String{stringvalidator.OneOf("ALLOW_ANY", "REGISTRY_ONLY")},
						},
						"labels": schema.MapAttribute{
							MarkdownDescription: "Labels added to every object of the overlay (kustomize `labels`, " +
								"selectors untouched).",
							ElementType: types.StringType,
							Optional:    true,
							Validators:  []validator.Map{validators.Labels()},
						},
						"annotations": schema.MapAttribute{
							MarkdownDescription: "Annotations added to every object of the overlay (kustomize `commonAnnotations`).",
							ElementType:         types.StringType,
							Optional:            true,
						},
						"patches": schema.ListNestedAttribute{
							MarkdownDescription: "kustomize patches, applied after the settings above, in order.",
							Optional:            true,
							NestedObject: schema.NestedAttributeObject{
								Attributes: map[string]schema.Attribute{
									"patch": schema.StringAttribute{
										MarkdownDescription: "The patch, YAML or JSON: a strategic-merge patch (an object; " +
											"without `target` it names its object by apiVersion, kind, name and namespace) " +
											"or a JSON 6902 patch (a list of `{op, path, value}`, which needs `target`).",
										Required:   true,
										Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
									},
									"target": schema.SingleNestedAttribute{
										MarkdownDescription: "The objects the patch applies to. Unset fields match anything; " +
											"`name` and `namespace` are anchored regular expressions, as in kustomize.",
										Optional: true,
										Attributes: map[string]schema.Attribute{
											"group":               optionalString("API group, for example `networking.istio.io`."),
											"version":             optionalString("API version, for example `v1`."),
											"kind":                optionalString("Kind, for example `Sidecar`."),
											"name":                optionalString("Object name (regular expression)."),
											"namespace":           optionalString("Namespace (regular expression)."),
											"label_selector":      optionalString("Label selector, for example `team=payments`."),
											"annotation_selector": optionalString("Annotation selector."),
										},
									},
								},
							},
						},
					},
				},
			},
			"argocd": schema.SingleNestedAttribute{
				MarkdownDescription: "When set, writes one Argo CD `Application` per environment, " +
					"`argocd/<environment>.yaml`, each syncing that environment's overlay, plus " +
					"`argocd/kustomization.yaml` listing them (for `kubectl apply -k` or an app-of-apps).",
				Optional: true,
				Attributes: map[string]schema.Attribute{
					"repo_url": schema.StringAttribute{
						MarkdownDescription: "The Git repository Argo CD syncs from (`spec.source.repoURL`).",
						Required:            true,
					},
					"target_revision": optionalString("The branch, tag or commit to sync. Defaults to `\"" +
						gitops.DefaultTargetRevision + "\"`."),
					"project": optionalString("The Argo CD project. Defaults to `\"" + gitops.DefaultProject + "\"`."),
					"destination_server": optionalString("The cluster's API server URL. Defaults to `\"" +
						gitops.DefaultDestinationServer + "\"` (the cluster Argo CD runs in)."),
					"path_prefix": optionalString("Where `path` lives in the repository, such as `clusters/prod/mesh`; " +
						"each Application syncs `<path_prefix>/overlays/<environment>`. Defaults to the repository root."),
					"namespace": optionalString("The namespace of the Applications. Defaults to `\"" +
						gitops.DefaultArgoCDNamespace + "\"`."),
					"name_prefix": optionalString("Applications are named `<name_prefix>-<environment>`. Defaults to `\"" +
						gitops.DefaultNamePrefix + "\"`."),
					"sync_policy": schema.SingleNestedAttribute{
						MarkdownDescription: "The Applications' `syncPolicy`. Leave it out for manual syncs.",
						Optional:            true,
						Attributes: map[string]schema.Attribute{
							"automated": schema.BoolAttribute{
								MarkdownDescription: "Sync automatically when the repository changes.",
								Optional:            true,
							},
							"prune": schema.BoolAttribute{
								MarkdownDescription: "Delete objects that left the overlay (needs `automated`).",
								Optional:            true,
							},
							"self_heal": schema.BoolAttribute{
								MarkdownDescription: "Revert changes made in the cluster (`selfHeal`; needs `automated`).",
								Optional:            true,
							},
						},
					},
				},
			},
			"files": schema.MapAttribute{
				MarkdownDescription: "Every file the resource owns, by path relative to `path`, with its sha256. Known at " +
					"plan time. After a refresh it holds what is on disk, so a file edited or deleted by hand shows up " +
					"as a change back to the wanted content.",
				ElementType: types.StringType,
				Computed:    true,
			},
			"overlay_paths": schema.MapAttribute{
				MarkdownDescription: "Each environment's overlay directory, `<path>/overlays/<environment>`, for " +
					"`kubectl kustomize` or other resources.",
				ElementType: types.StringType,
				Computed:    true,
			},
		},
	}
}

func (r *kustomizeOverlayResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	// Plan does not need to be modified when the resource is being destroyed.
	if req.Plan.Raw.IsNull() {
		return
	}

	// Create and update are planned alike, and there is no no-op shortcut: a
	// refresh puts the hashes of the files on disk into the state, and the plan
	// must put the wanted ones back when a file was edited by hand. The layout
	// is a pure function of the inputs, so untouched files give an empty plan.

	var plan kustomizeOverlayResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	var owned []string
	if !req.State.Raw.IsNull() {
		var state kustomizeOverlayResourceModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		// A new path is a new directory (the resource is replaced): nothing there is owned yet.
		if state.Path.Equal(plan.Path) {
			owned = state.ownedFiles()
		}
	}

	resp.Diagnostics.Append(plan.setPlanned()...)

	// Only known inputs are used. A value that cannot be known yet stays unknown.
	if !plan.inputsKnown() {
		plan.Files = types.MapUnknown(types.StringType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}

	layout, diags := r.layout(ctx, plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(plan.setFiles(layout.Hashes())...)

	// Files in the way that this resource does not own would stop the apply: say so now.
	dir := plan.Path.ValueString()
	changes, err := gitops.Diff(dir, layout.Files, owned)
	if err != nil {
		resp.Diagnostics.Append(writeDiagnostic(dir, err))
		return
	}
	tflog.Debug(ctx, "planned kustomize overlay", map[string]any{"path": dir, "files": len(layout.Files), "changes": len(changes)})

	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *kustomizeOverlayResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan kustomizeOverlayResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}

	resp.Diagnostics.Append(r.apply(ctx, &plan, nil, &resp.State)...)
}

func (r *kustomizeOverlayResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state kustomizeOverlayResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}

	// Hash the owned files as they are on disk: an edited file gets another
	// hash, a deleted one drops out, and the next plan writes them back.
	dir := state.Path.ValueString()
	owned := state.ownedFiles()
	hashes, err := gitops.Hashes(dir, owned)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("path"), "Overlay Not Readable",
			fmt.Sprintf("The files of the overlay in %q cannot be read. Check the directory's permissions.\n\n"+
				"Original Error: %s", dir, err))
		return
	}
	for _, p := range owned {
		want, _ := state.Files.Elements()[p].(types.String)
		if got, ok := hashes[p]; !ok {
			tflog.Info(ctx, "owned file deleted outside Terraform", map[string]any{"path": dir, "file": p})
		} else if got != want.ValueString() {
			tflog.Info(ctx, "owned file changed outside Terraform", map[string]any{"path": dir, "file": p})
		}
	}
	resp.Diagnostics.Append(state.setFiles(hashes)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *kustomizeOverlayResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state kustomizeOverlayResourceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}

	// The files of the previous layout are owned too: those no longer wanted go.
	resp.Diagnostics.Append(r.apply(ctx, &plan, state.ownedFiles(), &resp.State)...)
}

// apply is Create and Update alike: it writes the planned layout over the files owned
// so far, then records it in the state.
func (r *kustomizeOverlayResource) apply(ctx context.Context, plan *kustomizeOverlayResourceModel, owned []string, state *tfsdk.State) diag.Diagnostics {
	diags := r.write(ctx, plan, owned)
	if diags.HasError() {
		return diags
	}
	diags.Append(state.Set(ctx, plan)...)
	return diags
}

func (r *kustomizeOverlayResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state kustomizeOverlayResourceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}

	dir := state.Path.ValueString()
	removed, err := gitops.Remove(dir, state.ownedFiles())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("path"), "Overlay Not Deleted",
			fmt.Sprintf("The files meshscope wrote in %q could not all be deleted. Delete the rest by hand: they are "+
				"listed in %s there.\n\nOriginal Error: %s", dir, gitops.OwnershipFile, err))
		return
	}
	tflog.Info(ctx, "deleted kustomize overlay", map[string]any{"path": dir, "files": len(removed)})
}

// layout builds the layout of the known inputs, with the problems as attribute diagnostics.
func (r *kustomizeOverlayResource) layout(ctx context.Context, m kustomizeOverlayResourceModel) (*gitops.Layout, diag.Diagnostics) {
	in, diags := m.input(ctx)
	if diags.HasError() {
		return nil, diags
	}
	layout, problems := gitops.Build(in)
	for _, pb := range problems {
		if p, ok := layoutProblemPath(pb); ok {
			diags.AddAttributeError(p, pb.Summary, pb.Detail)
		} else {
			diags.AddError(pb.Summary, pb.Detail)
		}
	}
	if layout == nil && !diags.HasError() {
		diags.AddError("Overlay Not Rendered", "The layout produced no files and no error. "+
			"Please report this issue to the provider developers.")
	}
	return layout, diags
}

// write renders the layout and writes it, then records what it wrote.
func (r *kustomizeOverlayResource) write(ctx context.Context, m *kustomizeOverlayResourceModel, owned []string) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(m.setPlanned()...)
	layout, ds := r.layout(ctx, *m)
	diags.Append(ds...)
	if diags.HasError() {
		return diags
	}
	dir := m.Path.ValueString()
	changes, err := gitops.Write(dir, layout.Files, owned)
	if err != nil {
		diags.Append(writeDiagnostic(dir, err))
		return diags
	}
	for _, c := range changes {
		tflog.Info(ctx, "kustomize overlay file "+string(c.Action)+"d", map[string]any{"path": dir, "file": c.Path})
	}
	diags.Append(m.setFiles(layout.Hashes())...)
	return diags
}

// writeDiagnostic explains why the directory cannot take the layout.
func writeDiagnostic(dir string, err error) diag.Diagnostic {
	var foreign *gitops.ForeignFilesError
	if errors.As(err, &foreign) {
		return diag.NewAttributeErrorDiagnostic(path.Root("path"), "Files Not Owned By meshscope",
			fmt.Sprintf("The directory %q already holds %s, which meshscope did not write and which differ from the "+
				"layout. meshscope never overwrites or deletes files it does not own. Move or delete them, or choose "+
				"another path.", dir, quoteAll(foreign.Paths)))
	}
	return diag.NewAttributeErrorDiagnostic(path.Root("path"), "Overlay Not Written",
		fmt.Sprintf("The overlay cannot be written to %q. Check that the path is a directory you can write to, and "+
			"that %s there is valid JSON (delete it to start over).\n\nOriginal Error: %s", dir, gitops.OwnershipFile, err))
}

// layoutProblemPath returns the attribute a gitops problem belongs to.
func layoutProblemPath(pb gitops.Problem) (path.Path, bool) {
	switch pb.Attribute {
	case gitops.AttrSidecars:
		p := path.Root(gitops.AttrSidecars)
		if pb.Index >= 0 {
			p = p.AtListIndex(pb.Index)
		}
		return p, true
	case gitops.AttrEnvironments:
		p := path.Root(gitops.AttrEnvironments)
		if pb.Env == "" {
			return p, true
		}
		p = p.AtMapKey(pb.Env)
		if pb.Field == "" {
			return p, true
		}
		p = p.AtName(pb.Field)
		switch {
		case pb.Index >= 0:
			p = p.AtListIndex(pb.Index)
		case pb.Key != "":
			p = p.AtMapKey(pb.Key)
		}
		return p, true
	case gitops.AttrArgoCD:
		p := path.Root(gitops.AttrArgoCD)
		if pb.Field != "" {
			p = p.AtName(pb.Field)
		}
		return p, true
	}
	return path.Empty(), false
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
