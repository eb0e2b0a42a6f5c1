package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Serve is the provider's protocol server: the framework's, with the plans of
// meshscope_workload_scope answered on a fast path (scopePlanServer). The release binary
// and every test of the provider serve through it. newProvider is New, NewWithSources or
// NewWithClock.
func Serve(newProvider func() provider.Provider) func() (tfprotov6.ProviderServer, error) {
	return func() (tfprotov6.ProviderServer, error) {
		p := newProvider()
		fw, err := providerserver.NewProtocol6WithError(p)()
		if err != nil {
			return nil, err
		}
		mp, ok := p.(*meshscopeProvider)
		if !ok {
			return fw, nil
		}
		return &scopePlanServer{ProviderServer: fw, provider: mp}, nil
	}
}

// scopeTypeName is the resource the fast path plans.
const scopeTypeName = "meshscope_workload_scope"

// scopePlanServer answers PlanResourceChange of a workload scope itself when the plan is
// an ordinary one, and hands every other call to the framework.
//
// Why: a plan of a thousand scopes spent most of the provider's CPU in the framework's
// generic passes over each planned value (collection blocks the schema does not have,
// defaults it does not set, plan modifiers of attributes that have none, reflection into
// the model and back), not in meshscope. The fast path decodes the request once, plans
// through the same workloadScopeResource.plan as ModifyPlan, and encodes the answer once.
//
// It answers only what it can answer as the framework would, which
// TestScopePlanServer_answersAsTheFramework checks: a create or update whose inputs are all
// known, against a known inventory, without private state or identity. A destroy, unknown
// values, private state and identity go to the framework before anything is planned. Once
// planned, the fast path answers with the plan's diagnostics too: the evidence's notes come
// once per provider, so planning the same scope again through the framework would lose them.
//
// The embedded interface hides the framework server's optional RPCs (list resources, actions,
// state stores: Terraform 1.14 on), which this provider does not implement; Terraform then
// hears "unimplemented" instead of the framework's empty answers.
type scopePlanServer struct {
	tfprotov6.ProviderServer
	provider *meshscopeProvider

	schemaOnce sync.Once
	schema     schema.Schema
	objType    basetypes.ObjectType
	tfType     tftypes.Type
}

func (s *scopePlanServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	if req.TypeName == scopeTypeName {
		if resp, ok := s.planScope(ctx, req); ok {
			return resp, nil
		}
	}
	return s.ProviderServer.PlanResourceChange(ctx, req)
}

// scopeSchema returns the resource's schema and its value type, as the framework builds it.
func (s *scopePlanServer) scopeSchema(ctx context.Context) (schema.Schema, tftypes.Type) {
	s.schemaOnce.Do(func() {
		var resp resource.SchemaResponse
		NewWorkloadScopeResource().Schema(ctx, resource.SchemaRequest{}, &resp)
		s.schema = resp.Schema
		s.objType, _ = resp.Schema.Type().(basetypes.ObjectType)
		s.tfType = resp.Schema.Type().TerraformType(ctx)
	})
	return s.schema, s.tfType
}

// scopeTypes returns the resource's value type, as the framework builds it from the schema.
func (s *scopePlanServer) scopeTypes(ctx context.Context) (basetypes.ObjectType, tftypes.Type) {
	_, tfType := s.scopeSchema(ctx)
	return s.objType, tfType
}

