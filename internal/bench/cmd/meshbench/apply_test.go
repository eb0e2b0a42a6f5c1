package main

import (
	"strings"
	"testing"
)

// TestApplyRowsMedians checks the medians, the largest resident set and the
// failed run count of the apply stage's rows.
func TestApplyRowsMedians(t *testing.T) {
	run := func(wall, cpu, prov, rss int64) PlanRun {
		return PlanRun{WallNs: wall, CPUNs: cpu, ProviderCPUNs: prov, TreeRSSBytes: rss}
	}
	rows := applyRows([]Apply{
		{Scenario: ScenarioLive, Resources: 1000, Runs: []ApplyRun{
			{Apply: run(3e9, 30, 3, 100), Destroy: run(9e9, 1, 1, 500)},
			{Apply: run(1e9, 10, 1, 300), Destroy: run(7e9, 1, 1, 100)},
			{Apply: run(2e9, 20, 2, 200), Destroy: run(8e9, 1, 1, 100)},
		}},
		{Scenario: ScenarioLiveKubectl, Resources: 1000, Error: "after apply, the test API server holds 999 Sidecars in the mesh's namespaces, not 1000"},
	})
	if len(rows) != 2 {
		t.Fatalf("rows = %d, want 2", len(rows))
	}
	got := rows[0]
	if got.Apply != 2 || got.Destroy != 8 || got.ApplyCPU != 20 || got.ApplyProviderCPU != 2 || got.TreeRSS != 500 || got.Runs != 3 {
		t.Errorf("row = %+v, want apply 2 s, destroy 8 s, CPU 20, provider 2, RSS 500, 3 runs", got)
	}
	if rows[1].Runs != 0 || rows[1].Apply != 0 || rows[1].Error == "" {
		t.Errorf("failed row = %+v, want no runs, no times and the error", rows[1])
	}
}

// TestRenderFailedApply checks that a failed apply renders as failed, with
// its error and the runs before it, and that the target row then quotes no
// apply times.
func TestRenderFailedApply(t *testing.T) {
	r, err := ReadResults("testdata/live.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Terraform.Applies[1].Runs = r.Terraform.Applies[1].Runs[:1]
	r.Terraform.Applies[1].Error = "after apply, the test API server holds 999 Sidecars in the mesh's namespaces, not 1000"
	got, err := render(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "| test API server, the same 1,000 Sidecars as kubectl_manifest | 1, then failed | after apply, the test API server holds 999 Sidecars in the mesh's namespaces, not 1000 |"
	if !strings.Contains(got, want) {
		t.Errorf("report lacks the failed row %q", want)
	}
	if strings.Contains(got, "applied in") {
		t.Error("the kubernetes_manifest target quotes apply times although the kubectl_manifest apply failed")
	}
	if s := summary(r); !strings.Contains(s, "terraform apply and destroy: test API server, the same 1,000 Sidecars as kubectl_manifest: after apply") {
		t.Errorf("summary lacks the failed apply:\n%s", s)
	}
}

func TestCountIn(t *testing.T) {
	if n := countIn([]string{"team-0000", "team-0001", "other", "team-0000"}, []string{"team-0000", "team-0001"}); n != 3 {
		t.Errorf("countIn = %d, want 3", n)
	}
	if n := countIn(nil, []string{"team-0000"}); n != 0 {
		t.Errorf("countIn(nil) = %d, want 0", n)
	}
}
