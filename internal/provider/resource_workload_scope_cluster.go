package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/meshscope/terraform-provider-meshscope/internal/istiod"
	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// This file holds what meshscope_workload_scope does when the provider has a
// `kubernetes` block: server-side apply, read-back of the owned fields, delete
// of owned objects only, and import.

var _ resource.ResourceWithImportState = (*workloadScopeResource)(nil)

// applyToCluster server-side applies the planned manifest.
func (r *workloadScopeResource) applyToCluster(ctx context.Context, m *workloadScopeResourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.data == nil || r.data.applier == nil {
		return diags
	}
	tflog.Info(ctx, "applying Sidecar", map[string]any{"id": m.ID.ValueString(), "field_manager": r.data.applier.FieldManager()})
	if err := r.data.applier.ApplySidecar(ctx, m.Manifest.ValueString()); err != nil {
		var ce *kube.ConflictError
		if errors.As(err, &ce) {
			diags.AddAttributeError(path.Root("manifest"), "Field Manager Conflict",
				fmt.Sprintf("Sidecar %s: field manager(s) %s own %s with other values. Remove their changes, or set "+
					"kubernetes.force_conflicts = true in the provider to take the fields over.\n\nOriginal Error: %s",
					m.ID.ValueString(), quotedList(ce.Managers), strings.Join(ce.Fields, ", "), err))
			return diags
		}
		diags.AddError(clusterErrorSummary(err), fmt.Sprintf("Applying Sidecar %s failed. %s\n\nOriginal Error: %s",
			m.ID.ValueString(), clusterErrorAdvice(err), err))
		return diags
	}
	// Later reads in this run (a data source that depends on this scope) see the Sidecar.
	if r.data.known() {
		sc, err := mesh.ParseSidecar("meshscope", []byte(m.Manifest.ValueString()))
		if err != nil {
			diags.AddError("Unreadable Manifest", fmt.Sprintf("The applied manifest of %s cannot be read back: %v", m.ID.ValueString(), err))
			return diags
		}
		r.data.wrote(sc)
	}
	return diags
}

// readSidecar reads Sidecar ns/name from the cluster: nil when there is none.
func (r *workloadScopeResource) readSidecar(ctx context.Context, ns, name string) (*kube.Observed, diag.Diagnostics) {
	var diags diag.Diagnostics
	obs, err := r.data.applier.ReadSidecar(ctx, ns, name)
	if err != nil {
		diags.AddError(clusterErrorSummary(err), fmt.Sprintf("Reading Sidecar %s/%s failed. %s\n\nOriginal Error: %s",
			ns, name, clusterErrorAdvice(err), err))
	}
	return obs, diags
}

// readFromCluster reads the Sidecar back. It returns false when the object is
// gone. Spec drift made out of band shows up as a different manifest: the
// fields this field manager owns, rendered the way the compiler renders them.
func (r *workloadScopeResource) readFromCluster(ctx context.Context, m *workloadScopeResourceModel) (bool, diag.Diagnostics) {
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	obs, diags := r.readSidecar(ctx, ns, name)
	if diags.HasError() {
		return true, diags
	}
	if obs == nil {
		tflog.Info(ctx, "Sidecar not found; removing it from state", map[string]any{"id": ns + "/" + name})
		return false, diags
	}
	live := obs.Owned
	if !obs.OwnedByUs {
		live = obs.Full
	}
	normalized, err := normalizeSidecar(live)
	if err != nil {
		diags.AddError("Unreadable Sidecar", fmt.Sprintf("Sidecar %s/%s in the cluster cannot be read as a networking.istio.io Sidecar.\n\nOriginal Error: %s", ns, name, err))
		return true, diags
	}
	if normalized != m.Manifest.ValueString() {
		tflog.Info(ctx, "Sidecar drifted from the applied manifest", map[string]any{"id": ns + "/" + name, "managers": obs.Managers})
		m.Manifest = types.StringValue(normalized)
	}
	return true, diags
}

// normalizeSidecar renders a Sidecar YAML the way the compiler does.
func normalizeSidecar(yamlDoc string) (string, error) {
	sc, err := mesh.ParseSidecar("cluster", []byte(yamlDoc))
	if err != nil {
		return "", err
	}
	return scope.Marshal(sc.Name, sc.Namespace, sc.Labels, sc.Spec)
}

