package provider

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
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
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// PrometheusTokenEnv is the environment variable the prometheus block's bearer_token defaults to.
const PrometheusTokenEnv = "MESHSCOPE_PROMETHEUS_TOKEN"

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
				MarkdownDescription: "Sent as `Authorization: Bearer`. Defaults to the `" + PrometheusTokenEnv + "` environment variable."},
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
				"`error` fails the plan, `off` skips the check and the query. With `warn`, a server that cannot be read is " +
				"a warning and the scopes are not checked; with `error`, it fails the plan.",
			Validators: []validator.String{stringvalidator.OneOf(observedWarn, observedError, observedOff)}},
	}
}

// evidenceSource reads the observed traffic once per provider instance, when the first scope or
// data source asks for it, and resolves it against the loaded inventory.
type evidenceSource struct {
	mode   string
	prom   *traffic.Prometheus
	file   string
	domain string
	now    func() time.Time

	once sync.Once
	ev   *traffic.Evidence
	// fault is why there is no evidence; notes are what every consumer should hear once
	// (callers and hosts the inventory lacks, an empty answer).
	fault error
	// empty says the answer held no Istio series, over emptyWindow.
	empty         bool
	emptyWindow   string
	notesMu       sync.Mutex
	notesReported bool
	notes         diag.Diagnostics
}

// describe names the source for messages.
func (s *evidenceSource) describe() string {
	if s.prom != nil {
		return "Prometheus at " + s.prom.URL
	}
	return "the observed traffic file " + s.file
}

// configureEvidence reads the prometheus block, observed_traffic_file and observed_traffic.
// It returns nil when there is no evidence to read (none configured, or observed_traffic = "off").
func configureEvidence(ctx context.Context, cfg providerConfigModel, domain string) (*evidenceSource, diag.Diagnostics) {
	var diags diag.Diagnostics
	mode := cfg.ObservedTraffic.ValueString()
	hasProm := cfg.Prometheus != nil
	hasFile := !cfg.ObservedTrafficFile.IsNull() && !cfg.ObservedTrafficFile.IsUnknown()
	if hasProm && hasFile {
		diags.AddAttributeError(path.Root("observed_traffic_file"), "Two Sources Of Observed Traffic",
			"Both a prometheus block and observed_traffic_file are set. Keep one: the file is a saved answer of the same "+
				"query, for plans that cannot reach Prometheus.")
		return nil, diags
	}
	if !hasProm && !hasFile {
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
	src := &evidenceSource{mode: mode, domain: domain, now: time.Now}
	if hasFile {
		src.file = cfg.ObservedTrafficFile.ValueString()
		if strings.TrimSpace(src.file) == "" {
			diags.AddAttributeError(path.Root("observed_traffic_file"), "Empty Observed Traffic File",
				"observed_traffic_file is empty. Give the path of the file the `query` command's curl line writes.")
		}
	} else {
		p, ds := cfg.Prometheus.config(ctx)
		diags.Append(ds...)
		src.prom = p
	}
	if diags.HasError() || mode == observedOff {
		return nil, diags
	}
	return src, diags
}

// config checks the prometheus block and turns it into the client's settings.
func (m *prometheusModel) config(ctx context.Context) (*traffic.Prometheus, diag.Diagnostics) {
	var diags diag.Diagnostics
	at := func(name string) path.Path { return path.Root("prometheus").AtName(name) }
	p := &traffic.Prometheus{
		URL:           m.URL.ValueString(),
		Window:        stringOr(m.Window, traffic.DefaultWindow),
		BearerToken:   m.BearerToken.ValueString(),
		CACertificate: m.CACertificate.ValueString(),
		Insecure:      m.Insecure.ValueBool(),
	}
	if m.BearerToken.IsNull() {
		p.BearerToken = os.Getenv(PrometheusTokenEnv)
	}
	if m.URL.IsNull() || strings.TrimSpace(p.URL) == "" {
		diags.AddAttributeError(at("url"), "Missing Prometheus URL",
			"The prometheus block needs url, the server's base URL, for example \"http://127.0.0.1:9090\".")
	} else if err := validHTTPURL(p.URL); err != nil {
		diags.AddAttributeError(at("url"), "Invalid Prometheus URL",
			fmt.Sprintf("The value %q is not a base URL of a Prometheus server. Use the form \"http://prometheus.istio-system:9090\".\n\nOriginal Error: %s", p.URL, err))
	}
	if _, err := traffic.ParseWindow(p.Window); err != nil {
		diags.AddAttributeError(at("window"), "Invalid Window",
			fmt.Sprintf("The value %q is not a Prometheus duration. Use a duration such as \"7d\", \"36h\" or \"2w\".\n\nOriginal Error: %s", p.Window, err))
	}
	if !m.Timeout.IsNull() {
		d, err := time.ParseDuration(m.Timeout.ValueString())
		if err != nil || d <= 0 {
			diags.AddAttributeError(at("timeout"), "Invalid Timeout",
				fmt.Sprintf("The value %q is not a positive duration. Use a Go duration such as \"30s\" or \"2m\".", m.Timeout.ValueString()))
		}
		p.Timeout = d
	}
	if ca := strings.TrimSpace(p.CACertificate); ca != "" {
		if block, _ := pem.Decode([]byte(ca)); block == nil {
			diags.AddAttributeError(at("ca_certificate"), "Invalid CA Certificate",
				"ca_certificate holds no PEM block. Give the PEM text (-----BEGIN CERTIFICATE----- ...), for example file(\"ca.crt\").")
		} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			diags.AddAttributeError(at("ca_certificate"), "Invalid CA Certificate",
				fmt.Sprintf("The first PEM block of ca_certificate is not a certificate.\n\nOriginal Error: %s", err))
		}
	}
	if !m.Headers.IsNull() {
		p.Headers = map[string]string{}
		diags.Append(m.Headers.ElementsAs(ctx, &p.Headers, false)...)
	}
	return p, diags
}

