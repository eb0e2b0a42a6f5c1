package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Every fault traffic's Check finds in the settings is an error on the attribute at fault,
// with the code's summary.
func TestConfigureEvidence_SettingsAtFault(t *testing.T) {
	block := func(edit func(m *prometheusModel)) *prometheusModel {
		m := &prometheusModel{URL: types.StringValue("http://127.0.0.1:9090"), Window: types.StringNull(),
			BearerToken: types.StringNull(), Headers: types.MapNull(types.StringType), CACertificate: types.StringNull(),
			Insecure: types.BoolNull(), Timeout: types.StringNull()}
		edit(m)
		return m
	}
	headers := func(name, value string) types.Map {
		return types.MapValueMust(types.StringType, map[string]attr.Value{name: types.StringValue(value)})
	}
	prom := path.Root("prometheus")
	for _, tc := range []struct {
		name    string
		cfg     providerConfigModel
		summary string
		at      path.Path
	}{
		{"two sources", providerConfigModel{Prometheus: block(func(*prometheusModel) {}), ObservedTrafficFile: types.StringValue("observed.json")},
			"Two Sources Of Observed Traffic", path.Root("observed_traffic_file")},
		{"two sources, the file empty", providerConfigModel{Prometheus: block(func(*prometheusModel) {}), ObservedTrafficFile: types.StringValue("")},
			"Two Sources Of Observed Traffic", path.Root("observed_traffic_file")},
		{"empty file", providerConfigModel{ObservedTrafficFile: types.StringValue("")}, "Empty Observed Traffic File", path.Root("observed_traffic_file")},
		{"missing url", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.URL = types.StringNull() })}, "Missing Prometheus URL", prom.AtName("url")},
		{"credentials in the url", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.URL = types.StringValue("http://admin:hunter2@p:9090") })},
			"Credentials In The Prometheus URL", prom.AtName("url")},
		{"zero timeout", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.Timeout = types.StringValue("0s") })}, "Invalid Timeout", prom.AtName("timeout")},
		{"timeout that does not parse", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.Timeout = types.StringValue("soon") })}, "Invalid Timeout", prom.AtName("timeout")},
		{"header name", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.Headers = headers("X Tenant", "a") })}, "Invalid Prometheus Header", prom.AtName("headers")},
		{"header value", providerConfigModel{Prometheus: block(func(m *prometheusModel) { m.Headers = headers("X-Tenant", "a\nb") })}, "Invalid Prometheus Header", prom.AtName("headers")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ObservedTraffic = types.StringNull()
			if tc.cfg.ObservedTrafficFile == (types.String{}) {
				tc.cfg.ObservedTrafficFile = types.StringNull()
			}
			src, diags := configureEvidence(context.Background(), tc.cfg, "cluster.local")
			if src != nil || diags.ErrorsCount() != 1 {
				t.Fatalf("source %v, diagnostics %v; want one error %q", src, diags, tc.summary)
			}
			d := diags.Errors()[0]
			got, ok := d.(diag.DiagnosticWithPath)
			if d.Summary() != tc.summary || !ok || !got.Path().Equal(tc.at) {
				t.Errorf("error %q at %v, want %q at %v: %s", d.Summary(), got, tc.summary, tc.at, d.Detail())
			}
			if strings.Contains(d.Detail(), "hunter2") {
				t.Errorf("the detail shows a password: %s", d.Detail())
			}
		})
	}
}