// deleteFromCluster deletes the Sidecar when meshscope owns it.
func (r *workloadScopeResource) deleteFromCluster(ctx context.Context, m *workloadScopeResourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.data == nil || r.data.applier == nil {
		return diags
	}
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	err := r.data.applier.DeleteSidecar(ctx, ns, name)
	switch {
	case errors.Is(err, kube.ErrNotOwned):
		diags.AddWarning("Sidecar Left In Place",
			fmt.Sprintf("Sidecar %s/%s is not meshscope's (no %s=%s label, or field manager %q owns none of it), so it was not deleted; "+
				"it is only removed from the Terraform state.\n\n%s", ns, name, mesh.ManagedByLabel, mesh.ManagedByValue, r.data.applier.FieldManager(), err))
	case err != nil:
		diags.AddError(clusterErrorSummary(err), fmt.Sprintf("Deleting Sidecar %s/%s failed. %s\n\nOriginal Error: %s", ns, name, clusterErrorAdvice(err), err))
	default:
		tflog.Info(ctx, "deleted Sidecar", map[string]any{"id": ns + "/" + name})
		if r.data.known() {
			r.data.deleted(ns, name)
		}
	}
	return diags
}

// ImportState takes "namespace/name" of an existing Sidecar.
func (r *workloadScopeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, ok := strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid Import ID",
			fmt.Sprintf("The import ID %q is not namespace/name. Import a Sidecar as, for example, \"foo/test-app\".", req.ID))
		return
	}
	if r.data == nil || (r.data.applier == nil && !r.data.known()) {
		resp.Diagnostics.AddError("No Sidecar Source",
			"Importing reads the Sidecar from a cluster (the provider's kubernetes block) or, offline, from the provider's "+
				"manifests, and neither is known yet. Configure one with values known at plan time.")
		return
	}
	if r.data.applier == nil && inventorySidecar(r.data.inv, ns, name) == nil {
		resp.Diagnostics.AddError("Sidecar Not Found",
			fmt.Sprintf("There is no Sidecar %s/%s in the provider's manifests. Offline, import reads the Sidecar from the "+
				"manifests; add its YAML there, or configure the kubernetes block to import it from a cluster.", ns, name))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
}

// inventorySidecar finds a Sidecar of the inventory by namespace and name.
func inventorySidecar(inv *mesh.Inventory, ns, name string) *mesh.Sidecar {
	for _, sc := range inv.Sidecars {
		if sc.Namespace == ns && sc.Name == name {
			return sc
		}
	}
	return nil
}

// importFromInventory is importFromCluster without a cluster: the Sidecar comes from the
// provider's manifests, and the state keeps its compiled form. The scope then stands for that
// Sidecar in every prediction, as one of the same name does.
func (r *workloadScopeResource) importFromInventory(ctx context.Context, m *workloadScopeResourceModel) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	sc := inventorySidecar(r.data.inv, ns, name)
	if sc == nil {
		diags.AddError("Sidecar Not Found", fmt.Sprintf("There is no Sidecar %s/%s in the provider's manifests to import.", ns, name))
		return false, diags
	}
	return true, r.importSidecar(ctx, m, sc)
}

// importSidecar decompiles an existing Sidecar into the scope's declarations and computes the rest.
func (r *workloadScopeResource) importSidecar(ctx context.Context, m *workloadScopeResourceModel, sc *mesh.Sidecar) diag.Diagnostics {
	var diags diag.Diagnostics
	decl, probs := scope.Decompile(sc, r.data.scopeOpts, r.data.inv.Mesh.RootNamespace)
	for _, p := range probs {
		diags.AddError(p.Summary, p.Detail)
	}
	if diags.HasError() {
		return diags
	}
	diags.Append(m.setDeclaration(ctx, decl)...)
	diags.Append(r.compileScope(ctx, m, false)...)
	return diags
}

