package review

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// ledger is a Service exported to its own namespace only.
const ledger = fixture.Ledger

func seed(t *testing.T, extra ...string) (*mesh.Inventory, *predict.Predictor) {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("seed", []byte(fixture.Seed)); err != nil {
		t.Fatal(err)
	}
	for i, y := range extra {
		if err := inv.AddYAML(fmt.Sprint("extra", i), []byte(y)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := predict.New(inv, predict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return inv, p
}

// evidence is a snapshot of source-reported requests: "ns/workload -> service.ns[:port] = count".
func evidence(t *testing.T, inv *mesh.Inventory, calls ...string) *traffic.Evidence {
	t.Helper()
	var rows []string
	for _, c := range calls {
		var from, to string
		var n float64
		if _, err := fmt.Sscanf(c, "%s -> %s = %g", &from, &to, &n); err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		ns, wl, _ := strings.Cut(from, "/")
		host, port, _ := strings.Cut(to, ":")
		name, dns, _ := strings.Cut(host, ".")
		portLabel := ""
		if port != "" {
			portLabel = fmt.Sprintf(`,"destination_port":%q`, port)
		}
		rows = append(rows, fmt.Sprintf(`{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source",`+
			`"source_workload":%q,"source_workload_namespace":%q,"destination_service":"%s.%s.svc.cluster.local",`+
			`"destination_service_name":%q,"destination_service_namespace":%q,"request_protocol":"http"%s},"value":[1733300000,"%g"]}`,
			wl, ns, name, dns, name, dns, portLabel, n))
	}
	snap, err := traffic.ParseSnapshot("test", []byte(`{"status":"success","data":{"resultType":"vector","result":[`+strings.Join(rows, ",")+`]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return traffic.Resolve(snap, inv, mesh.DefaultDomainSuffix)
}

func compile(t *testing.T, inv *mesh.Inventory, d scope.Declaration) *scope.Result {
	t.Helper()
	res, probs := scope.Compile(inv, d, scope.Options{})
	for _, p := range probs {
		if !p.Warning {
			t.Fatalf("%s: %s", p.Summary, p.Detail)
		}
	}
	return res
}

var app = map[string]string{"app": "test-app"}

// TestScope reviews the seed's scopes as the provider plans them: the workloads selected, their
// clusters before and after, which Sidecar governs them, and the expected count.
func TestScope(t *testing.T) {
	inv, pred := seed(t)
	r := NewReviewer(inv, pred, Options{DomainSuffix: mesh.DefaultDomainSuffix})
	for _, tc := range []struct {
		name        string
		decl        scope.Declaration
		workloads   []string
		before      []int
		after       []int
		governed    []bool
		expected    int
		removedHost string
	}{
		{name: "bar calls foo", decl: scope.Declaration{Namespace: "bar", Selector: app, Dependencies: []scope.Dependency{{Service: "foo.foo"}}},
			workloads: []string{"bar/Deployment/test-app"}, before: []int{19}, after: []int{14}, governed: []bool{true}, expected: 14,
			removedHost: "kube-dns.kube-system.svc.cluster.local"},
		{name: "foo calls nothing", decl: scope.Declaration{Namespace: "foo", Selector: app},
			workloads: []string{"foo/Deployment/test-app"}, before: []int{19}, after: []int{13}, governed: []bool{true}, expected: 13,
			removedHost: "bar.bar.svc.cluster.local"},
		{name: "namespace default", decl: scope.Declaration{Namespace: "foo"},
			workloads: []string{"foo/Deployment/test-app"}, before: []int{19}, after: []int{13}, governed: []bool{true}, expected: 13},
		{name: "no workload selected", decl: scope.Declaration{Namespace: "foo", Selector: map[string]string{"app": "ghost"}},
			workloads: nil, expected: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := r.Scope(tc.decl, compile(t, inv, tc.decl), nil)
			var keys []string
			var before, after []int
			var governed []bool
			for _, w := range s.Workloads {
				keys, before, after, governed = append(keys, w.Key), append(before, w.Before), append(after, w.After), append(governed, w.Governed)
				if w.Observed != nil {
					t.Errorf("%s: observed without evidence", w.Key)
				}
				if tc.removedHost != "" && !slices.Contains(w.RemovedHosts, tc.removedHost) {
					t.Errorf("%s: removed hosts %v lack %s", w.Key, w.RemovedHosts, tc.removedHost)
				}
			}
			if !slices.Equal(keys, tc.workloads) || !slices.Equal(before, tc.before) || !slices.Equal(after, tc.after) || !slices.Equal(governed, tc.governed) {
				t.Errorf("workloads %v before %v after %v governed %v, want %v %v %v %v", keys, before, after, governed, tc.workloads, tc.before, tc.after, tc.governed)
			}
			if s.ExpectedClusters != tc.expected {
				t.Errorf("expected clusters %d, want %d", s.ExpectedClusters, tc.expected)
			}
			over, overPod := s.OverBudget(tc.expected)
			if len(over) > 0 || overPod {
				t.Errorf("over a budget of exactly the expected count: %v %t", over, overPod)
			}
			over, overPod = s.OverBudget(tc.expected - 1)
			if len(tc.workloads) == 0 != overPod || len(over) != len(tc.workloads) {
				t.Errorf("budget one under the expected count: over %d workloads, pod %t", len(over), overPod)
			}
		})
	}
}

// TestScopeObserved checks a scope against the calls its workload made: the cut calls with the
// dependency that mends each (with the port when every dependency lists ports), the compiler's
// refusal for a Service the namespace cannot route to, and the dependencies nothing called.
func TestScopeObserved(t *testing.T) {
	inv, pred := seed(t, ledger)
	r := NewReviewer(inv, pred, Options{DomainSuffix: mesh.DefaultDomainSuffix})
	ev := evidence(t, inv,
		"bar/test-app -> foo.foo:80 = 35",
		"bar/test-app -> kube-dns.kube-system:53 = 7",
		"bar/test-app -> ledger.pay:8080 = 3",
	)
	for _, tc := range []struct {
		name       string
		deps       []scope.Dependency
		cut        []string // "dependency ports refused-code"
		unobserved []string
	}{
		{name: "port-less scope", deps: []scope.Dependency{{Service: "foo.foo"}, {Service: "bar"}},
			cut:        []string{"kube-dns.kube-system [] ", "ledger.pay [] MS1012"},
			unobserved: []string{"bar"}},
		{name: "port-level scope", deps: []scope.Dependency{{Service: "foo.foo", Ports: []uint32{80}}},
			cut:        []string{"kube-dns.kube-system [53] ", "ledger.pay [8080] MS1012"},
			unobserved: []string{}},
		{name: "everything declared that can be", deps: []scope.Dependency{{Service: "foo.foo"}, {Service: "kube-system/*"}},
			cut:        []string{"ledger.pay [] MS1012"},
			unobserved: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := scope.Declaration{Namespace: "bar", Selector: app, Dependencies: tc.deps}
			s := r.Scope(d, compile(t, inv, d), ev)
			if len(s.Workloads) != 1 || s.Workloads[0].Observed == nil {
				t.Fatalf("workloads %+v", s.Workloads)
			}
			o := s.Workloads[0].Observed
			var cut []string
			for _, c := range o.Cut {
				code := ""
				if c.Fix.Refused != nil {
					code = string(c.Fix.Refused.Code)
					if c.Fix.Declarable() || c.Fix.Refusal() == "" {
						t.Errorf("%s: a refused fix is declarable or has no reason", c.Host)
					}
				} else if !c.Fix.Declarable() {
					t.Errorf("%s: an accepted fix is not declarable", c.Host)
				}
				cut = append(cut, fmt.Sprintf("%s %v %s", c.Fix.Dependency.Service, c.Fix.Dependency.Ports, code))
			}
			slices.Sort(cut)
			if !slices.Equal(cut, tc.cut) {
				t.Errorf("cut %q, want %q", cut, tc.cut)
			}
			if !slices.Equal(o.Unobserved, tc.unobserved) {
				t.Errorf("unobserved %q, want %q", o.Unobserved, tc.unobserved)
			}
		})
	}
}

// TestTree reviews a change of two trees as diff does: the changed workloads, and, with
// evidence, the calls the head tree cuts, new ones first, and those cut today already.
func TestTree(t *testing.T) {
	_, base := seed(t)
	sidecar := `
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: test-app, namespace: foo}
spec:
  workloadSelector: {labels: {app: test-app}}
  egress:
  - hosts: ["istio-system/*"]
`
	headInv, head := seed(t, sidecar)
	ev := evidence(t, headInv,
		"foo/test-app -> bar.bar:80 = 5",
		"foo/test-app -> kube-dns.kube-system:53 = 50",
		"bar/test-app -> foo.foo:80 = 9",
	)
	var changed []string
	var cuts []string
	tree := NewTree(base, head, headInv, ev, Options{DomainSuffix: mesh.DefaultDomainSuffix})
	err := tree.Each(func(c Change) error {
		changed = append(changed, c.Namespace+"/"+c.Workload)
		for _, cc := range c.Cut {
			cuts = append(cuts, fmt.Sprintf("%s %s new=%t dep=%s%v", c.Workload, cc.Host, cc.New, cc.Fix.Dependency.Service, cc.Fix.Dependency.Ports))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"foo/Deployment/test-app"}) {
		t.Errorf("changed %v, want foo/Deployment/test-app only", changed)
	}
	// The largest new cut first; the metrics give the port, so the fix lists it.
	want := []string{
		"Deployment/test-app kube-dns.kube-system.svc.cluster.local new=true dep=kube-dns.kube-system[53]",
		"Deployment/test-app bar.bar.svc.cluster.local new=true dep=bar.bar[80]",
	}
	if !slices.Equal(cuts, want) {
		t.Errorf("cuts\n%q\nwant\n%q", cuts, want)
	}
	// Between two identical trees nothing changes: foo's cuts are all cut today already, and bar,
	// which calls foo.foo, has none.
	var unchanged []string
	err = NewTree(head, head, headInv, ev, Options{}).EachUnchangedCut(func(string) bool { return false }, func(c Change) error {
		for _, cc := range c.Cut {
			unchanged = append(unchanged, fmt.Sprintf("%s/%s %s new=%t", c.Namespace, c.Workload, cc.Host, cc.New))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantUnchanged := []string{
		"foo/Deployment/test-app kube-dns.kube-system.svc.cluster.local new=false",
		"foo/Deployment/test-app bar.bar.svc.cluster.local new=false",
	}
	if !slices.Equal(unchanged, wantUnchanged) {
		t.Errorf("unchanged cuts\n%q\nwant\n%q", unchanged, wantUnchanged)
	}
	if err := NewTree(base, head, headInv, nil, Options{}).EachUnchangedCut(func(string) bool { return false }, func(Change) error {
		t.Error("without evidence, no workload is reported as cut")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestScopeConcurrent reviews scopes from many goroutines at once, as Terraform plans them: the
// answers are those of one goroutine (run with -race to check the Reviewer's sharing).
func TestScopeConcurrent(t *testing.T) {
	inv, pred := seed(t, ledger)
	r := NewReviewer(inv, pred, Options{DomainSuffix: mesh.DefaultDomainSuffix})
	ev := evidence(t, inv, "bar/test-app -> kube-dns.kube-system:53 = 7", "bar/test-app -> ledger.pay:8080 = 3")
	d := scope.Declaration{Namespace: "bar", Selector: app, Dependencies: []scope.Dependency{{Service: "foo.foo"}}}
	res := compile(t, inv, d)
	want := r.Scope(d, res, ev)
	const n = 16
	got := make([]*Scope, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = NewReviewer(inv, pred, Options{DomainSuffix: mesh.DefaultDomainSuffix}).Scope(d, res, ev)
			if i%2 == 0 {
				got[i] = r.Scope(d, res, ev)
			}
		}()
	}
	wg.Wait()
	for i, g := range got {
		if !reflect.DeepEqual(g, want) {
			t.Errorf("goroutine %d: %+v, want %+v", i, g, want)
		}
	}
	if len(want.Workloads) != 1 || len(want.Workloads[0].Observed.Cut) != 2 {
		t.Fatalf("the review to compare with: %+v", want)
	}
}
