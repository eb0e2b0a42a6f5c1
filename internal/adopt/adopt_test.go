package adopt

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// TestGrouping: one scope per calling workload, however many series it has, unless a selector
// drawn from its labels cannot leave another caller out; callers no selector can tell apart,
// or none at all, get no scope and a warning.
func TestGrouping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docs   []string
		series []string
		// scopes are "resource: workloads | selector", sorted by resource.
		scopes   []string
		warnings []string
		skipped  int
		header   string // a line of the first scope's header
	}{
		{
			name: "one scope per workload, its series merged",
			docs: []string{deployment("web", "app=web,version=v1,team=a"), deployment("web-canary", "app=web,version=v2,team=a"), deployment("idle", "app=idle")},
			series: []string{
				call("shop/web", "api.data", 80, "http", 10), call("shop/web", "api.data", 9090, "grpc", 5),
				call("shop/web", "redis.data", 6379, "tcp", 2), call("shop/web-canary", "api.data", 80, "http", 1),
			},
			scopes: []string{
				"shop_web: shop/Deployment/web | app=web,version=v1",
				"shop_web-canary: shop/Deployment/web-canary | app=web,version=v2",
			},
		},
		{
			name:   "a caller whose selector selects another shares its scope, named after the one that selects both",
			docs:   []string{deployment("worker-batch", "app=worker,role=batch"), deployment("worker", "app=worker")},
			series: []string{call("shop/worker-batch", "api.data", 80, "http", 1), call("shop/worker", "redis.data", 6379, "tcp", 1)},
			scopes: []string{"shop_worker: shop/Deployment/worker shop/Deployment/worker-batch | app=worker"},
			header: "One scope for these workloads",
		},
		{
			name:   "a workload without calls that the selector cannot leave out is named",
			docs:   []string{deployment("sup", "app=sup"), deployment("sup-more", "app=sup,extra=1")},
			series: []string{call("shop/sup", "api.data", 80, "http", 1)},
			scopes: []string{"shop_sup: shop/Deployment/sup | app=sup"},
			header: "Also selects, without calls observed: shop/Deployment/sup-more.",
		},
		{
			name:   "a stable label before a volatile one",
			docs:   []string{deployment("api", "app.kubernetes.io/name=api,pod-template-hash=x1,tier=be"), deployment("api-old", "app.kubernetes.io/name=api,pod-template-hash=x2,tier=legacy")},
			series: []string{call("shop/api", "redis.data", 6379, "tcp", 1), call("shop/api-old", "redis.data", 6379, "tcp", 1)},
			scopes: []string{
				"shop_api: shop/Deployment/api | app.kubernetes.io/name=api,tier=be",
				"shop_api-old: shop/Deployment/api-old | app.kubernetes.io/name=api,tier=legacy",
			},
		},
		{
			name:     "a pod without labels",
			docs:     []string{`{apiVersion: v1, kind: Pod, metadata: {name: debug, namespace: shop}, spec: {containers: [{name: c, image: c}]}}`, deployment("web", "app=web")},
			series:   []string{call("shop/debug", "api.data", 80, "http", 1), call("shop/web", "api.data", 80, "http", 1)},
			scopes:   []string{"shop_web: shop/Deployment/web | app=web"},
			warnings: []string{"Unlabelled shop/Pod/debug"},
			skipped:  1,
		},
		{
			name:     "labels that overlap so that no selector tells the callers apart",
			docs:     []string{deployment("a", "x=1,y=1"), deployment("b", "z=1,y=1"), deployment("c", "x=1,y=1,z=1")},
			series:   []string{call("shop/a", "api.data", 80, "http", 1), call("shop/b", "api.data", 80, "http", 1)},
			warnings: []string{"Inseparable shop/Deployment/a shop/Deployment/b"},
			skipped:  2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, plan := suggest(t, Options{}, tc.docs, tc.series...)
			var got []string
			for _, s := range plan.Scopes {
				got = append(got, s.Resource+": "+strings.Join(s.Workloads, " ")+" | "+selector(s.Selector))
			}
			if !slices.Equal(got, tc.scopes) {
				t.Errorf("scopes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.scopes, "\n  "))
			}
			if w := warnings(plan); !slices.Equal(w, tc.warnings) {
				t.Errorf("warnings %q, want %q", w, tc.warnings)
			}
			if plan.Skipped != tc.skipped {
				t.Errorf("skipped %d, want %d", plan.Skipped, tc.skipped)
			}
			if tc.header != "" && (len(plan.Scopes) == 0 || !containsLine(plan.Scopes[0].Header, tc.header)) {
				t.Errorf("no header line %q in %+v", tc.header, plan.Scopes)
			}
		})
	}
}