// importFromCluster fills the declarations of an imported scope from the live
// Sidecar: dependencies from egress hosts, ingress, policy, selector; then the
// computed values, so that a re-plan with the matching configuration is empty.
func (r *workloadScopeResource) importFromCluster(ctx context.Context, m *workloadScopeResourceModel) (bool, diag.Diagnostics) {
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	obs, diags := r.readSidecar(ctx, ns, name)
	if diags.HasError() {
		return true, diags
	}
	if obs == nil {
		diags.AddError("Sidecar Not Found", fmt.Sprintf("There is no Sidecar %s/%s to import. Check the namespace and name (kubectl get sidecars -n %s).", ns, name, ns))
		return false, diags
	}
	sc, err := mesh.ParseSidecar("cluster", []byte(obs.Full))
	if err != nil {
		diags.AddError("Unreadable Sidecar", fmt.Sprintf("Sidecar %s/%s cannot be read.\n\nOriginal Error: %s", ns, name, err))
		return true, diags
	}
	diags.Append(r.importSidecar(ctx, m, sc)...)
	if diags.HasError() {
		return true, diags
	}
	// The state keeps what the cluster holds; a config that compiles to it plans empty.
	if normalized, err := normalizeSidecar(obs.Full); err == nil {
		m.Manifest = types.StringValue(normalized)
	}
	return true, diags
}

// setDeclaration stores a decompiled declaration in the input attributes.
func (m *workloadScopeResourceModel) setDeclaration(ctx context.Context, d scope.Declaration) diag.Diagnostics {
	var diags diag.Diagnostics
	m.Namespace = types.StringValue(d.Namespace)
	m.Name = types.StringValue(d.Name)
	if len(d.Selector) > 0 {
		sel, ds := types.MapValueFrom(ctx, types.StringType, d.Selector)
		diags.Append(ds...)
		m.WorkloadSelector = sel
	} else {
		m.WorkloadSelector = types.MapNull(types.StringType)
	}
	depType := types.ObjectType{AttrTypes: map[string]attr.Type{"service": types.StringType, "ports": types.SetType{ElemType: types.Int64Type}}}
	if len(d.Dependencies) > 0 {
		deps := make([]dependencyModel, 0, len(d.Dependencies))
		for _, dep := range d.Dependencies {
			ports := types.SetNull(types.Int64Type)
			if len(dep.Ports) > 0 {
				vals := make([]int64, len(dep.Ports))
				for i, p := range dep.Ports {
					vals[i] = int64(p)
				}
				var ds diag.Diagnostics
				ports, ds = types.SetValueFrom(ctx, types.Int64Type, vals)
				diags.Append(ds...)
			}
			deps = append(deps, dependencyModel{Service: types.StringValue(dep.Service), Ports: ports})
		}
		set, ds := types.SetValueFrom(ctx, depType, deps)
		diags.Append(ds...)
		m.Dependencies = set
	} else {
		m.Dependencies = types.SetNull(depType)
	}
	ingType := types.ObjectType{AttrTypes: map[string]attr.Type{"port": types.Int64Type, "protocol": types.StringType, "default_endpoint": types.StringType}}
	if len(d.Ingress) > 0 {
		ing := make([]ingressModel, 0, len(d.Ingress))
		for _, in := range d.Ingress {
			de := types.StringNull()
			if in.DefaultEndpoint != "" {
				de = types.StringValue(in.DefaultEndpoint)
			}
			ing = append(ing, ingressModel{Port: types.Int64Value(int64(in.Port)), Protocol: types.StringValue(in.Protocol), DefaultEndpoint: de})
		}
		list, ds := types.ListValueFrom(ctx, ingType, ing)
		diags.Append(ds...)
		m.Ingress = list
	} else {
		m.Ingress = types.ListNull(ingType)
	}
	if d.OutboundTrafficPolicy != "" {
		m.OutboundTrafficPolicy = types.StringValue(d.OutboundTrafficPolicy)
	} else {
		m.OutboundTrafficPolicy = types.StringNull()
	}
	return diags
}

func quotedList(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}

