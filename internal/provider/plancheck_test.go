package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// terraform-plugin-testing has no way to expect a warning: Terraform prints
// warnings, but the plan JSON the plan checks read does not carry them; and
// ExpectError sees the error text, not the attribute path it belongs to. The
// provider server below records the diagnostics it returns while validating,
// configuring and planning, and the checks of this file assert on them after
// the real terraform plan.

// diagRecorder collects the diagnostics the provider returns.
type diagRecorder struct {
	mu    sync.Mutex
	diags []*tfprotov6.Diagnostic
	// configured counts the provider instances configured.
	configured int
}

func (r *diagRecorder) add(diags []*tfprotov6.Diagnostic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.diags = append(r.diags, diags...)
}

// reset forgets the diagnostics recorded so far.
func (r *diagRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.diags = nil
}

func (r *diagRecorder) warnings() []*tfprotov6.Diagnostic {
	return r.withSeverity(tfprotov6.DiagnosticSeverityWarning)
}

func (r *diagRecorder) errors() []*tfprotov6.Diagnostic {
	return r.withSeverity(tfprotov6.DiagnosticSeverityError)
}

func (r *diagRecorder) withSeverity(sev tfprotov6.DiagnosticSeverity) []*tfprotov6.Diagnostic {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tfprotov6.Diagnostic
	for _, d := range r.diags {
		if d.Severity == sev {
			out = append(out, d)
		}
	}
	return out
}

// hasError reports whether an error with the summary was recorded on the
// attribute path (as diagPath renders it).
func (r *diagRecorder) hasError(summary, attrPath string) bool {
	for _, d := range r.errors() {
		if d.Summary == summary && diagPath(d) == attrPath {
			return true
		}
	}
	return false
}

// recordingServer is the provider server, recording the diagnostics of
// validation, configuration and planning.
type recordingServer struct {
	tfprotov6.ProviderServer
	rec *diagRecorder
}

func (s recordingServer) ValidateProviderConfig(ctx context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateProviderConfig(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	resp, err := s.ProviderServer.ConfigureProvider(ctx, req)
	s.rec.mu.Lock()
	s.rec.configured++
	s.rec.mu.Unlock()
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateResourceConfig(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

func (s recordingServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp, err := s.ProviderServer.ReadDataSource(ctx, req)
	if resp != nil {
		s.rec.add(resp.Diagnostics)
	}
	return resp, err
}

// recordingFactories serves the provider in-process and records its plan diagnostics in rec.
func recordingFactories(rec *diagRecorder) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"meshscope": func() (tfprotov6.ProviderServer, error) {
			s, err := Serve(New("test"))()
			if err != nil {
				return nil, err
			}
			return recordingServer{ProviderServer: s, rec: rec}, nil
		},
	}
}

// expectWarning checks that planning produced a warning with the summary, on the
// attribute (its root name; "" for a warning on the resource as a whole), whose
// detail matches the expression.
type expectWarning struct {
	rec     *diagRecorder
	summary string
	attr    string
	detail  *regexp.Regexp
}

var _ plancheck.PlanCheck = expectWarning{}

func (e expectWarning) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	warnings := e.rec.warnings()
	for _, d := range warnings {
		if d.Summary == e.summary && diagAttribute(d) == e.attr && e.detail.MatchString(d.Detail) {
			return
		}
	}
	resp.Error = fmt.Errorf("no warning %q on %q with a detail matching %s; the plan warned:\n%s",
		e.summary, e.attr, e.detail, formatDiags(warnings))
}

// expectNoWarnings checks that planning produced no warning at all.
type expectNoWarnings struct {
	rec *diagRecorder
}

var _ plancheck.PlanCheck = expectNoWarnings{}

func (e expectNoWarnings) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if w := e.rec.warnings(); len(w) > 0 {
		resp.Error = fmt.Errorf("the plan warned:\n%s", formatDiags(w))
	}
}

// diagAttribute returns the root attribute name of a diagnostic, or "".
func diagAttribute(d *tfprotov6.Diagnostic) string {
	if d.Attribute == nil || len(d.Attribute.Steps()) == 0 {
		return ""
	}
	if name, ok := d.Attribute.Steps()[0].(tftypes.AttributeName); ok {
		return string(name)
	}
	return ""
}

// diagPath renders the attribute path of a diagnostic like Terraform's
// references: system_hosts[1], workload_selector["app"]; a set element is [*].
// It is "" for a diagnostic of the resource (or provider) as a whole.
func diagPath(d *tfprotov6.Diagnostic) string {
	if d.Attribute == nil {
		return ""
	}
	var b strings.Builder
	for _, step := range d.Attribute.Steps() {
		switch s := step.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(s))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(s))
		default:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

func formatDiags(diags []*tfprotov6.Diagnostic) string {
	if len(diags) == 0 {
		return "  (nothing)"
	}
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "  %q on %q: %s\n", d.Summary, diagPath(d), d.Detail)
	}
	return b.String()
}

// expectPriorValue checks a value of the resource's prior state in the plan, the
// left-hand side of `expected_clusters = 19 -> 13`.
type expectPriorValue struct {
	address string
	path    tfjsonpath.Path
	check   knownvalue.Check
}

var _ plancheck.PlanCheck = expectPriorValue{}

func (e expectPriorValue) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != e.address {
			continue
		}
		v, err := tfjsonpath.Traverse(rc.Change.Before, e.path)
		if err != nil {
			resp.Error = fmt.Errorf("%s: prior value at %s: %w", e.address, e.path, err)
			return
		}
		if err := e.check.CheckValue(v); err != nil {
			resp.Error = fmt.Errorf("%s: prior value at %s: %w", e.address, e.path, err)
		}
		return
	}
	resp.Error = fmt.Errorf("%s: not in the plan", e.address)
}
