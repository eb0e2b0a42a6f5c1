package evidence

import (
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// TestSnapshotResolvesToTheDeclarations: the snapshot parses as meshscope's query answer, every
// series resolves to a workload and a Service of the mesh, and every workload's calls are
// exactly its app's declared dependencies and ports, so that plans with it warn about nothing.
func TestSnapshotResolvesToTheDeclarations(t *testing.T) {
	m := bench.Generate(bench.DefaultSpec(100))
	data, err := Snapshot(m, "7d", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := traffic.ParseSnapshot("snapshot", data)
	if err != nil {
		t.Fatal(err)
	}
	inv := mesh.New()
	if err := inv.AddYAML("mesh.yaml", m.YAML()); err != nil {
		t.Fatal(err)
	}
	ev := traffic.Resolve(snap, inv, "cluster.local")
	if ev.Series != len(Calls(m)) || ev.Unattributed != 0 || len(ev.UnknownWorkloads) != 0 || len(ev.Workloads()) != len(m.Proxies) {
		t.Fatalf("%d series, %d unattributed, %d unknown callers, %d calling workloads; want %d series from %d workloads",
			ev.Series, ev.Unattributed, len(ev.UnknownWorkloads), len(ev.Workloads()), len(Calls(m)), len(m.Proxies))
	}
	for _, a := range m.Apps {
		for _, w := range a.Workloads {
			calls := ev.Calls(a.Namespace, w)
			want := 0
			for _, d := range a.Deps {
				want += len(d.Ports)
				for _, p := range d.Ports {
					found := false
					for _, c := range calls {
						if c.Class == traffic.ClassService && c.Matches(d.Service, []uint32{p}, a.Namespace, "cluster.local") {
							found = true
						}
					}
					if !found {
						t.Fatalf("%s/%s: no call to %s port %d in %+v", a.Namespace, w, d.Service, p, calls)
					}
				}
			}
			if len(calls) != want {
				t.Fatalf("%s/%s: %d calls, want %d", a.Namespace, w, len(calls), want)
			}
		}
	}
}
