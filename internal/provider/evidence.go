package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// The values of observed_traffic.
const (
	observedWarn  = "warn"
	observedError = "error"
	observedOff   = "off"
)

// prometheusModel is the provider's prometheus block.
type prometheusModel struct {
	URL           types.String `tfsdk:"url"`
	Window        types.String `tfsdk:"window"`
	BearerToken   types.String `tfsdk:"bearer_token"`
	Headers       types.Map    `tfsdk:"headers"` //< types.String
	CACertificate types.String `tfsdk:"ca_certificate"`
	Insecure      types.Bool   `tfsdk:"insecure"`
	Timeout       types.String `tfsdk:"timeout"`
}

func prometheusBlockSchema() schema.Block {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Observed traffic: a Prometheus server that scrapes Istio's standard metrics. With it, every " +
			"`meshscope_workload_scope` is checked against the calls its workloads really made over `window` " +
			"(`istio_requests_total` for HTTP and gRPC, `istio_tcp_connections_opened_total` for TCP), and the " +
			"`meshscope_observed_dependencies` data source reads them. The provider issues one aggregated instant " +
			"query per run, shared by every scope, only when a scope or data source needs it. The token never " +
			"reaches the state or the logs.",
		Attributes: map[string]schema.Attribute{
			"url": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The server's base URL, for example `http://127.0.0.1:9090` while " +
					"`kubectl -n istio-system port-forward svc/prometheus 9090` runs. Required in this block."},
			"window": schema.StringAttribute{Optional: true,
				MarkdownDescription: "How far back to look, as a Prometheus duration. Defaults to `\"" + traffic.DefaultWindow + "\"`. " +
					"Calls rarer than the window (a monthly job) are not seen, and the window cannot reach further back " +
					"than the server keeps samples (6 hours in Istio's sample Prometheus)."},
			"bearer_token": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Sent as `Authorization: Bearer`. Defaults to the `" + traffic.TokenEnv + "` environment variable."},
			"headers": schema.MapAttribute{Optional: true, ElementType: types.StringType, Sensitive: true,
				MarkdownDescription: "Headers sent with every request, for example a tenant header of a multi-tenant Prometheus, " +
					"or `Authorization` for a server behind basic authentication. Sensitive: they may carry credentials."},
			"ca_certificate": schema.StringAttribute{Optional: true,
				MarkdownDescription: "A PEM bundle to trust, besides the system's roots, for an `https` URL."},
			"insecure": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip the verification of the server's certificate. For tests only."},
			"timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "How long the query may take, as a Go duration. Defaults to `\"" + traffic.DefaultTimeout.String() + "\"`."},
		},
	}
}

// evidenceAttributes are the provider attributes beside the prometheus block.
func evidenceAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"observed_traffic_file": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Observed traffic from a file instead of a live server: the JSON the Prometheus HTTP API " +
				"returns for meshscope's query, written by the command `terraform-provider-meshscope query` prints. GitOps " +
				"CI and air-gapped plans work from it. Exclusive with the `prometheus` block."},
		"observed_traffic": schema.StringAttribute{Optional: true,
			MarkdownDescription: "What an observed call that a scope would cut does to the plan: `warn` (the default when " +
				"a `prometheus` block or `observed_traffic_file` is set) makes it a warning on the scope's `dependencies`, " +
				"`error` fails the plan, `off` skips the check and the query. With `warn`, a server that cannot be read, or that " +
				"holds no Istio series in the window, is a warning and the scopes are not checked; with `error`, it fails the plan: " +
				"no evidence is not evidence of no traffic.",
			Validators: []validator.String{stringvalidator.OneOf(observedWarn, observedError, observedOff)}},
	}
}

