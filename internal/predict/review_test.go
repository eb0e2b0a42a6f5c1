package predict

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestReviewer_SharedEqualsDirect: the Reviewer, which shares the comparison of outbound
// lists between workloads of the same scopes, gives every workload exactly the Delta a direct
// comparison of its two cluster lists gives, on a mesh with several workloads per scope, a
// DestinationRule with a workloadSelector (a scope whose proxies do not share their list),
// and Sidecars that narrow, widen and leave alone.
func TestReviewer_SharedEqualsDirect(t *testing.T) {
	var b strings.Builder
	b.WriteString(seedYAML(t) + "\n---\n")
	for n := 0; n < 4; n++ {
		ns := fmt.Sprintf("team-%d", n)
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {istio-injection: enabled}}\n---\n", ns)
		for s := 0; s < 5; s++ {
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, namespace: %s}\nspec: {selector: {app: app-%d}, ports: [{name: http, port: %d}]}\n---\n", s, ns, s, 80+s)
			fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app-%d, namespace: %s}\nspec: {template: {metadata: {labels: {app: app-%d, tier: t%d}}, spec: {containers: [{name: c, ports: [{containerPort: %d}]}]}}}\n---\n", s, ns, s, s%2, 80+s)
		}
	}
	b.WriteString("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: only-t1, namespace: team-1}\n" +
		"spec: {host: svc-0.team-1.svc.cluster.local, workloadSelector: {matchLabels: {tier: t1}}, subsets: [{name: v1, labels: {v: \"1\"}}]}\n---\n")
	baseYAML := b.String()
	head := baseYAML +
		"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: team-0}\nspec: {egress: [{hosts: [\"./*\", \"istio-system/*\"]}]}\n---\n" +
		"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: default, namespace: team-1}\nspec: {egress: [{hosts: [\"istio-system/*\"]}]}\n---\n" +
		"apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: wide, namespace: team-2}\nspec: {workloadSelector: {labels: {tier: t0}}, egress: [{hosts: [\"*/*\"]}]}\n"
	load := func(y string) *Predictor {
		inv := mesh.New()
		if err := inv.AddYAML("mesh", []byte(y)); err != nil {
			t.Fatal(err)
		}
		p, err := New(inv, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base, headP := load(baseYAML), load(head)
	rv := NewReviewer(base, headP)
	shared, mixed, changed := 0, 0, 0
	for _, w := range headP.WorkloadProxies() {
		got := rv.Review(w)
		before, after := base.Predict(w.Proxy()), headP.Predict(w.Proxy())
		want := compareLists(before, after)
		if !reflect.DeepEqual(got.Delta, want) {
			t.Errorf("%s/%s: shared %+v\n direct %+v", w.Namespace, w.Name, got.Delta, want)
		}
		switch {
		case before.shared && after.shared:
			shared++
		case before.shared != after.shared:
			mixed++
		}
		if want.Changed() {
			changed++
		}
	}
	if shared == 0 || mixed == 0 || changed == 0 || len(rv.memo.m) == 0 {
		t.Errorf("the test does not exercise every path: %d shared, %d mixed, %d changed, %d memoised", shared, mixed, changed, len(rv.memo.m))
	}
}