// checkWait fails the plan when wait_for_proxies cannot be honoured.
func (r *workloadScopeResource) checkWait(m workloadScopeResourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.WaitForProxies.ValueBool() || r.data == nil {
		return diags
	}
	if r.data.applier == nil {
		diags.AddAttributeError(path.Root("wait_for_proxies"), "Waiting Needs A Cluster",
			"wait_for_proxies = true waits for the proxies of a Sidecar applied to a cluster, but the provider has no "+
				"kubernetes block: the scope lives in the Terraform state only. Add the kubernetes block to the provider, "+
				"or remove wait_for_proxies.")
	} else if r.data.istiod == nil {
		diags.AddAttributeError(path.Root("wait_for_proxies"), "Waiting Needs istiod's Debug Endpoints",
			"wait_for_proxies = true polls istiod's debug endpoints, but the provider has no istiod_debug_url. Set it, "+
				"for example to \"http://127.0.0.1:8080\" while `kubectl -n istio-system port-forward deploy/istiod 8080` "+
				"runs, or remove wait_for_proxies.")
	}
	return diags
}

// waitForProxies waits, when wait_for_proxies is set, until the proxies the
// applied Sidecar governs have acknowledged its scope.
func (r *workloadScopeResource) waitForProxies(ctx context.Context, m *workloadScopeResourceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.WaitForProxies.ValueBool() || r.data == nil || r.data.istiod == nil || r.data.applier == nil {
		return diags
	}
	sc, err := mesh.ParseSidecar("manifest", []byte(m.Manifest.ValueString()))
	if err != nil {
		diags.AddAttributeError(path.Root("manifest"), "Unreadable Manifest",
			fmt.Sprintf("The applied manifest of %s cannot be read back as a Sidecar. Please report this issue to the "+
				"provider developers.\n\nOriginal Error: %s", m.ID.ValueString(), err))
		return diags
	}
	// The proxies istiod gives this Sidecar are those the prediction does:
	// a namespace default yields to Sidecars with a workloadSelector.
	target := istiod.Target{Namespace: sc.Namespace, Name: sc.Name, Spec: sc.Spec,
		Governs: func(labels map[string]string) bool {
			return scope.Selects(sc.Spec.GetWorkloadSelector().GetLabels(), labels)
		}}
	if r.data.predictor != nil {
		governing := r.data.predictor.WithSidecars(sc)
		target.Governs = func(labels map[string]string) bool {
			g := governing.SidecarFor(predict.Proxy{Namespace: sc.Namespace, Labels: labels})
			return g != nil && g.Key() == sc.Key()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, r.data.waitTimeout)
	defer cancel()
	start := time.Now()
	sts, err := r.data.istiod.Wait(wctx, target, time.Second, func(sts []istiod.ProxyStatus) {
		tflog.Info(ctx, "waiting for proxies to acknowledge the scope", map[string]any{
			"id": m.ID.ValueString(), "proxies": len(sts), "pending": len(istiod.Pending(sts)),
			"elapsed": time.Since(start).Round(time.Second).String(),
		})
	})
	switch {
	case err == nil:
		tflog.Info(ctx, "proxies acknowledged the scope", map[string]any{
			"id": m.ID.ValueString(), "proxies": len(sts), "elapsed": time.Since(start).Round(time.Millisecond).String(),
		})
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		pending := istiod.Pending(sts)
		lines := make([]string, len(pending))
		for i, st := range pending {
			lines[i] = fmt.Sprintf("  - %s: %s", st.Proxy.ID, st.Reason)
		}
		diags.AddAttributeError(path.Root("wait_for_proxies"), "Proxies Did Not Acknowledge The Scope",
			fmt.Sprintf("After %s, %d of the %d connected proxies that Sidecar %s governs had not acknowledged its scope:\n%s\n\n"+
				"The Sidecar is applied and recorded in the state (a new scope is marked tainted, so the next apply applies "+
				"it again and waits). Check the proxies with `istioctl proxy-status`, or raise proxy_wait_timeout in the provider.",
				r.data.waitTimeout, len(pending), len(sts), sc.Key(), strings.Join(lines, "\n")))
	default:
		diags.AddAttributeError(path.Root("wait_for_proxies"), "istiod Debug Endpoints Unavailable",
			fmt.Sprintf("Waiting for the proxies of Sidecar %s failed: istiod's debug endpoints did not answer as expected. "+
				"The Sidecar is applied and recorded in the state. Check the provider's istiod_debug_url "+
				"and that istiod serves /debug on it.\n\nOriginal Error: %s", sc.Key(), err))
	}
	return diags
}
