package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// providerConfigModel is the `provider "meshscope"` block.
type providerConfigModel struct {
	Manifests     types.List       `tfsdk:"manifests"` //< types.String
	IstioVersion  types.String     `tfsdk:"istio_version"`
	RootNamespace types.String     `tfsdk:"root_namespace"`
	DomainSuffix  types.String     `tfsdk:"domain_suffix"`
	SystemHosts   types.List       `tfsdk:"system_hosts"` //< types.String
	ReviewHosts   types.Int64      `tfsdk:"review_host_limit"`
	IstiodDebug   types.String     `tfsdk:"istiod_debug_url"`
	WaitTimeout   types.String     `tfsdk:"proxy_wait_timeout"`
	Kubernetes    *kubernetesModel `tfsdk:"kubernetes"`
	Prometheus    *prometheusModel `tfsdk:"prometheus"`
	// ObservedTrafficFile and ObservedTraffic: see evidenceAttributes.
	ObservedTrafficFile types.String `tfsdk:"observed_traffic_file"`
	ObservedTraffic     types.String `tfsdk:"observed_traffic"`
}

// workloadScopeResourceModel is the meshscope_workload_scope resource.
type workloadScopeResourceModel struct {
	ID                    types.String `tfsdk:"id"`
	Namespace             types.String `tfsdk:"namespace"`
	Name                  types.String `tfsdk:"name"`
	WorkloadSelector      types.Map    `tfsdk:"workload_selector"` //< types.String
	Dependencies          types.Set    `tfsdk:"dependencies"`      //< dependencyModel
	Ingress               types.List   `tfsdk:"ingress"`           //< ingressModel
	OutboundTrafficPolicy types.String `tfsdk:"outbound_traffic_policy"`
	Manifest              types.String `tfsdk:"manifest"`
	EgressHosts           types.List   `tfsdk:"egress_hosts"` //< types.String
	ExpectedClusters      types.Int64  `tfsdk:"expected_clusters"`
	MaxClusters           types.Int64  `tfsdk:"max_clusters"`
	WaitForProxies        types.Bool   `tfsdk:"wait_for_proxies"`
	Review                types.List   `tfsdk:"review"` //< reviewType
}

// reviewType is the object type of a workload_scope.review element: one selected workload,
// before and after the scope (setCompiled builds it).
var reviewType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"workload":                types.StringType,
	"proxies":                 types.StringType,
	"before":                  types.Int64Type,
	"after":                   types.Int64Type,
	"listeners_before":        types.Int64Type,
	"listeners_after":         types.Int64Type,
	"routes_before":           types.Int64Type,
	"routes_after":            types.Int64Type,
	"virtual_hosts_before":    types.Int64Type,
	"virtual_hosts_after":     types.Int64Type,
	"added_hosts":             types.ListType{ElemType: types.StringType},
	"removed_hosts":           types.ListType{ElemType: types.StringType},
	"added_host_count":        types.Int64Type,
	"removed_host_count":      types.Int64Type,
	"risks":                   types.ListType{ElemType: types.StringType},
	"observed_missing":        types.ListType{ElemType: types.StringType},
	"observed_missing_count":  types.Int64Type,
	"unobserved_dependencies": types.ListType{ElemType: types.StringType},
}}

// dependencyModel is one element of workload_scope.dependencies.
type dependencyModel struct {
	Service types.String `tfsdk:"service"`
	Ports   types.Set    `tfsdk:"ports"` //< types.Int64
}

// ingressModel is one element of workload_scope.ingress.
type ingressModel struct {
	Port            types.Int64  `tfsdk:"port"`
	Protocol        types.String `tfsdk:"protocol"`
	DefaultEndpoint types.String `tfsdk:"default_endpoint"`
}