// evidenceSource reads the observed traffic once per provider instance, when the first scope or
// data source asks for it, and resolves it against the loaded inventory (traffic.Load).
type evidenceSource struct {
	mode   string
	src    traffic.Source
	domain string

	once sync.Once
	ev   *traffic.Evidence
	// fault is why there is no evidence, an answer without Istio series included; notes are
	// what every consumer should hear once (callers the inventory lacks).
	fault         *traffic.Fault
	notesMu       sync.Mutex
	notesReported bool
	notes         diag.Diagnostics
}

// describe names the source for messages.
func (s *evidenceSource) describe() string { return s.src.Describe() }

// configureEvidence reads the prometheus block, observed_traffic_file and observed_traffic.
// It returns nil when there is no evidence to read (none configured, or observed_traffic = "off").
func configureEvidence(ctx context.Context, cfg providerConfigModel, domain string) (*evidenceSource, diag.Diagnostics) {
	var diags diag.Diagnostics
	mode := cfg.ObservedTraffic.ValueString()
	hasFile := !cfg.ObservedTrafficFile.IsNull() && !cfg.ObservedTrafficFile.IsUnknown()
	if cfg.Prometheus == nil && !hasFile {
		if mode == observedWarn || mode == observedError {
			diags.AddAttributeError(path.Root("observed_traffic"), "No Observed Traffic To Check",
				fmt.Sprintf("observed_traffic = %q checks scopes against observed traffic, but neither a prometheus block "+
					"nor observed_traffic_file is set. Add one, or remove observed_traffic.", mode))
		}
		return nil, diags
	}
	if mode == "" {
		mode = observedWarn
	}
	src := &evidenceSource{mode: mode, domain: domain}
	if hasFile {
		src.src.File, src.src.FileGiven = cfg.ObservedTrafficFile.ValueString(), true
	}
	if m := cfg.Prometheus; m != nil {
		src.src.Prometheus, src.src.Window, src.src.TokenGiven = m.config(ctx, &diags)
	}
	for _, f := range src.src.Check() {
		diags.Append(settingDiagnostic(f, cfg.Prometheus))
		if f.Setting == traffic.SettingSource { // one source first, then its settings
			break
		}
	}
	if diags.HasError() || mode == observedOff {
		return nil, diags
	}
	return src, diags
}

// config turns the prometheus block into the client's settings, the window and whether a
// token is given; traffic's Check validates them.
func (m *prometheusModel) config(ctx context.Context, diags *diag.Diagnostics) (*traffic.Prometheus, string, bool) {
	p := &traffic.Prometheus{
		URL:           m.URL.ValueString(),
		BearerToken:   m.BearerToken.ValueString(),
		CACertificate: m.CACertificate.ValueString(),
		Insecure:      m.Insecure.ValueBool(),
		Timeout:       traffic.DefaultTimeout,
	}
	if !m.Timeout.IsNull() {
		p.Timeout, _ = time.ParseDuration(m.Timeout.ValueString()) // one that does not parse is 0, which Check refuses
	}
	if !m.Headers.IsNull() {
		p.Headers = map[string]string{}
		diags.Append(m.Headers.ElementsAs(ctx, &p.Headers, false)...)
	}
	return p, stringOr(m.Window, traffic.DefaultWindow), !m.BearerToken.IsNull()
}