// validHTTPURL checks an http(s) URL with a host.
func validHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("the scheme is %q, not http or https", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("it names no host")
	}
	return nil
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
// checked: diags then say why (a warning with observed_traffic = "warn", an error with "error").
// Notes that concern the whole provider (an empty answer, unknown callers) come once, with the
// first call.
func (s *evidenceSource) get(ctx context.Context, inv *mesh.Inventory) (*traffic.Evidence, diag.Diagnostics) {
	s.once.Do(func() { s.read(ctx, inv) })
	var diags diag.Diagnostics
	s.notesMu.Lock()
	if !s.notesReported {
		s.notesReported = true
		diags.Append(s.notes...)
		if s.fault != nil && s.mode == observedWarn && !s.faultIsInput() {
			diags.Append(faultDiagnostic(s, false))
		}
	}
	s.notesMu.Unlock()
	if s.fault != nil {
		if s.mode == observedError || s.faultIsInput() {
			diags.Append(faultDiagnostic(s, true))
		}
		return nil, diags
	}
	return s.ev, diags
}

// faultIsInput says the fault is in what the user wrote (a snapshot file that does not parse, a
// setting the client refuses), not in reaching a server: that is an error in every mode.
func (s *evidenceSource) faultIsInput() bool {
	var f *traffic.Fault
	return errors.As(s.fault, &f) && (f.Kind == traffic.FaultFile || f.Kind == traffic.FaultConfig)
}

// overWindow says what window an answer covers: "over the last 7d", or, for an answer without
// series (which carry the window), "in the window it covers".
func overWindow(window string) string {
	if window == "" {
		return "in the window it covers"
	}
	return "over the last " + window
}

// require is get for a consumer that cannot do without evidence, the data source: every reason
// there is none is an error.
func (s *evidenceSource) require(ctx context.Context, inv *mesh.Inventory) (*traffic.Evidence, diag.Diagnostics) {
	ev, diags := s.get(ctx, inv)
	if ev != nil {
		return ev, diags
	}
	var out diag.Diagnostics
	for _, d := range diags {
		if d.Severity() == diag.SeverityError || (s.fault == nil && d.Summary() != "No Istio Traffic Observed") {
			out.Append(d)
		}
	}
	switch {
	case s.fault != nil && !out.HasError():
		out.Append(faultDiagnostic(s, true))
	case s.fault == nil:
		out.AddError("No Istio Traffic Observed",
			fmt.Sprintf("%s holds no series of istio_requests_total or istio_tcp_connections_opened_total %s, "+
				"so there are no observed dependencies to read. That is no evidence, not evidence of no traffic. Check that "+
				"Prometheus scrapes the sidecars' metrics and that the window is not longer than its retention.", s.describe(), overWindow(s.emptyWindow)))
	}
	return nil, out
}

