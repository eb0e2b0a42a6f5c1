package validators

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestStringValidators(t *testing.T) {
	cases := []struct {
		name  string
		v     validator.String
		value types.String
		ok    bool
	}{
		{"namespace", NamespaceName(), types.StringValue("istio-system"), true},
		{"namespace uppercase", NamespaceName(), types.StringValue("Foo"), false},
		{"namespace too long", NamespaceName(), types.StringValue("a123456789012345678901234567890123456789012345678901234567890123"), false},
		{"namespace null", NamespaceName(), types.StringNull(), true},
		{"namespace unknown", NamespaceName(), types.StringUnknown(), true},

		{"dependency bare name", DependencyHost(), types.StringValue("foo"), true},
		{"dependency name.namespace", DependencyHost(), types.StringValue("foo.foo"), true},
		{"dependency fqdn", DependencyHost(), types.StringValue("foo.foo.svc.cluster.local"), true},
		{"dependency wildcard host", DependencyHost(), types.StringValue("*.example.com"), true},
		{"dependency namespace", DependencyHost(), types.StringValue("foo/*"), true},
		{"dependency namespace host", DependencyHost(), types.StringValue("foo/foo.foo"), false},
		{"dependency tilde", DependencyHost(), types.StringValue("~/*"), false},
		{"dependency url", DependencyHost(), types.StringValue("http://foo.foo"), false},
		{"dependency port", DependencyHost(), types.StringValue("foo.foo:80"), false},
		{"dependency double dot", DependencyHost(), types.StringValue("foo..foo"), false},
		{"dependency space", DependencyHost(), types.StringValue("foo foo"), false},
		{"dependency empty", DependencyHost(), types.StringValue(""), false},
		{"dependency inner wildcard", DependencyHost(), types.StringValue("api.*.com"), false},

		{"egress", EgressHost(), types.StringValue("istio-system/*"), true},
		{"egress dot", EgressHost(), types.StringValue("./*"), true},
		{"egress tilde", EgressHost(), types.StringValue("~/*"), true},
		{"egress exclusion", EgressHost(), types.StringValue("~kube-system/*"), true},
		{"egress exclusion of a host", EgressHost(), types.StringValue("~*/kubernetes.default.svc.cluster.local"), true},
		{"egress exclusion of a bad namespace", EgressHost(), types.StringValue("~Kube_System/*"), false},
		{"egress host", EgressHost(), types.StringValue("*/api.example.com"), true},
		{"egress no namespace", EgressHost(), types.StringValue("istio-system"), false},

		{"endpoint loopback", DefaultEndpoint(), types.StringValue("127.0.0.1:8080"), true},
		{"endpoint ipv6", DefaultEndpoint(), types.StringValue("[::1]:8080"), true},
		{"endpoint unix", DefaultEndpoint(), types.StringValue("unix:///var/run/app.sock"), true},
		{"endpoint pod ip", DefaultEndpoint(), types.StringValue("10.0.0.1:80"), false},
		{"endpoint no port", DefaultEndpoint(), types.StringValue("127.0.0.1"), false},
		{"endpoint port range", DefaultEndpoint(), types.StringValue("127.0.0.1:70000"), false},

		{"istio version", IstioVersion(), types.StringValue("1.22"), true},
		{"istio version patch", IstioVersion(), types.StringValue("1.31.2"), true},
		{"istio version major", IstioVersion(), types.StringValue("2.0"), false},

		{"object name", ObjectName(), types.StringValue("test-app.v1"), true},
		{"object name underscore", ObjectName(), types.StringValue("test_app"), false},

		{"dns name", DNSName(), types.StringValue("cluster.local"), true},
		{"dns name wildcard", DNSName(), types.StringValue("*.local"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := validator.StringRequest{Path: path.Root("x"), ConfigValue: tc.value}
			resp := &validator.StringResponse{}
			tc.v.ValidateString(context.Background(), req, resp)
			if got := !resp.Diagnostics.HasError(); got != tc.ok {
				t.Errorf("%s(%s): ok = %v, want %v; diagnostics: %v", tc.name, tc.value, got, tc.ok, resp.Diagnostics)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		errs   int
	}{
		{"valid", map[string]string{"app": "test-app", "app.kubernetes.io/name": "x", "empty": ""}, 0},
		{"bad key", map[string]string{"-app": "x"}, 1},
		{"bad prefix", map[string]string{"Bad_Prefix/app": "x"}, 1},
		{"bad value", map[string]string{"app": "test app"}, 1},
		{"bad key and value", map[string]string{"a/b/c": "-x-"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			elems := map[string]attr.Value{}
			for k, v := range tc.labels {
				elems[k] = types.StringValue(v)
			}
			req := validator.MapRequest{Path: path.Root("labels"), ConfigValue: types.MapValueMust(types.StringType, elems)}
			resp := &validator.MapResponse{}
			Labels().ValidateMap(context.Background(), req, resp)
			if got := resp.Diagnostics.ErrorsCount(); got != tc.errs {
				t.Errorf("errors = %d, want %d: %v", got, tc.errs, resp.Diagnostics)
			}
		})
	}
	resp := &validator.MapResponse{}
	Labels().ValidateMap(context.Background(), validator.MapRequest{Path: path.Root("labels"), ConfigValue: types.MapUnknown(types.StringType)}, resp)
	if resp.Diagnostics.HasError() {
		t.Errorf("unknown map: %v", resp.Diagnostics)
	}
}

func TestInsideWorkingDirectory(t *testing.T) {
	v := insideWorkingDirectoryValidator{cwd: func() (string, error) { return "/work/repo", nil }}
	for _, tc := range []struct {
		path string
		warn bool
	}{
		{"gitops", false},
		{"./gitops/sidecars", false},
		{"/work/repo/gitops", false},
		{"a/../b", false},
		{"/etc", true},
		{"../../etc", true},
		{"..", true},
		{"gitops/../../other", true},
		{"/work/repository", true},
	} {
		resp := &validator.StringResponse{}
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("path"), ConfigValue: types.StringValue(tc.path)}, resp)
		if got := resp.Diagnostics.WarningsCount() > 0; got != tc.warn || resp.Diagnostics.HasError() {
			t.Errorf("%q: warning = %v, want %v (%v)", tc.path, got, tc.warn, resp.Diagnostics)
		}
	}
}
