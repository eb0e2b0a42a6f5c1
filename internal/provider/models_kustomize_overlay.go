package provider

import (
	"context"
	"path"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/meshscope/terraform-provider-meshscope/internal/gitops"
)

// kustomizeOverlayResourceModel is the meshscope_kustomize_overlay resource.
type kustomizeOverlayResourceModel struct {
	ID           types.String `tfsdk:"id"`
	Path         types.String `tfsdk:"path"`
	Sidecars     types.List   `tfsdk:"sidecars"`      //< types.String
	Environments types.Map    `tfsdk:"environments"`  //< overlayEnvironmentModel
	ArgoCD       types.Object `tfsdk:"argocd"`        //< overlayArgoCDModel
	Files        types.Map    `tfsdk:"files"`         //< types.String
	OverlayPaths types.Map    `tfsdk:"overlay_paths"` //< types.String
}

// overlayEnvironmentModel is one value of kustomize_overlay.environments.
type overlayEnvironmentModel struct {
	ExtraSystemHosts      types.List   `tfsdk:"extra_system_hosts"` //< types.String
	OutboundTrafficPolicy types.String `tfsdk:"outbound_traffic_policy"`
	Labels                types.Map    `tfsdk:"labels"`      //< types.String
	Annotations           types.Map    `tfsdk:"annotations"` //< types.String
	Patches               types.List   `tfsdk:"patches"`     //< overlayPatchModel
}

// overlayPatchModel is one element of environments[*].patches.
type overlayPatchModel struct {
	Target types.Object `tfsdk:"target"` //< overlayPatchTargetModel
	Patch  types.String `tfsdk:"patch"`
}

// overlayPatchTargetModel is environments[*].patches[*].target.
type overlayPatchTargetModel struct {
	Group              types.String `tfsdk:"group"`
	Version            types.String `tfsdk:"version"`
	Kind               types.String `tfsdk:"kind"`
	Name               types.String `tfsdk:"name"`
	Namespace          types.String `tfsdk:"namespace"`
	LabelSelector      types.String `tfsdk:"label_selector"`
	AnnotationSelector types.String `tfsdk:"annotation_selector"`
}

// overlayArgoCDModel is kustomize_overlay.argocd.
type overlayArgoCDModel struct {
	RepoURL           types.String `tfsdk:"repo_url"`
	TargetRevision    types.String `tfsdk:"target_revision"`
	Project           types.String `tfsdk:"project"`
	DestinationServer types.String `tfsdk:"destination_server"`
	PathPrefix        types.String `tfsdk:"path_prefix"`
	Namespace         types.String `tfsdk:"namespace"`
	NamePrefix        types.String `tfsdk:"name_prefix"`
	SyncPolicy        types.Object `tfsdk:"sync_policy"` //< overlaySyncPolicyModel
}

// overlaySyncPolicyModel is kustomize_overlay.argocd.sync_policy.
type overlaySyncPolicyModel struct {
	Automated types.Bool `tfsdk:"automated"`
	Prune     types.Bool `tfsdk:"prune"`
	SelfHeal  types.Bool `tfsdk:"self_heal"`
}

// inputsKnown reports whether every input is known, so that the layout and
// its file hashes can be decided at plan time.
func (m kustomizeOverlayResourceModel) inputsKnown() bool {
	return fullyKnown(m.Path) && fullyKnown(m.Sidecars) && fullyKnown(m.Environments) && fullyKnown(m.ArgoCD)
}

// input converts the known inputs into the gitops package's Input.
func (m kustomizeOverlayResourceModel) input(ctx context.Context) (gitops.Input, diag.Diagnostics) {
	var diags diag.Diagnostics
	in := gitops.Input{Settings: gitops.Settings{Environments: map[string]gitops.Environment{}}}

	sidecars, ds := stringList(ctx, m.Sidecars)
	diags.Append(ds...)
	in.Sidecars = sidecars

	envs := map[string]overlayEnvironmentModel{}
	if !m.Environments.IsNull() {
		diags.Append(m.Environments.ElementsAs(ctx, &envs, false)...)
	}
	for name, em := range envs {
		env, ds := em.environment(ctx)
		diags.Append(ds...)
		in.Environments[name] = env
	}

	if !m.ArgoCD.IsNull() {
		var am overlayArgoCDModel
		diags.Append(m.ArgoCD.As(ctx, &am, basetypes.ObjectAsOptions{})...)
		a := &gitops.ArgoCD{
			RepoURL:           am.RepoURL.ValueString(),
			TargetRevision:    am.TargetRevision.ValueString(),
			Project:           am.Project.ValueString(),
			DestinationServer: am.DestinationServer.ValueString(),
			PathPrefix:        am.PathPrefix.ValueString(),
			Namespace:         am.Namespace.ValueString(),
			NamePrefix:        am.NamePrefix.ValueString(),
		}
		if !am.SyncPolicy.IsNull() {
			var sp overlaySyncPolicyModel
			diags.Append(am.SyncPolicy.As(ctx, &sp, basetypes.ObjectAsOptions{})...)
			a.SyncPolicy = &gitops.SyncPolicy{
				Automated: sp.Automated.ValueBool(),
				Prune:     sp.Prune.ValueBool(),
				SelfHeal:  sp.SelfHeal.ValueBool(),
			}
		}
		in.ArgoCD = a
	}
	return in, diags
}

