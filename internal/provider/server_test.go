package provider

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// scopeServer is the provider's server over the seed, configured as `provider "meshscope" {}`.
func scopeServer(t *testing.T) *scopePlanServer {
	t.Helper()
	ctx := context.Background()
	s, err := Serve(NewWithSources("test", fakeSource{dir: seedDir(t)}))()
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := s.(*scopePlanServer)
	if !ok {
		t.Fatalf("Serve returned %T, not the scope plan server", s)
	}
	sch, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cfgType := as[tftypes.Object](t, sch.Provider.ValueType())
	cfg, err := tfprotov6.NewDynamicValue(cfgType, nullObject(cfgType, nil))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: &cfg})
	if err != nil || len(resp.Diagnostics) > 0 {
		t.Fatalf("configure: %v %v", err, diagText(resp.Diagnostics))
	}
	return srv
}

// as is v as a T, or the test fails.
func as[T any](t *testing.T, v any) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		t.Fatalf("%T is not a %T", v, x)
	}
	return x
}

// scopeType is the resource's value type.
func scopeType(t *testing.T, srv *scopePlanServer) tftypes.Object {
	t.Helper()
	_, tfType := srv.scopeTypes(context.Background())
	return as[tftypes.Object](t, tfType)
}

// nullObject is a value of typ with the given attributes and every other one null.
func nullObject(typ tftypes.Object, set map[string]tftypes.Value) tftypes.Value {
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		if v, ok := set[name]; ok {
			vals[name] = v
			continue
		}
		vals[name] = tftypes.NewValue(at, nil)
	}
	return tftypes.NewValue(typ, vals)
}

func diagText(ds []*tfprotov6.Diagnostic) string {
	out := ""
	for _, d := range ds {
		out += fmt.Sprintf("[%v %s: %s at %v] ", d.Severity, d.Summary, d.Detail, d.Attribute)
	}
	return out
}

// scopeCase is a workload scope's configuration, as Terraform hands it over.
type scopeCase struct {
	namespace, name string
	selector        map[string]string
	deps            []scopeDep
	depsUnknown     bool
	ingress         []scopeIngress
	policy          string
	maxClusters     int64
	wait            *bool
	manifest        string // a value for a computed attribute, which no configuration may set
}

type scopeDep struct {
	service string
	ports   []int64
}

type scopeIngress struct {
	port               int64
	protocol, endpoint string
}

func (c scopeCase) value(t *testing.T, typ tftypes.Object) tftypes.Value {
	at := typ.AttributeTypes
	set := map[string]tftypes.Value{"namespace": tftypes.NewValue(tftypes.String, c.namespace)}
	if c.name != "" {
		set["name"] = tftypes.NewValue(tftypes.String, c.name)
	}
	if c.selector != nil {
		m := map[string]tftypes.Value{}
		for k, v := range c.selector {
			m[k] = tftypes.NewValue(tftypes.String, v)
		}
		set["workload_selector"] = tftypes.NewValue(at["workload_selector"], m)
	}
	depsType := as[tftypes.Set](t, at["dependencies"])
	depType := as[tftypes.Object](t, depsType.ElementType)
	switch {
	case c.depsUnknown:
		set["dependencies"] = tftypes.NewValue(depsType, tftypes.UnknownValue)
	case c.deps != nil:
		var elems []tftypes.Value
		for _, d := range c.deps {
			ports := tftypes.NewValue(depType.AttributeTypes["ports"], nil)
			if d.ports != nil {
				var ps []tftypes.Value
				for _, p := range d.ports {
					ps = append(ps, tftypes.NewValue(tftypes.Number, p))
				}
				ports = tftypes.NewValue(depType.AttributeTypes["ports"], ps)
			}
			elems = append(elems, tftypes.NewValue(depType, map[string]tftypes.Value{
				"service": tftypes.NewValue(tftypes.String, d.service), "ports": ports,
			}))
		}
		set["dependencies"] = tftypes.NewValue(depsType, elems)
	}
	if c.ingress != nil {
		inType := as[tftypes.List](t, at["ingress"])
		var elems []tftypes.Value
		for _, in := range c.ingress {
			ep := tftypes.NewValue(tftypes.String, nil)
			if in.endpoint != "" {
				ep = tftypes.NewValue(tftypes.String, in.endpoint)
			}
			elems = append(elems, tftypes.NewValue(inType.ElementType, map[string]tftypes.Value{
				"port": tftypes.NewValue(tftypes.Number, in.port), "protocol": tftypes.NewValue(tftypes.String, in.protocol),
				"default_endpoint": ep,
			}))
		}
		set["ingress"] = tftypes.NewValue(inType, elems)
	}
	if c.policy != "" {
		set["outbound_traffic_policy"] = tftypes.NewValue(tftypes.String, c.policy)
	}
	if c.maxClusters != 0 {
		set["max_clusters"] = tftypes.NewValue(tftypes.Number, c.maxClusters)
	}
	if c.wait != nil {
		set["wait_for_proxies"] = tftypes.NewValue(tftypes.Bool, *c.wait)
	}
	if c.manifest != "" {
		set["manifest"] = tftypes.NewValue(tftypes.String, c.manifest)
	}
	return nullObject(typ, set)
}