// proxyClustersDataSourceModel is the meshscope_proxy_clusters data source.
type proxyClustersDataSourceModel struct {
	Namespace     types.String `tfsdk:"namespace"`
	Labels        types.Map    `tfsdk:"labels"`   //< types.String
	Sidecars      types.List   `tfsdk:"sidecars"` //< types.String
	Sidecar       types.String `tfsdk:"sidecar"`
	Clusters      types.List   `tfsdk:"clusters"` //< types.String
	ClusterCount  types.Int64  `tfsdk:"cluster_count"`
	OutboundCount types.Int64  `tfsdk:"outbound_count"`
	InboundCount  types.Int64  `tfsdk:"inbound_count"`
	BaselineCount types.Int64  `tfsdk:"baseline_count"`
	IstioctlCount types.Int64  `tfsdk:"istioctl_count"`
	// Listeners are the LDS listener names, sorted.
	Listeners               types.List  `tfsdk:"listeners"` //< types.String
	ListenerCount           types.Int64 `tfsdk:"listener_count"`
	ListenersAddressUnknown types.Int64 `tfsdk:"listeners_address_unknown"`
	BaselineListenerCount   types.Int64 `tfsdk:"baseline_listener_count"`
	// Routes are the RDS route configuration names, sorted.
	Routes                  types.List  `tfsdk:"routes"` //< types.String
	RouteCount              types.Int64 `tfsdk:"route_count"`
	VirtualHosts            types.List  `tfsdk:"virtual_hosts"` //< types.String
	VirtualHostCount        types.Int64 `tfsdk:"virtual_host_count"`
	Endpoints               types.List  `tfsdk:"endpoints"`
	UnhealthyEndpoints      types.List  `tfsdk:"unhealthy_endpoints"`
	EndpointCount           types.Int64 `tfsdk:"endpoint_count"`
	EndpointsAddressUnknown types.Int64 `tfsdk:"endpoints_address_unknown"`
}

// inputsKnown reports whether every input attribute of the scope is known, so
// that the computed attributes can be decided at plan time.
func (m workloadScopeResourceModel) inputsKnown() bool {
	return fullyKnown(m.Namespace) && fullyKnown(m.Name) && fullyKnown(m.WorkloadSelector) &&
		fullyKnown(m.Dependencies) && fullyKnown(m.Ingress) && fullyKnown(m.OutboundTrafficPolicy)
}

// fullyKnown reports whether a value and everything nested in it is known.
func fullyKnown(v attr.Value) bool {
	if v.IsUnknown() {
		return false
	}
	if v.IsNull() {
		return true
	}
	var elems []attr.Value
	switch x := v.(type) {
	case basetypes.ListValue:
		elems = x.Elements()
	case basetypes.SetValue:
		elems = x.Elements()
	case basetypes.MapValue:
		for _, e := range x.Elements() {
			elems = append(elems, e)
		}
	case basetypes.ObjectValue:
		for _, e := range x.Attributes() {
			elems = append(elems, e)
		}
	}
	for _, e := range elems {
		if !fullyKnown(e) {
			return false
		}
	}
	return true
}

// selector returns workload_selector as a Go map (nil when unset).
func (m workloadScopeResourceModel) selector(ctx context.Context) (map[string]string, diag.Diagnostics) {
	return stringMap(ctx, m.WorkloadSelector)
}

// declaration converts the known inputs into a compiler declaration. The
// dependencies are sorted (by service, then ports) so that the declaration does
// not depend on the order Terraform hands the set over in; deps[i] is the set
// element behind Declaration.Dependencies[i], for diagnostics.
func (m workloadScopeResourceModel) declaration(ctx context.Context) (scope.Declaration, []attr.Value, diag.Diagnostics) {
	var diags diag.Diagnostics
	d := scope.Declaration{
		Name:                  m.Name.ValueString(),
		Namespace:             m.Namespace.ValueString(),
		OutboundTrafficPolicy: m.OutboundTrafficPolicy.ValueString(),
	}

	sel, ds := m.selector(ctx)
	diags.Append(ds...)
	d.Selector = sel

	type pair struct {
		dep  scope.Dependency
		elem attr.Value
	}
	var pairs []pair
	for _, elem := range m.Dependencies.Elements() {
		obj, ok := elem.(basetypes.ObjectValue)
		if !ok {
			diags.AddError("Unexpected Dependency Type",
				"A dependencies element is not an object. Please report this issue to the provider developers.")
			continue
		}
		// The attributes directly, without the framework's reflection: a plan reads thousands.
		attrs := obj.Attributes()
		service, ok1 := attrs["service"].(types.String)
		ports, ok2 := attrs["ports"].(types.Set)
		if !ok1 || !ok2 {
			diags.AddError("Unexpected Dependency Type",
				"A dependencies element lacks service or ports. Please report this issue to the provider developers.")
			continue
		}
		dep := scope.Dependency{Service: service.ValueString()}
		for _, p := range ports.Elements() {
			if n, ok := p.(types.Int64); ok && !n.IsNull() && !n.IsUnknown() {
				dep.Ports = append(dep.Ports, uint32(n.ValueInt64())) //nolint:gosec // validated to 1..65535
			}
		}
		sort.Slice(dep.Ports, func(i, j int) bool { return dep.Ports[i] < dep.Ports[j] })
		pairs = append(pairs, pair{dep: dep, elem: elem})
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		a, b := pairs[i].dep, pairs[j].dep
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return portsKey(a.Ports) < portsKey(b.Ports)
	})
	elems := make([]attr.Value, len(pairs))
	for i, p := range pairs {
		d.Dependencies = append(d.Dependencies, p.dep)
		elems[i] = p.elem
	}

	if !m.Ingress.IsNull() {
		var ingress []ingressModel
		diags.Append(m.Ingress.ElementsAs(ctx, &ingress, false)...)
		for _, in := range ingress {
			d.Ingress = append(d.Ingress, scope.Ingress{
				Port:            uint32(in.Port.ValueInt64()), //nolint:gosec // validated to 1..65535
				Protocol:        in.Protocol.ValueString(),
				DefaultEndpoint: in.DefaultEndpoint.ValueString(),
			})
		}
	}
	return d, elems, diags
}