// TestGroupingSeriesMerged: a workload's series become one dependency per destination, with
// ports, and the plan is the same from run to run.
func TestGroupingSeriesMerged(t *testing.T) {
	docs := []string{deployment("web", "app=web")}
	series := []string{call("shop/web", "api.data", 80, "http", 10), call("shop/web", "api.data", 9090, "grpc", 5), call("shop/web", "redis.data", 6379, "tcp", 2)}
	inv, plan := suggest(t, Options{}, docs, series...)
	if len(plan.Scopes) != 1 {
		t.Fatalf("%d scopes, want 1", len(plan.Scopes))
	}
	s := plan.Scopes[0]
	if got, want := deps(s), "api.data[80 9090] redis.data[6379]"; got != want {
		t.Errorf("dependencies %s, want %s", got, want)
	}
	if got := s.Dependencies[0].Evidence; got != "15 requests over 7d" {
		t.Errorf("evidence of api.data %q", got)
	}
	again, err := Suggest(inv, evidence(t, inv, series...), Options{})
	if err != nil || !reflect.DeepEqual(again, plan) {
		t.Errorf("a second plan differs: %v\n%+v\n%+v", err, again, plan)
	}
}

// TestNamespacesOption: a plan limited to namespaces holds their scopes only.
func TestNamespacesOption(t *testing.T) {
	other := strings.ReplaceAll(deployment("web", "app=web"), "namespace: shop", "namespace: data")
	series := []string{call("shop/web", "api.data", 80, "http", 1), call("data/web", "api.data", 80, "http", 1)}
	_, all := suggest(t, Options{}, []string{deployment("web", "app=web"), other}, series...)
	_, only := suggest(t, Options{Namespaces: []string{"data"}}, []string{deployment("web", "app=web"), other}, series...)
	if len(all.Scopes) != 2 || len(only.Scopes) != 1 || only.Scopes[0].Resource != "data_web" {
		t.Errorf("all: %d scopes; --namespace data: %+v", len(all.Scopes), only.Scopes)
	}
}

// TestNames: a scope never takes the name of a Sidecar it does not adopt, nor of another
// planned scope; resource names are unique over the plan.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docs   []string
		series []string
		// scopes are "resource name" ("-" for the default name), sorted by resource.
		scopes []string
	}{
		{
			name:   "the default name is free",
			docs:   []string{deployment("web", "app=web")},
			series: []string{call("shop/web", "api.data", 80, "http", 1)},
			scopes: []string{"shop_web -"},
		},
		{
			name:   "a Sidecar takes the default name: the workload's",
			docs:   []string{deployment("frontend", "app=web"), deployment("legacy", "app=legacy"), sidecar("web", "app=legacy", "")},
			series: []string{call("shop/frontend", "api.data", 80, "http", 1)},
			scopes: []string{"shop_frontend frontend"},
		},
		{
			name:   "a Sidecar takes the default name and the workload's: a suffix",
			docs:   []string{deployment("web", "app=web"), deployment("legacy", "app=legacy"), sidecar("web", "app=legacy", "")},
			series: []string{call("shop/web", "api.data", 80, "http", 1)},
			scopes: []string{"shop_web web-scope-2"},
		},
		{
			name: "two selectors with one default name",
			docs: []string{deployment("one", "app=a,version=b-c"), deployment("one-old", "app=a,version=old"),
				deployment("two", "app=a-b,version=c"), deployment("two-old", "app=a-b,version=old")},
			series: []string{
				call("shop/one", "api.data", 80, "http", 1), call("shop/two", "api.data", 80, "http", 1),
			},
			scopes: []string{"shop_one -", "shop_two two"},
		},
		{
			name:   "a Deployment and a StatefulSet of one name",
			docs:   []string{deployment("web", "app=web"), workload("StatefulSet", "web", "app=web-db")},
			series: []string{call("shop/web", "api.data", 80, "http", 1)},
			scopes: []string{"shop_web -", "shop_web_2 -"},
		},
		{
			name:   "an adopted Sidecar named as another caller",
			docs:   []string{deployment("web", "app=web"), deployment("legacy", "app=legacy"), sidecar("web", "app=legacy", "")},
			series: []string{call("shop/web", "api.data", 80, "http", 1), call("shop/legacy", "api.data", 80, "http", 1)},
			scopes: []string{"shop_web web", "shop_web_2 web-scope-2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, plan := suggest(t, Options{}, tc.docs, tc.series...)
			var got []string
			names := map[string]bool{}
			for _, s := range plan.Scopes {
				name := s.Name
				if name == "" {
					name = "-"
				}
				got = append(got, s.Resource+" "+name)
				effective := s.Name
				if effective == "" {
					effective = scope.DefaultName(s.Selector)
				}
				if names[effective] {
					t.Errorf("two scopes are the Sidecar %s", effective)
				}
				names[effective] = true
			}
			if !slices.Equal(got, tc.scopes) {
				t.Errorf("scopes %q, want %q (warnings %q)", got, tc.scopes, warnings(plan))
			}
		})
	}
}