// proposedNew is Terraform's proposed new state: the configuration, with the prior
// state's value for each computed attribute the configuration leaves null.
func proposedNew(typ tftypes.Object, config, prior tftypes.Value) tftypes.Value {
	if prior.IsNull() {
		return config
	}
	var c, p map[string]tftypes.Value
	_ = config.As(&c)
	_ = prior.As(&p)
	out := map[string]tftypes.Value{}
	for name := range typ.AttributeTypes {
		out[name] = c[name]
		if c[name].IsNull() && slices.Contains([]string{"id", "name", "manifest", "egress_hosts", "expected_clusters", "review"}, name) {
			out[name] = p[name]
		}
	}
	return tftypes.NewValue(typ, out)
}

func dynamic(t *testing.T, typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

// planBoth plans the scope on the fast path and through the framework. fast is nil when the
// fast path leaves the plan to the framework.
func planBoth(t *testing.T, srv *scopePlanServer, config, prior tftypes.Value) (fast, fw *tfprotov6.PlanResourceChangeResponse) {
	t.Helper()
	ctx := context.Background()
	typ := scopeType(t, srv)
	proposed := config
	if !config.IsNull() {
		proposed = proposedNew(typ, config, prior)
	}
	req := func() *tfprotov6.PlanResourceChangeRequest {
		return &tfprotov6.PlanResourceChangeRequest{
			TypeName: scopeTypeName, Config: dynamic(t, typ, config), PriorState: dynamic(t, typ, prior),
			ProposedNewState: dynamic(t, typ, proposed),
		}
	}
	fast, ok := srv.planScope(ctx, req())
	if !ok {
		fast = nil
	}
	fw, err := srv.ProviderServer.PlanResourceChange(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	return fast, fw
}

// samePlan fails the test unless the fast path answered exactly as the framework did.
func samePlan(t *testing.T, srv *scopePlanServer, fast, fw *tfprotov6.PlanResourceChangeResponse) tftypes.Value {
	t.Helper()
	_, tfType := srv.scopeTypes(context.Background())
	if got, want := diagText(fast.Diagnostics), diagText(fw.Diagnostics); got != want {
		t.Fatalf("diagnostics:\nfast path %s\nframework %s", got, want)
	}
	for _, d := range fw.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return tftypes.Value{} // Terraform reads nothing else of an answer with an error
		}
	}
	a, err := fast.PlannedState.Unmarshal(tfType)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fw.PlannedState.Unmarshal(tfType)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		diffs, _ := a.Diff(b)
		t.Fatalf("planned states differ: %v", diffs)
	}
	paths := func(ps []*tftypes.AttributePath) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	if got, want := paths(fast.RequiresReplace), paths(fw.RequiresReplace); !slices.Equal(got, want) {
		t.Fatalf("RequiresReplace: fast path %v, framework %v", got, want)
	}
	if len(fw.PlannedPrivate) > 0 || len(fast.PlannedPrivate) > 0 {
		t.Fatalf("private state: fast path %q, framework %q", fast.PlannedPrivate, fw.PlannedPrivate)
	}
	if fw.Deferred != nil || fast.Deferred != nil {
		t.Fatalf("deferred: fast path %v, framework %v", fast.Deferred, fw.Deferred)
	}
	return b
}