func (s *evidenceSource) read(ctx context.Context, inv *mesh.Inventory) {
	start := time.Now()
	var (
		snap *traffic.Snapshot
		err  error
	)
	if s.prom != nil {
		// Evaluated at the start of the minute: a plan and the re-plan of its apply a moment
		// later ask the same question.
		snap, err = traffic.Fetch(ctx, *s.prom, s.now().Truncate(time.Minute))
	} else {
		snap, err = traffic.ReadSnapshot(s.file)
	}
	if err != nil {
		s.fault = err
		return
	}
	s.ev = traffic.Resolve(snap, inv, s.domain)
	tflog.Info(ctx, "read observed traffic", map[string]any{
		"source": snap.Source, "window": snap.Window, "series": len(snap.Series),
		"workloads": len(s.ev.Workloads()), "duration": time.Since(start).Round(time.Millisecond).String(),
	})
	if s.ev.Empty() {
		s.empty = true
		s.emptyWindow = snap.Window
		s.notes.AddWarning("No Istio Traffic Observed",
			fmt.Sprintf("%s holds no series of istio_requests_total or istio_tcp_connections_opened_total %s. "+
				"That is no evidence, not evidence of no traffic: the scopes were not checked against traffic. Check that "+
				"Prometheus scrapes the sidecars' metrics (port 15020, /stats/prometheus), and that the window is not longer "+
				"than its retention.", s.describe(), overWindow(snap.Window)))
		s.ev = nil
		return
	}
	if n := len(s.ev.UnknownWorkloads); n > 0 {
		var names []string
		for _, u := range firstN(s.ev.UnknownWorkloads, 10) {
			names = append(names, fmt.Sprintf("%s/%s (%s)", u.Namespace, u.Workload, traffic.Quantity(u.Count, "call", "calls")))
		}
		more := ""
		if n > 10 {
			more = fmt.Sprintf(", and %d more", n-10)
		}
		s.notes.AddWarning("Observed Callers Not In The Inventory",
			fmt.Sprintf("%s names %d calling workload(s) that the inventory does not hold: %s%s. Their calls are not checked. "+
				"Istio names a workload by its controller (Deployment, StatefulSet, ...) or a bare Pod's name; add their "+
				"manifests to the inventory, or ignore this if they are gone.", s.describe(), n, strings.Join(names, ", "), more))
	}
}

// faultDiagnostic says why the evidence could not be read, naming the setting at fault.
func faultDiagnostic(s *evidenceSource, asError bool) diag.Diagnostic {
	var f *traffic.Fault
	kind := traffic.FaultUnreachable
	if errors.As(s.fault, &f) {
		kind = f.Kind
	}
	summary, fix := "Observed Traffic Not Read", ""
	switch kind {
	case traffic.FaultUnreachable:
		summary, fix = "Prometheus Unreachable", "Check prometheus.url and that the server is reachable from where terraform runs (a port-forward, say)."
	case traffic.FaultTimeout:
		summary, fix = "Prometheus Not Answering", "Raise prometheus.timeout, shorten prometheus.window, or check the server's load."
	case traffic.FaultUnauthorized:
		summary, fix = "Prometheus Refused The Query", "Set prometheus.bearer_token (or the "+PrometheusTokenEnv+" environment variable) to a token the server accepts, or the headers it expects."
	case traffic.FaultTLS:
		summary, fix = "Prometheus TLS Failed", "Set prometheus.ca_certificate to the CA that signed the server's certificate (or, for tests only, prometheus.insecure = true)."
	case traffic.FaultQuery:
		summary, fix = "Prometheus Query Failed", "Check that the server is a Prometheus (or compatible) query endpoint, at prometheus.url."
	case traffic.FaultFile:
		summary, fix = "Invalid Observed Traffic File", "Write the file again with the command `terraform-provider-meshscope query` prints."
	case traffic.FaultConfig:
		summary, fix = "Invalid Prometheus Settings", "Fix the prometheus block."
	}
	effect := "The scopes were not checked against observed traffic. With observed_traffic = \"error\" this fails the plan."
	switch {
	case s.faultIsInput():
		effect = "A wrong setting or file is an error whatever observed_traffic says."
	case asError:
		effect = "observed_traffic = \"error\" fails the plan when the evidence cannot be read; set it to \"warn\" to plan without the check."
	}
	detail := fmt.Sprintf("%s %s\n\nOriginal Error: %s", fix, effect, s.fault)
	if asError {
		return diag.NewErrorDiagnostic(summary, detail)
	}
	return diag.NewWarningDiagnostic(summary, detail)
}