func portsKey(ports []uint32) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%05d,", p)
	}
	return b.String()
}

// setCompiled stores the compiler's result, the predicted cluster count and the
// review of the selected workloads.
// Each review element lists at most hostLimit added and removed hosts. The values are built
// directly, without the framework's reflection: a plan of a thousand scopes builds tens of
// thousands of them.
func (m *workloadScopeResourceModel) setCompiled(res *scope.Result, rv *review.Scope, hostLimit int) {
	m.Name = types.StringValue(res.Name)
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + res.Name)
	m.Manifest = types.StringValue(res.Manifest)
	m.EgressHosts = stringsValue(sortedCopy(res.EgressHosts))
	m.ExpectedClusters = types.Int64Value(int64(rv.ExpectedClusters))

	elems := make([]attr.Value, 0, len(rv.Workloads))
	for _, w := range rv.Workloads {
		risks := make([]string, len(w.Risks))
		for i, k := range w.Risks {
			risks[i] = k.Message
		}
		e := map[string]attr.Value{
			"workload":                types.StringValue(w.Key),
			"proxies":                 types.StringValue(w.Proxy.Replicas.String()),
			"before":                  types.Int64Value(int64(w.Before)),
			"after":                   types.Int64Value(int64(w.After)),
			"listeners_before":        types.Int64Value(int64(w.ListenersBefore)),
			"listeners_after":         types.Int64Value(int64(w.ListenersAfter)),
			"routes_before":           types.Int64Value(int64(w.RoutesBefore)),
			"routes_after":            types.Int64Value(int64(w.RoutesAfter)),
			"virtual_hosts_before":    types.Int64Value(int64(w.VirtualHostsBefore)),
			"virtual_hosts_after":     types.Int64Value(int64(w.VirtualHostsAfter)),
			"added_hosts":             stringsValue(firstN(w.AddedHosts, hostLimit)),
			"removed_hosts":           stringsValue(firstN(w.RemovedHosts, hostLimit)),
			"added_host_count":        types.Int64Value(int64(len(w.AddedHosts))),
			"removed_host_count":      types.Int64Value(int64(len(w.RemovedHosts))),
			"risks":                   stringsValue(risks),
			"observed_missing":        types.ListNull(types.StringType),
			"observed_missing_count":  types.Int64Null(),
			"unobserved_dependencies": types.ListNull(types.StringType),
		}
		if o := w.Observed; o != nil {
			missing := make([]string, 0, len(o.Cut))
			for _, c := range o.Cut {
				missing = append(missing, callTarget(c.Call))
			}
			e["observed_missing"] = stringsValue(firstN(sortedCopy(missing), hostLimit))
			e["observed_missing_count"] = types.Int64Value(int64(len(missing)))
			e["unobserved_dependencies"] = stringsValue(o.Unobserved)
		}
		elems = append(elems, types.ObjectValueMust(reviewType.AttrTypes, e))
	}
	m.Review = types.ListValueMust(reviewType, elems)
}