// Each case plans through a provider of its own, as each terraform plan does: the provider
// refuses two scopes of one plan that select the same workload.
func TestScopePlanServer_answersAsTheFramework(t *testing.T) {
	typ := scopeType(t, scopeServer(t))
	null := tftypes.NewValue(typ, nil)
	no := false

	base := scopeCase{namespace: "foo", selector: map[string]string{"app": "test-app"},
		deps: []scopeDep{{service: "bar.bar", ports: []int64{80}}, {service: "foo", ports: []int64{80}}}}
	everything := base
	everything.name = "scoped"
	everything.ingress = []scopeIngress{{port: 8080, protocol: "HTTP", endpoint: "127.0.0.1:8080"}}
	everything.policy = "REGISTRY_ONLY"
	everything.maxClusters = 100
	everything.wait = &no
	namespaceDefault := scopeCase{namespace: "bar", deps: []scopeDep{{service: "foo.foo"}, {service: "kube-system/*"}}}

	// Creates: the fast path answers each, exactly as the framework does.
	created := map[string]tftypes.Value{}
	for name, c := range map[string]scopeCase{"base": base, "everything": everything, "namespace default": namespaceDefault} {
		t.Run("create "+name, func(t *testing.T) {
			srv := scopeServer(t)
			fast, fw := planBoth(t, srv, c.value(t, typ), null)
			if fast == nil {
				t.Fatalf("the fast path left an ordinary create to the framework: %s", diagText(fw.Diagnostics))
			}
			created[name] = samePlan(t, srv, fast, fw)
		})
	}
	if len(created) != 3 {
		t.FailNow()
	}

	// Updates from the planned state of a create.
	moreDeps := base
	moreDeps.deps = append(slices.Clone(base.deps), scopeDep{service: "kubernetes.default", ports: []int64{443}})
	renamed := base
	renamed.name = "other-name"
	moved := base
	moved.namespace = "bar"
	moved.deps = []scopeDep{{service: "bar", ports: []int64{80}}, {service: "foo.foo", ports: []int64{80}}}
	movedRenamed := moved
	movedRenamed.name = "other-name"
	for name, tc := range map[string]struct {
		c       scopeCase
		replace []string
	}{
		"no change":              {c: base},
		"one more dependency":    {c: moreDeps},
		"a new name replaces":    {c: renamed, replace: []string{"AttributeName(\"name\")"}},
		"a new namespace too":    {c: moved, replace: []string{"AttributeName(\"namespace\")"}},
		"both":                   {c: movedRenamed, replace: []string{"AttributeName(\"name\")", "AttributeName(\"namespace\")"}},
		"settings on everything": {c: everything, replace: []string{"AttributeName(\"name\")"}},
	} {
		t.Run("update "+name, func(t *testing.T) {
			srv := scopeServer(t)
			fast, fw := planBoth(t, srv, tc.c.value(t, typ), created["base"])
			if fast == nil {
				t.Fatalf("the fast path left an ordinary update to the framework: %s", diagText(fw.Diagnostics))
			}
			samePlan(t, srv, fast, fw)
			var got []string
			for _, p := range fw.RequiresReplace {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.replace) {
				t.Fatalf("RequiresReplace %v, want %v", got, tc.replace)
			}
		})
	}

	// Diagnostics: the fast path words them as the framework does, on the same attributes.
	unknownService := base
	unknownService.deps = []scopeDep{{service: "nope.nowhere"}, {service: "fooo.foo", ports: []int64{80}}}
	overBudget := base
	overBudget.maxClusters = 1
	widens := base
	widens.deps = []scopeDep{{service: "bar.bar", ports: []int64{80}}, {service: "foo"}}
	for name, tc := range map[string]struct {
		c        scopeCase
		severity tfprotov6.DiagnosticSeverity
	}{
		"two unknown services": {c: unknownService, severity: tfprotov6.DiagnosticSeverityError},
		"over the budget":      {c: overBudget, severity: tfprotov6.DiagnosticSeverityError},
		"a warning":            {c: widens, severity: tfprotov6.DiagnosticSeverityWarning},
	} {
		t.Run("diagnostics of "+name, func(t *testing.T) {
			srv := scopeServer(t)
			fast, fw := planBoth(t, srv, tc.c.value(t, typ), null)
			if fast == nil {
				t.Fatal("the fast path left the plan to the framework")
			}
			if len(fw.Diagnostics) == 0 || fw.Diagnostics[0].Severity != tc.severity || fw.Diagnostics[0].Attribute == nil {
				t.Fatalf("the framework's diagnostics are not what the case is for: %s", diagText(fw.Diagnostics))
			}
			samePlan(t, srv, fast, fw)
		})
	}

	// What the fast path leaves to the framework: a destroy, unknown values.
	unknownDeps := base
	unknownDeps.depsUnknown = true
	for name, tc := range map[string]struct{ config, prior tftypes.Value }{
		"destroy":                 {config: null, prior: created["base"]},
		"an unknown dependencies": {config: unknownDeps.value(t, typ), prior: null},
	} {
		t.Run("framework plans "+name, func(t *testing.T) {
			if fast, _ := planBoth(t, scopeServer(t), tc.config, tc.prior); fast != nil {
				t.Fatal("the fast path answered a plan it must leave to the framework")
			}
		})
	}
	t.Run("framework plans with private state or an identity", func(t *testing.T) {
		srv := scopeServer(t)
		ctx := context.Background()
		for _, req := range []*tfprotov6.PlanResourceChangeRequest{
			{PriorPrivate: []byte(`{"x":"eA=="}`)},
			{PriorIdentity: &tfprotov6.ResourceIdentityData{}},
		} {
			req.TypeName = scopeTypeName
			req.Config = dynamic(t, typ, base.value(t, typ))
			req.ProposedNewState = dynamic(t, typ, proposedNew(typ, base.value(t, typ), created["base"]))
			req.PriorState = dynamic(t, typ, created["base"])
			if _, ok := srv.planScope(ctx, req); ok {
				t.Fatal("the fast path answered a plan with private state or an identity")
			}
		}
	})
}