// planScope is the fast path; ok is false when the framework must answer.
func (s *scopePlanServer) planScope(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, bool) {
	data := s.provider.configured.Load()
	if !data.known() || len(req.PriorPrivate) > 0 || req.PriorIdentity != nil || req.ProposedNewState == nil || req.Config == nil {
		return nil, false
	}
	objType, tfType := s.scopeTypes(ctx)
	if tfType == nil {
		return nil, false
	}
	proposed, ok := scopeModel(ctx, objType, tfType, req.ProposedNewState)
	if !ok || proposed == nil || !proposed.inputsKnown() {
		return nil, false
	}
	var prior *workloadScopeResourceModel
	if req.PriorState != nil {
		if prior, ok = scopeModel(ctx, objType, tfType, req.PriorState); !ok {
			return nil, false
		}
	}
	configName, ok := configuredName(tfType, req.Config)
	if !ok {
		return nil, false
	}

	// From here on the fast path answers: planning reads the evidence, whose notes come once.
	r := &workloadScopeResource{resourceWithProviderData{data: data}}
	plan := *proposed
	replace, diags := r.plan(ctx, &plan, prior, configName)
	resp := &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState}
	if !diags.HasError() {
		// RequiresReplace as the framework normalises it: sorted by path, each once. The name is the
		// resource's own (plan); the namespace is its RequiresReplace plan modifier, which on update
		// replaces when the planned namespace differs from the state's.
		if prior != nil && !plan.Namespace.Equal(prior.Namespace) {
			replace = append(replace, path.Root("namespace"))
		}
		slices.SortFunc(replace, func(a, b path.Path) int { return strings.Compare(a.String(), b.String()) })
		replace = slices.CompactFunc(replace, path.Path.Equal)
		for _, p := range replace {
			resp.RequiresReplace = append(resp.RequiresReplace, attributePath(ctx, p, &diags))
		}
		value, err := scopeValue(ctx, objType, plan)
		if err == nil {
			var planned tfprotov6.DynamicValue
			planned, err = tfprotov6.NewDynamicValue(tfType, value)
			resp.PlannedState = &planned
		}
		if err != nil {
			diags.AddError("Plan Not Encoded",
				"The planned scope could not be encoded for Terraform. Please report this issue to the provider developers.\n\n"+err.Error())
		}
	}
	// With an error, Terraform reads only the diagnostics; the proposed state stands in for the plan.
	resp.Diagnostics = protocolDiagnostics(ctx, diags)
	return resp, true
}

// protocolDiagnostics converts diagnostics as the framework does for its responses.
func protocolDiagnostics(ctx context.Context, diags diag.Diagnostics) []*tfprotov6.Diagnostic {
	var out []*tfprotov6.Diagnostic
	for _, d := range diags {
		pd := &tfprotov6.Diagnostic{Summary: d.Summary(), Detail: d.Detail(), Severity: tfprotov6.DiagnosticSeverityInvalid}
		switch d.Severity() {
		case diag.SeverityError:
			pd.Severity = tfprotov6.DiagnosticSeverityError
		case diag.SeverityWarning:
			pd.Severity = tfprotov6.DiagnosticSeverityWarning
		}
		if dp, ok := d.(diag.DiagnosticWithPath); ok {
			var pathDiags diag.Diagnostics
			pd.Attribute = attributePath(ctx, dp.Path(), &pathDiags)
			out = append(out, protocolDiagnostics(ctx, pathDiags)...)
		}
		out = append(out, pd)
	}
	return out
}

// attributePath converts a path as the framework does; a step it cannot convert is an error in diags.
func attributePath(ctx context.Context, p path.Path, diags *diag.Diagnostics) *tftypes.AttributePath {
	var steps []tftypes.AttributePathStep
	for _, step := range p.Steps() {
		switch st := step.(type) {
		case path.PathStepAttributeName:
			steps = append(steps, tftypes.AttributeName(string(st)))
		case path.PathStepElementKeyInt:
			steps = append(steps, tftypes.ElementKeyInt(int64(st)))
		case path.PathStepElementKeyString:
			steps = append(steps, tftypes.ElementKeyString(string(st)))
		case path.PathStepElementKeyValue:
			v, err := st.ToTerraformValue(ctx)
			if err != nil {
				diags.AddError("Unable to Convert Attribute Path", "Attribute Path: "+p.String()+"\nOriginal Error: "+err.Error())
				return nil
			}
			steps = append(steps, tftypes.ElementKeyValue(v))
		default:
			diags.AddError("Unable to Convert Attribute Path", "Attribute Path: "+p.String())
			return nil
		}
	}
	return tftypes.NewAttributePathWithSteps(steps)
}

// configuredName is the name the configuration sets: the one value of it that planning reads.
func configuredName(tfType tftypes.Type, dv *tfprotov6.DynamicValue) (types.String, bool) {
	raw, err := dv.Unmarshal(tfType)
	if err != nil || raw.IsNull() || !raw.IsKnown() {
		return types.String{}, false
	}
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return types.String{}, false
	}
	name, ok := attrs["name"]
	switch {
	case !ok:
		return types.String{}, false
	case !name.IsKnown():
		return types.StringUnknown(), true
	case name.IsNull():
		return types.StringNull(), true
	}
	var s string
	if err := name.As(&s); err != nil {
		return types.String{}, false
	}
	return types.StringValue(s), true
}