func (em overlayEnvironmentModel) environment(ctx context.Context) (gitops.Environment, diag.Diagnostics) {
	var diags diag.Diagnostics
	var env gitops.Environment
	hosts, ds := stringList(ctx, em.ExtraSystemHosts)
	diags.Append(ds...)
	env.ExtraSystemHosts = hosts
	env.OutboundTrafficPolicy = em.OutboundTrafficPolicy.ValueString()
	labels, ds := stringMap(ctx, em.Labels)
	diags.Append(ds...)
	env.Labels = labels
	annotations, ds := stringMap(ctx, em.Annotations)
	diags.Append(ds...)
	env.Annotations = annotations
	if !em.Patches.IsNull() {
		var patches []overlayPatchModel
		diags.Append(em.Patches.ElementsAs(ctx, &patches, false)...)
		for _, pm := range patches {
			p := gitops.Patch{Patch: pm.Patch.ValueString()}
			if !pm.Target.IsNull() {
				var tm overlayPatchTargetModel
				diags.Append(pm.Target.As(ctx, &tm, basetypes.ObjectAsOptions{})...)
				p.Target = &gitops.Target{
					Group:              tm.Group.ValueString(),
					Version:            tm.Version.ValueString(),
					Kind:               tm.Kind.ValueString(),
					Name:               tm.Name.ValueString(),
					Namespace:          tm.Namespace.ValueString(),
					LabelSelector:      tm.LabelSelector.ValueString(),
					AnnotationSelector: tm.AnnotationSelector.ValueString(),
				}
			}
			env.Patches = append(env.Patches, p)
		}
	}
	return env, diags
}

// envNames returns the environment names when the map itself is known.
func (m kustomizeOverlayResourceModel) envNames() ([]string, bool) {
	if m.Environments.IsUnknown() {
		return nil, false
	}
	names := make([]string, 0, len(m.Environments.Elements()))
	for k := range m.Environments.Elements() {
		names = append(names, k)
	}
	return sortedCopy(names), true
}

// setPlanned fills in what follows from the path and the environment names
// alone: id and overlay_paths. Unknown inputs leave them unknown.
func (m *kustomizeOverlayResourceModel) setPlanned() diag.Diagnostics {
	if m.Path.IsUnknown() {
		m.ID = types.StringUnknown()
		m.OverlayPaths = types.MapUnknown(types.StringType)
		return nil
	}
	m.ID = m.Path
	names, ok := m.envNames()
	if !ok {
		m.OverlayPaths = types.MapUnknown(types.StringType)
		return nil
	}
	paths := make(map[string]attr.Value, len(names))
	for _, n := range names {
		paths[n] = types.StringValue(path.Join(m.Path.ValueString(), gitops.OverlayDir(n)))
	}
	v, diags := types.MapValue(types.StringType, paths)
	m.OverlayPaths = v
	return diags
}

// setFiles stores file hashes (relative path -> sha256).
func (m *kustomizeOverlayResourceModel) setFiles(hashes map[string]string) diag.Diagnostics {
	v, diags := types.MapValueFrom(context.Background(), types.StringType, hashes)
	m.Files = v
	return diags
}

// ownedFiles returns the relative paths in files (nil when unset).
func (m kustomizeOverlayResourceModel) ownedFiles() []string {
	if m.Files.IsNull() || m.Files.IsUnknown() {
		return nil
	}
	out := make([]string, 0, len(m.Files.Elements()))
	for k := range m.Files.Elements() {
		out = append(out, k)
	}
	return sortedCopy(out)
}