func TestScopePlanServer_validatesAsTheFramework(t *testing.T) {
	srv := scopeServer(t)
	ctx := context.Background()
	typ := scopeType(t, srv)
	no := false

	validate := func(t *testing.T, c scopeCase) (bool, []*tfprotov6.Diagnostic) {
		t.Helper()
		req := func() *tfprotov6.ValidateResourceConfigRequest {
			return &tfprotov6.ValidateResourceConfigRequest{TypeName: scopeTypeName, Config: dynamic(t, typ, c.value(t, typ))}
		}
		fast := srv.validScope(ctx, req())
		fw, err := srv.ProviderServer.ValidateResourceConfig(ctx, req())
		if err != nil {
			t.Fatal(err)
		}
		return fast, fw.Diagnostics
	}

	// Every attribute set, each attribute kind of the schema walked: valid on both paths.
	everything := scopeCase{namespace: "foo", name: "scoped", selector: map[string]string{"app": "test-app"},
		deps:    []scopeDep{{service: "bar.bar", ports: []int64{80, 8080}}, {service: "foo"}},
		ingress: []scopeIngress{{port: 8080, protocol: "HTTP", endpoint: "127.0.0.1:8080"}, {port: 9090, protocol: "GRPC"}},
		policy:  "REGISTRY_ONLY", maxClusters: 100, wait: &no}
	if fast, fw := validate(t, everything); !fast || len(fw) > 0 {
		t.Fatalf("a valid configuration: fast path valid=%v, framework %s", fast, diagText(fw))
	}

	// One wrong value per validator: the framework refuses each, so the fast path must leave it.
	bad := func(mod func(*scopeCase)) scopeCase {
		c := everything
		c.deps = slices.Clone(everything.deps)
		c.ingress = slices.Clone(everything.ingress)
		mod(&c)
		return c
	}
	for name, c := range map[string]scopeCase{
		"namespace":                bad(func(c *scopeCase) { c.namespace = "Not_A_Namespace" }),
		"name":                     bad(func(c *scopeCase) { c.name = "UPPER" }),
		"workload_selector":        bad(func(c *scopeCase) { c.selector = map[string]string{"bad key!": "x"} }),
		"dependencies.service":     bad(func(c *scopeCase) { c.deps[1].service = "http://foo.foo:80" }),
		"dependencies.ports":       bad(func(c *scopeCase) { c.deps[0].ports = []int64{0} }),
		"ingress.port":             bad(func(c *scopeCase) { c.ingress[0].port = 70000 }),
		"ingress.protocol":         bad(func(c *scopeCase) { c.ingress[1].protocol = "SMTP" }),
		"ingress.default_endpoint": bad(func(c *scopeCase) { c.ingress[0].endpoint = "somewhere" }),
		"outbound_traffic_policy":  bad(func(c *scopeCase) { c.policy = "MAYBE" }),
		"max_clusters":             bad(func(c *scopeCase) { c.maxClusters = -1 }),
		"a computed attribute":     bad(func(c *scopeCase) { c.manifest = "kind: Sidecar" }),
	} {
		t.Run(name, func(t *testing.T) {
			fast, fw := validate(t, c)
			if fast {
				t.Fatal("the fast path found valid what it must leave to the framework")
			}
			if len(fw) == 0 {
				t.Fatal("the framework found it valid: the case tests nothing")
			}
		})
	}

	// Unknown values go to the framework, which validates what it can.
	c := everything
	c.depsUnknown = true
	if fast, _ := validate(t, c); fast {
		t.Fatal("the fast path validated a configuration with unknown values")
	}
}