func TestResourceName(t *testing.T) {
	p := &Planner{resources: map[string]bool{}}
	for _, tc := range [][3]string{
		{"shop", "web", "shop_web"},
		{"shop", "web", "shop_web_2"},
		{"shop", "web", "shop_web_3"},
		{"legacy", "old.api", "legacy_old_api"},
		{"1st", "app", "_1st_app"},
	} {
		if got := p.resourceName(tc[0], tc[1]); got != tc[2] {
			t.Errorf("resourceName(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestAdopt: a caller a Sidecar of its namespace selects gets that Sidecar's scope under its
// name, selector, ingress and outbound policy, with an import block when asked; a namespace or
// mesh-wide default is not adopted but taken precedence over.
func TestAdopt(t *testing.T) {
	payments := sidecar("payments", "app=payments", `  ingress:
  - port: {number: 8080, protocol: HTTP, name: http-8080}
    defaultEndpoint: 127.0.0.1:8080
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}`)
	payments = strings.Replace(payments, `"./*"`, `"data/redis.data.svc.cluster.local", "data/raw.data.svc.cluster.local"`, 1)
	docs := []string{deployment("payments", "app=payments,version=v1"), deployment("payments-v2", "app=payments,version=v2"), payments}
	series := []string{call("shop/payments", "redis.data", 6379, "tcp", 5), call("shop/payments-v2", "api.data", 80, "http", 1)}

	for _, imports := range []bool{true, false} {
		_, plan := suggest(t, Options{Import: imports}, docs, series...)
		if len(plan.Scopes) != 1 {
			t.Fatalf("import=%v: %d scopes, want 1: %q", imports, len(plan.Scopes), warnings(plan))
		}
		s := plan.Scopes[0]
		if s.Resource != "shop_payments" || s.Name != "payments" || s.Adopts != "shop/payments" || s.Import != imports {
			t.Errorf("import=%v: resource %s, name %q, adopts %q, import %v", imports, s.Resource, s.Name, s.Adopts, s.Import)
		}
		if got := strings.Join(s.Workloads, " "); got != "shop/Deployment/payments shop/Deployment/payments-v2" {
			t.Errorf("workloads %s: one scope for the two callers the Sidecar selects", got)
		}
		if selector(s.Selector) != "app=payments" || s.OutboundTrafficPolicy != "REGISTRY_ONLY" ||
			len(s.Ingress) != 1 || s.Ingress[0] != (scope.Ingress{Port: 8080, Protocol: "HTTP", DefaultEndpoint: "127.0.0.1:8080"}) {
			t.Errorf("the Sidecar's own settings are not kept: selector %v, policy %q, ingress %+v", s.Selector, s.OutboundTrafficPolicy, s.Ingress)
		}
		if got := deps(s); got != "api.data[80] redis.data[6379]" {
			t.Errorf("dependencies %s: the observed ones, not the Sidecar's", got)
		}
		if !containsLine(s.Header, "this scope drops (no calls over 7d; keep any that serve rarer calls, such as a monthly job): raw.data.") {
			t.Errorf("the header does not name the host the Sidecar imports and no call uses: %q", s.Header)
		}
		want := "the import block takes it over"
		if !imports {
			want = `under its name: drop its manifest from the provider's manifests, or import it (id = "shop/payments")`
		}
		if !containsLine(s.Header, want) {
			t.Errorf("import=%v: the header lacks %q: %q", imports, want, s.Header)
		}
	}

	for _, tc := range []struct {
		name, doc, want string
	}{
		{"namespace default", sidecar("default", "", ""), "Takes precedence over the namespace default Sidecar shop/default, which governs it today."},
		{"mesh-wide default", strings.Replace(sidecar("default", "", ""), "namespace: shop", "namespace: istio-system", 1),
			"Takes precedence over the mesh-wide default Sidecar istio-system/default, which governs it today."},
	} {
		_, plan := suggest(t, Options{Import: true}, []string{deployment("web", "app=web"), tc.doc}, call("shop/web", "api.data", 80, "http", 1))
		if len(plan.Scopes) != 1 {
			t.Fatalf("%s: %d scopes", tc.name, len(plan.Scopes))
		}
		s := plan.Scopes[0]
		if s.Adopts != "" || s.Import || s.Name != "" || selector(s.Selector) != "app=web" {
			t.Errorf("%s: adopted: name %q, adopts %q, import %v, selector %v", tc.name, s.Name, s.Adopts, s.Import, s.Selector)
		}
		if !containsLine(s.Header, tc.want) {
			t.Errorf("%s: the header lacks %q: %q", tc.name, tc.want, s.Header)
		}
	}

	// An adopted Sidecar that overlaps another is adopted all the same: the overlap is today's.
	_, plan := suggest(t, Options{Import: true}, []string{deployment("dup", "app=dup,team=t"), sidecar("dup-a", "app=dup", ""), sidecar("dup-b", "team=t", "")},
		call("shop/dup", "api.data", 80, "http", 1))
	if w := warnings(plan); len(plan.Scopes) != 1 || !slices.Equal(w, []string{"AdoptedConflict shop_dup-a"}) {
		t.Errorf("overlapping Sidecars: %d scopes, warnings %q", len(plan.Scopes), w)
	} else if !containsLine(plan.Scopes[0].Notes, "Warning: Conflicting Sidecar Selection") {
		t.Errorf("the conflict is not in the notes: %q", plan.Scopes[0].Notes)
	}
}

// TestMend: the compiler checks every scope. Ports it will not scope by are dropped from every
// dependency; a dependency it refuses is left out with a note and a warning; its warnings are
// noted; a scope that selects a workload another Sidecar selects is not planned. Whatever is
// planned compiles without an error.
func TestMend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		docs     []string
		series   []string
		deps     string // of the scope shop_web; "" when it is not planned
		warnings []string
		header   string // a header line of shop_web
		note     string // a note of shop_web
	}{
		{
			name:   "every dependency certain of its ports",
			series: []string{call("shop/web", "api.data", 80, "http", 1), call("shop/web", "redis.data", 6379, "tcp", 1)},
			deps:   "api.data[80] redis.data[6379]",
		},
		{
			name:   "Dependency Widens Every Port: a port also used by UDP",
			series: []string{call("shop/web", "kube-dns.kube-system", 53, "tcp", 7), call("shop/web", "redis.data", 6379, "tcp", 1)},
			deps:   "kube-dns.kube-system[] redis.data[]",
			header: `No dependency lists ports, as the compiler would not scope "kube-dns.kube-system" by port: The dependency "kube-dns.kube-system" lists ports, but a port it lists is also a UDP port`,
		},
		{
			name:   "Port Not Exposed: a port the Service has for UDP only",
			series: []string{call("shop/web", "udp.data", 53, "tcp", 3), call("shop/web", "api.data", 80, "http", 1)},
			deps:   "api.data[] udp.data[]",
			header: `No dependency lists ports, as the compiler would not scope "udp.data" by port: The dependency "udp.data" declares port 53, which Service data/udp exposes only as UDP.`,
		},
		{
			name:     "a Service not exported to the namespace is left out",
			series:   []string{call("shop/web", "vault.data", 8200, "http", 2), passthrough("shop/web", "vault.data.svc.cluster.local", 30), call("shop/web", "api.data", 80, "http", 1)},
			deps:     "api.data[80]",
			warnings: []string{"LeftOut shop_web vault.data"},
			note:     `vault.data (32 requests over 7d, through PassthroughCluster today) is left out: Service Not Visible: The dependency "vault.data" resolves to vault.data.svc.cluster.local, which is not exported to namespace "shop"`,
		},
		{
			name:     "a warning the planner does not mend is noted",
			series:   []string{call("shop/web", "api.data", 80, "http", 1), call("shop/web", "raw.data", 80, "tcp", 1)},
			deps:     "api.data[80] raw.data[80]",
			warnings: []string{"CompilerWarning shop_web"},
			note:     "Warning: Port Listener Is TCP:",
		},
		{
			name:     "a selector that selects a workload another Sidecar selects",
			docs:     []string{deployment("web-x", "app=web,tier=x"), sidecar("other", "tier=x", "")},
			series:   []string{call("shop/web", "api.data", 80, "http", 1)},
			warnings: []string{"NotSuggested shop_web"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, plan := suggest(t, Options{}, append([]string{deployment("web", "app=web")}, tc.docs...), tc.series...)
			if w := warnings(plan); !slices.Equal(w, tc.warnings) {
				t.Errorf("warnings %q, want %q", w, tc.warnings)
			}
			if tc.deps == "" {
				if len(plan.Scopes) != 0 || plan.Skipped != 1 {
					t.Errorf("planned %d scopes, skipped %d; want none planned, one skipped", len(plan.Scopes), plan.Skipped)
				}
				return
			}
			s := byResource(t, plan, "shop_web")
			if got := deps(s); got != tc.deps {
				t.Errorf("dependencies %s, want %s", got, tc.deps)
			}
			if tc.header != "" && !containsLine(s.Header, tc.header) {
				t.Errorf("the header lacks %q: %q", tc.header, s.Header)
			}
			if tc.note != "" && !containsLine(s.Notes, tc.note) {
				t.Errorf("the notes lack %q: %q", tc.note, s.Notes)
			}
			if tc.header == "" && containsLine(s.Header, "No dependency lists ports") {
				t.Errorf("ports dropped without cause: %q", s.Header)
			}
			for _, w := range plan.Warnings {
				if w.Problem == nil {
					t.Errorf("warning %v carries no compiler problem", w.Kind)
				}
			}
			// What is planned compiles, as the provider will compile it.
			if _, problems := scope.Compile(inv, s.Declaration(), scope.Options{}); slices.ContainsFunc(problems, func(p scope.Problem) bool { return !p.Warning }) {
				t.Errorf("the planned scope does not compile: %+v", problems)
			}
		})
	}
}

// TestMendable pins the one place compiler problems are told apart: by code, whatever the
// summary says.
func TestMendable(t *testing.T) {
	for _, tc := range []struct {
		code problem.Code
		want bool
	}{
		{scope.CodeDependencyWidensEveryPort, true},
		{scope.CodePortNotExposed, true},
		{scope.CodeNamespacePortNotExposed, true},
		{scope.CodeServiceNotVisible, false},
		{scope.CodePortListenerIsTCP, false},
		{scope.CodeUnknownService, false},
	} {
		pb := scope.Problem{Attribute: scope.AttrDependencies, Code: tc.code, Summary: "Reworded " + tc.code.Summary()}
		if got := mendable(pb); got != tc.want {
			t.Errorf("mendable(%s %q) = %v, want %v", tc.code, tc.code.Summary(), got, tc.want)
		}
	}
}