// settingDiagnostic words a fault of the settings on the attribute at fault.
func settingDiagnostic(f *traffic.Fault, m *prometheusModel) diag.Diagnostic {
	at := func(name string) path.Path { return path.Root("prometheus").AtName(name) }
	summary := f.Code.Summary()
	switch f.Code {
	case traffic.CodeTwoSources:
		return diag.NewAttributeErrorDiagnostic(path.Root("observed_traffic_file"), summary,
			"Both a prometheus block and observed_traffic_file are set. Keep one: the file is a saved answer of the same "+
				"query, for plans that cannot reach Prometheus.")
	case traffic.CodeEmptyFile:
		return diag.NewAttributeErrorDiagnostic(path.Root("observed_traffic_file"), summary,
			"observed_traffic_file is empty. Give the path of the file the `query` command's curl line writes.")
	case traffic.CodeMissingURL:
		return diag.NewAttributeErrorDiagnostic(at("url"), summary,
			"The prometheus block needs url, the server's base URL, for example \"http://127.0.0.1:9090\".")
	case traffic.CodeInvalidURL:
		return diag.NewAttributeErrorDiagnostic(at("url"), summary,
			fmt.Sprintf("The value %q is not a base URL of a Prometheus server. Use the form %q.\n\nOriginal Error: %s", f.Value, traffic.ExampleURL, f))
	case traffic.CodeURLCredentials:
		return diag.NewAttributeErrorDiagnostic(at("url"), summary,
			fmt.Sprintf("The URL %s carries a user and password, which the plan would show. Set bearer_token (or the %s "+
				"environment variable), or basic authentication in headers = { Authorization = \"Basic ...\" }, both sensitive.", f.Where, traffic.TokenEnv))
	case traffic.CodeInvalidWindow:
		return diag.NewAttributeErrorDiagnostic(at("window"), summary,
			fmt.Sprintf("The value %q is not a Prometheus duration. Use a duration such as \"7d\", \"36h\" or \"2w\".\n\nOriginal Error: %s", f.Value, f))
	case traffic.CodeInvalidTimeout:
		return diag.NewAttributeErrorDiagnostic(at("timeout"), summary,
			fmt.Sprintf("The value %q is not a positive duration. Use a Go duration such as \"30s\" or \"2m\".", m.Timeout.ValueString()))
	case traffic.CodeInvalidHeader:
		return diag.NewAttributeErrorDiagnostic(at("headers"), summary,
			fmt.Sprintf("The header %q cannot be sent. Give HTTP header names (letters, digits and '-'), and values on one line.\n\nOriginal Error: %s", f.Value, f))
	case traffic.CodeInvalidCA:
		return diag.NewAttributeErrorDiagnostic(at("ca_certificate"), summary,
			fmt.Sprintf("ca_certificate holds no PEM certificate. Give the PEM text (-----BEGIN CERTIFICATE----- ...), for example file(\"ca.crt\").\n\nOriginal Error: %s", f))
	}
	return diag.NewErrorDiagnostic(summary, f.Error())
}

// known reports whether every attribute of the block is known.
func (m *prometheusModel) known() bool {
	if m == nil {
		return true
	}
	for _, v := range []interface{ IsUnknown() bool }{m.URL, m.Window, m.BearerToken, m.Headers, m.CACertificate, m.Insecure, m.Timeout} {
		if v.IsUnknown() {
			return false
		}
	}
	return true
}

// get returns the evidence, reading it the first time. A nil Evidence means the scopes are not
// checked: diags then say why (a warning with observed_traffic = "warn", an error with "error",
// an answer without Istio series included; a wrong setting or file an error in both). Notes and
// faults that concern the whole provider come once, with the first call.
func (s *evidenceSource) get(ctx context.Context, inv *mesh.Inventory) (*traffic.Evidence, diag.Diagnostics) {
	return s.evidence(ctx, inv, false)
}

// require is get for a consumer that cannot do without evidence, the data source: every reason
// there is none is an error.
func (s *evidenceSource) require(ctx context.Context, inv *mesh.Inventory) (*traffic.Evidence, diag.Diagnostics) {
	return s.evidence(ctx, inv, true)
}