// scopeModel decodes one of the request's values into the resource's model, without the
// framework's reflection; nil for a null value. ok is false when the value is not what the
// schema says, and the framework then answers (and says what is wrong).
func scopeModel(ctx context.Context, objType basetypes.ObjectType, tfType tftypes.Type, dv *tfprotov6.DynamicValue) (*workloadScopeResourceModel, bool) {
	raw, err := dv.Unmarshal(tfType)
	if err != nil {
		return nil, false
	}
	if raw.IsNull() {
		return nil, true
	}
	v, err := objType.ValueFromTerraform(ctx, raw)
	if err != nil {
		return nil, false
	}
	obj, ok := v.(basetypes.ObjectValue)
	if !ok || obj.IsUnknown() {
		return nil, false
	}
	a := obj.Attributes()
	m := &workloadScopeResourceModel{}
	ok = true
	get := func(name string, dst any) {
		switch d := dst.(type) {
		case *types.String:
			v, good := a[name].(basetypes.StringValue)
			*d, ok = v, ok && good
		case *types.Int64:
			v, good := a[name].(basetypes.Int64Value)
			*d, ok = v, ok && good
		case *types.Bool:
			v, good := a[name].(basetypes.BoolValue)
			*d, ok = v, ok && good
		case *types.List:
			v, good := a[name].(basetypes.ListValue)
			*d, ok = v, ok && good
		case *types.Set:
			v, good := a[name].(basetypes.SetValue)
			*d, ok = v, ok && good
		case *types.Map:
			v, good := a[name].(basetypes.MapValue)
			*d, ok = v, ok && good
		default:
			ok = false
		}
	}
	for name, dst := range m.fields() {
		get(name, dst)
	}
	return m, ok && len(a) == len(m.fields())
}

// scopeValue encodes the model as the resource's value.
func scopeValue(ctx context.Context, objType basetypes.ObjectType, m workloadScopeResourceModel) (tftypes.Value, error) {
	vals := make(map[string]attr.Value, len(objType.AttrTypes))
	for name, f := range m.fields() {
		vals[name] = fieldValue(f)
	}
	obj, diags := basetypes.NewObjectValue(objType.AttrTypes, vals)
	if diags.HasError() {
		return tftypes.Value{}, fmt.Errorf("%s: %s", diags[0].Summary(), diags[0].Detail())
	}
	return obj.ToTerraformValue(ctx)
}

func fieldValue(f any) attr.Value {
	switch v := f.(type) {
	case *types.String:
		return *v
	case *types.Int64:
		return *v
	case *types.Bool:
		return *v
	case *types.List:
		return *v
	case *types.Set:
		return *v
	case *types.Map:
		return *v
	}
	return nil
}

// fields maps each attribute of the schema to its field of the model, as its tfsdk tag says.
func (m *workloadScopeResourceModel) fields() map[string]any {
	return map[string]any{
		"id":                      &m.ID,
		"namespace":               &m.Namespace,
		"name":                    &m.Name,
		"workload_selector":       &m.WorkloadSelector,
		"dependencies":            &m.Dependencies,
		"ingress":                 &m.Ingress,
		"outbound_traffic_policy": &m.OutboundTrafficPolicy,
		"manifest":                &m.Manifest,
		"egress_hosts":            &m.EgressHosts,
		"expected_clusters":       &m.ExpectedClusters,
		"max_clusters":            &m.MaxClusters,
		"wait_for_proxies":        &m.WaitForProxies,
		"review":                  &m.Review,
	}
}

func (s *scopePlanServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	if req.TypeName == scopeTypeName && s.validScope(ctx, req) {
		return &tfprotov6.ValidateResourceConfigResponse{}, nil
	}
	return s.ProviderServer.ValidateResourceConfig(ctx, req)
}

// validScope is the fast path of ValidateResourceConfig: it runs the schema's own
// validators on a fully known configuration and reports whether every one of them passed
// and every required attribute is set. Anything else (an unknown value, an attribute kind it
// does not walk, a value a validator refuses) goes to the framework, which validates again
// from the start and words the diagnostics.
func (s *scopePlanServer) validScope(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) bool {
	sch, tfType := s.scopeSchema(ctx)
	if tfType == nil || req.Config == nil {
		return false
	}
	raw, err := req.Config.Unmarshal(tfType)
	if err != nil || raw.IsNull() || !raw.IsFullyKnown() {
		return false
	}
	v, err := sch.Type().ValueFromTerraform(ctx, raw)
	if err != nil {
		return false
	}
	obj, ok := v.(basetypes.ObjectValue)
	if !ok {
		return false
	}
	w := validationWalk{ctx: ctx, config: tfsdk.Config{Raw: raw, Schema: sch}}
	return w.attributes(path.Empty(), sch.Attributes, obj.Attributes())
}