// stringsValue is a list value of strings, never null.
func stringsValue(l []string) types.List {
	elems := make([]attr.Value, len(l))
	for i, s := range l {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

// setComputedUnknown marks the values that cannot be decided yet as unknown.
func (m *workloadScopeResourceModel) setComputedUnknown() {
	m.Manifest = types.StringUnknown()
	m.EgressHosts = types.ListUnknown(types.StringType)
	m.ExpectedClusters = types.Int64Unknown()
	m.Review = types.ListUnknown(reviewType)
	if m.Name.IsUnknown() || m.Name.IsNull() {
		m.Name = types.StringUnknown()
		m.ID = types.StringUnknown()
	} else {
		m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	}
}

// proxy returns the proxy the data source asks about.
func (m proxyClustersDataSourceModel) proxy(ctx context.Context) (predict.Proxy, diag.Diagnostics) {
	labels, diags := stringMap(ctx, m.Labels)
	return predict.Proxy{Namespace: m.Namespace.ValueString(), Labels: labels}, diags
}

// setPrediction stores a prediction and the counts for the same proxy without any Sidecar.
func (m *proxyClustersDataSourceModel) setPrediction(res, baseline *predict.Result, ls []predict.Listener, baseListeners int,
	rs []predict.Route, eps []predict.Endpoint) diag.Diagnostics {
	rnames := make([]string, len(rs))
	vhosts := 0
	vnames := []string{} // an empty list, not null, for a proxy without routes
	for i, r := range rs {
		rnames[i] = r.Name
		vhosts += len(r.VirtualHosts)
		if len(r.VirtualHosts) == 0 {
			vnames = append(vnames, r.Name)
		}
		for _, vh := range r.VirtualHosts {
			vnames = append(vnames, r.Name+"/"+vh.Name)
		}
	}
	slices.Sort(vnames)
	m.Routes, _ = types.ListValueFrom(context.Background(), types.StringType, rnames)
	m.VirtualHosts, _ = types.ListValueFrom(context.Background(), types.StringType, vnames)
	m.RouteCount = types.Int64Value(int64(len(rs)))
	m.VirtualHostCount = types.Int64Value(int64(vhosts))
	epsUnknown := 0
	enames, unhealthy := make([]string, 0, len(eps)), []string{}
	for _, e := range eps {
		if !e.AddressKnown {
			epsUnknown++
		}
		name := e.Cluster + "/" + e.Address + ":" + strconv.Itoa(e.Port)
		enames = append(enames, name)
		if e.Health != predict.Healthy {
			unhealthy = append(unhealthy, name)
		}
	}
	m.Endpoints, _ = types.ListValueFrom(context.Background(), types.StringType, enames)
	m.UnhealthyEndpoints, _ = types.ListValueFrom(context.Background(), types.StringType, unhealthy)
	m.EndpointCount = types.Int64Value(int64(len(eps)))
	m.EndpointsAddressUnknown = types.Int64Value(int64(epsUnknown))
	lnames := make([]string, len(ls))
	unknown := 0
	for i, l := range ls {
		lnames[i] = l.Name
		if !l.AddressKnown {
			unknown++
		}
	}
	m.Listeners, _ = types.ListValueFrom(context.Background(), types.StringType, lnames)
	m.ListenerCount = types.Int64Value(int64(len(ls)))
	m.ListenersAddressUnknown = types.Int64Value(int64(unknown))
	m.BaselineListenerCount = types.Int64Value(int64(baseListeners))
	names, diags := types.ListValueFrom(context.Background(), types.StringType, res.Names())
	m.Clusters = names
	m.Sidecar = types.StringValue(res.Sidecar)
	m.ClusterCount = types.Int64Value(int64(len(res.Clusters)))
	m.OutboundCount = types.Int64Value(int64(res.Count(predict.Outbound)))
	m.InboundCount = types.Int64Value(int64(res.Count(predict.Inbound)))
	m.BaselineCount = types.Int64Value(int64(len(baseline.Clusters)))
	m.IstioctlCount = types.Int64Value(int64(len(res.Clusters) + len(res.Bootstrap)))
	return diags
}

// stringMap converts a map of strings; null gives nil.
func stringMap(ctx context.Context, m types.Map) (map[string]string, diag.Diagnostics) {
	if m.IsNull() || m.IsUnknown() {
		return nil, nil
	}
	out := map[string]string{}
	for k, v := range m.Elements() {
		if s, ok := v.(types.String); ok && s.IsNull() {
			// The attribute's validator names the key; this keeps a null from becoming a conversion error.
			var diags diag.Diagnostics
			diags.AddError("Null Map Value", fmt.Sprintf("The map key %q has a null value. Give a string, or remove the key.", k))
			return nil, diags
		}
	}
	diags := m.ElementsAs(ctx, &out, false)
	return out, diags
}

// stringList converts a list of strings; null gives nil.
func stringList(ctx context.Context, l types.List) ([]string, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var out []string
	diags := l.ElementsAs(ctx, &out, false)
	if out == nil {
		out = []string{}
	}
	return out, diags
}

// nonNil returns in, or an empty slice for nil, so that a list attribute is empty rather than null.
func nonNil[T any](in []T) []T {
	if in == nil {
		return []T{}
	}
	return in
}

func sortedCopy(in []string) []string {
	out := append([]string{}, in...)
	sort.Strings(out)
	return out
}

// firstN returns at most the first n elements of list, never nil.
func firstN[T any](list []T, n int) []T {
	return nonNil(list[:min(len(list), max(n, 0))])
}