func (s *evidenceSource) evidence(ctx context.Context, inv *mesh.Inventory, required bool) (*traffic.Evidence, diag.Diagnostics) {
	s.once.Do(func() { s.read(ctx, inv) })
	var diags diag.Diagnostics
	s.notesMu.Lock()
	first := !s.notesReported
	s.notesReported = true
	s.notesMu.Unlock()
	if first {
		diags.Append(s.notes...)
	}
	if s.fault == nil {
		return s.ev, diags
	}
	// In "error" mode no evidence fails the plan, whatever the reason: a gate pointed at a
	// server that holds no Istio series must not pass every change.
	asError := required || s.fault.Input() || s.mode == observedError
	// A fault of the provider's settings shows once, with the first resource planned (an error
	// there fails the plan all the same); the data source, which has nothing to read without
	// evidence, says why each time.
	if required || first {
		diags.Append(s.faultDiagnostic(asError, required))
	}
	return nil, diags
}

// providerNote says that a diagnostic concerns the provider, though the framework shows it on
// the resource that first read the evidence.
const providerNote = "This concerns the provider's observed traffic settings, not this resource: it is shown once per run, " +
	"with the first resource planned that reads the evidence."

// providerSummary is the summary of a diagnostic about the provider's evidence settings or
// what they read: the framework can only report it on a resource, so the summary says whose it is.
func providerSummary(c problem.Code) string { return "Provider Configuration: " + c.Summary() }

// overWindow says what window an answer covers: "over the last 7d", or, for an answer without
// series (which carry the window), "in the window it covers".
func overWindow(window string) string {
	if window == "" {
		return "in the window it covers"
	}
	return "over the last " + window
}

func (s *evidenceSource) read(ctx context.Context, inv *mesh.Inventory) {
	start := time.Now()
	ev, err := traffic.Load(ctx, s.src, inv, s.domain)
	if err != nil {
		if !errors.As(err, &s.fault) {
			s.fault = &traffic.Fault{Kind: traffic.FaultUnreachable, Code: traffic.CodeUnreachable, Setting: traffic.SettingURL, Err: err}
		}
		tflog.Info(ctx, "observed traffic not read", map[string]any{"source": s.describe(), "code": string(s.fault.Code),
			"duration": time.Since(start).Round(time.Millisecond).String()})
		return
	}
	s.ev = ev
	tflog.Info(ctx, "read observed traffic", map[string]any{
		"source": ev.Source, "window": ev.Window, "series": ev.Series,
		"workloads": len(ev.Workloads()), "duration": time.Since(start).Round(time.Millisecond).String(),
	})
	if facts := ev.ShortFacts(); facts != "" {
		fix := "Shorten prometheus.window to the span it holds"
		if ev.Coverage.Covered != 0 {
			fix = fmt.Sprintf("Set prometheus.window to %q or less", ev.Coverage.Covered.String())
		}
		s.notes.AddWarning(providerSummary(traffic.CodeShortWindow),
			fmt.Sprintf("%s. Prometheus answers a longer window all the same; the counts in these warnings are labelled with the span "+
				"it holds. %s, or query a server that keeps the window (Thanos, Mimir). %s", facts, fix, providerNote))
	}
	if ev.Coverage.Err != nil {
		tflog.Warn(ctx, "could not check the span Prometheus holds", map[string]any{"error": ev.Coverage.Err.Error()})
	}
	if r := ev.Unknowns(nil); r.CallerCount > 0 {
		var names []string
		for _, u := range r.Callers {
			names = append(names, fmt.Sprintf("%s/%s (%s)", u.Namespace, u.Workload, u.Amount()))
		}
		more := ""
		if n := r.CallerCount - len(r.Callers); n > 0 {
			more = fmt.Sprintf(", and %d more", n)
		}
		s.notes.AddWarning(providerSummary(traffic.CodeUnknownCallers),
			fmt.Sprintf("%s names %d calling workload(s) that the inventory does not hold: %s%s. Their calls are not checked. "+
				"Istio names a workload by its controller (Deployment, StatefulSet, ...) or a bare Pod's name; add their "+
				"manifests to the inventory, or ignore this if they are gone. %s", s.describe(), r.CallerCount, strings.Join(names, ", "), more, providerNote))
	}
}