// validationWalk runs validators over a configuration value as the framework's SchemaValidate
// does, stopping at the first finding.
type validationWalk struct {
	ctx    context.Context
	config tfsdk.Config
}

func (w validationWalk) attributes(at path.Path, attrs map[string]schema.Attribute, vals map[string]attr.Value) bool {
	if len(attrs) != len(vals) {
		return false
	}
	for name, a := range attrs {
		v, ok := vals[name]
		if !ok || !w.attribute(at.AtName(name), a, v) {
			return false
		}
	}
	return true
}

func (w validationWalk) attribute(p path.Path, a schema.Attribute, v attr.Value) bool {
	switch {
	case a.IsComputed() && !a.IsOptional() && !a.IsRequired() && !v.IsNull():
		return false // a value for a computed attribute: the framework says so
	case a.IsRequired() && v.IsNull():
		return false
	}
	// Each kind's validators, called as the framework calls them: with the attribute's path, the
	// configuration and the attribute's own value.
	pe, cfg := p.Expression(), w.config
	str := func(vd validator.String, val basetypes.StringValue) diag.Diagnostics {
		var r validator.StringResponse
		vd.ValidateString(w.ctx, validator.StringRequest{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	i64 := func(vd validator.Int64, val basetypes.Int64Value) diag.Diagnostics {
		var r validator.Int64Response
		vd.ValidateInt64(w.ctx, validator.Int64Request{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	boolean := func(vd validator.Bool, val basetypes.BoolValue) diag.Diagnostics {
		var r validator.BoolResponse
		vd.ValidateBool(w.ctx, validator.BoolRequest{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	mp := func(vd validator.Map, val basetypes.MapValue) diag.Diagnostics {
		var r validator.MapResponse
		vd.ValidateMap(w.ctx, validator.MapRequest{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	list := func(vd validator.List, val basetypes.ListValue) diag.Diagnostics {
		var r validator.ListResponse
		vd.ValidateList(w.ctx, validator.ListRequest{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	set := func(vd validator.Set, val basetypes.SetValue) diag.Diagnostics {
		var r validator.SetResponse
		vd.ValidateSet(w.ctx, validator.SetRequest{Path: p, PathExpression: pe, Config: cfg, ConfigValue: val}, &r)
		return r.Diagnostics
	}
	switch a := a.(type) {
	case schema.StringAttribute:
		return passes(v, a.Validators, str)
	case schema.Int64Attribute:
		return passes(v, a.Validators, i64)
	case schema.BoolAttribute:
		return passes(v, a.Validators, boolean)
	case schema.MapAttribute:
		return passes(v, a.Validators, mp)
	case schema.ListAttribute:
		return passes(v, a.Validators, list)
	case schema.SetAttribute:
		return passes(v, a.Validators, set)
	case schema.SetNestedAttribute:
		val, ok := v.(basetypes.SetValue)
		if !ok || !passes(v, a.Validators, set) || len(a.NestedObject.Validators) > 0 {
			return false
		}
		for _, e := range val.Elements() {
			if !w.nested(p.AtSetValue(e), a.NestedObject.Attributes, e) {
				return false
			}
		}
		return true
	case schema.ListNestedAttribute:
		val, ok := v.(basetypes.ListValue)
		if !ok || !passes(v, a.Validators, list) || len(a.NestedObject.Validators) > 0 {
			return false
		}
		for i, e := range val.Elements() {
			if !w.nested(p.AtListIndex(i), a.NestedObject.Attributes, e) {
				return false
			}
		}
		return true
	}
	return false // an attribute kind the walk does not know
}

// passes reports whether v is a V and every one of an attribute's validators finds nothing in it.
func passes[V attr.Value, D any](v attr.Value, validators []D, validate func(D, V) diag.Diagnostics) bool {
	val, ok := v.(V)
	if !ok {
		return false
	}
	for _, vd := range validators {
		if len(validate(vd, val)) > 0 {
			return false
		}
	}
	return true
}

// nested walks one element of a nested attribute.
func (w validationWalk) nested(p path.Path, attrs map[string]schema.Attribute, e attr.Value) bool {
	obj, ok := e.(basetypes.ObjectValue)
	if !ok {
		return false
	}
	return w.attributes(p, attrs, obj.Attributes())
}