// faultDiagnostic says why the evidence could not be read, naming the setting at fault.
// required says the consumer is the data source.
func (s *evidenceSource) faultDiagnostic(asError, required bool) diag.Diagnostic {
	f := s.fault
	summary, fix := f.Code.Summary(), "Fix the prometheus block."
	switch f.Code {
	case traffic.CodeEmpty:
		return s.emptyDiagnostic(asError, required)
	case traffic.CodeUnreachable:
		fix = "Check prometheus.url and that the server is reachable from where terraform runs (a port-forward, say)."
	case traffic.CodeTimeout:
		fix = "Raise prometheus.timeout, shorten prometheus.window, or check the server's load."
	case traffic.CodeUnauthorized:
		fix = "Set prometheus.bearer_token (or the " + traffic.TokenEnv + " environment variable) to a token the server accepts, or the headers it expects."
	case traffic.CodeTLS:
		fix = "Set prometheus.ca_certificate to the CA that signed the server's certificate (or, for tests only, prometheus.insecure = true)."
	case traffic.CodeQuery:
		fix = "Check that the server is a Prometheus (or compatible) query endpoint, at prometheus.url."
	case traffic.CodeFile:
		fix = "Write the file again with the command `terraform-provider-meshscope query` prints."
	}
	effect := "The scopes were not checked against observed traffic. With observed_traffic = \"error\" this fails the plan."
	switch {
	case f.Input():
		effect = "A wrong setting or file is an error whatever observed_traffic says."
	case asError:
		effect = "observed_traffic = \"error\" fails the plan when the evidence cannot be read; set it to \"warn\" to plan without the check."
	}
	detail := fmt.Sprintf("%s %s\n\nOriginal Error: %s", fix, effect, f)
	if !required {
		summary, detail = providerSummary(f.Code), fix+" "+effect+" "+providerNote+"\n\nOriginal Error: "+f.Error()
	}
	if asError {
		return diag.NewErrorDiagnostic(summary, detail)
	}
	return diag.NewWarningDiagnostic(summary, detail)
}

// emptyDiagnostic says the answer holds no Istio series: a warning for the scopes, which are
// then not checked, and an error for the data source, which has nothing to read.
func (s *evidenceSource) emptyDiagnostic(asError, required bool) diag.Diagnostic {
	if asError && !required {
		return diag.NewErrorDiagnostic(providerSummary(traffic.CodeEmpty),
			fmt.Sprintf("%s holds no series of istio_requests_total or istio_tcp_connections_opened_total %s. "+
				"That is no evidence, not evidence of no traffic, and observed_traffic = \"error\" fails the plan without evidence: "+
				"a check that passes every change is no check. Check that the server is the one that scrapes the sidecars' metrics "+
				"(port 15020, /stats/prometheus), and that the window is not longer than its retention; or set observed_traffic = \"warn\" "+
				"to plan without the check. %s", s.describe(), overWindow(s.fault.Window), providerNote))
	}
	if required {
		return diag.NewErrorDiagnostic(traffic.CodeEmpty.Summary(),
			fmt.Sprintf("%s holds no series of istio_requests_total or istio_tcp_connections_opened_total %s, "+
				"so there are no observed dependencies to read. That is no evidence, not evidence of no traffic. Check that "+
				"Prometheus scrapes the sidecars' metrics and that the window is not longer than its retention.", s.describe(), overWindow(s.fault.Window)))
	}
	return diag.NewWarningDiagnostic(providerSummary(traffic.CodeEmpty),
		fmt.Sprintf("%s holds no series of istio_requests_total or istio_tcp_connections_opened_total %s. "+
			"That is no evidence, not evidence of no traffic: the scopes were not checked against traffic. Check that "+
			"Prometheus scrapes the sidecars' metrics (port 15020, /stats/prometheus), and that the window is not longer "+
			"than its retention. With observed_traffic = \"error\" this fails the plan. %s", s.describe(), overWindow(s.fault.Window), providerNote))
}
