package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/cli"
)

// ---- 4. diff ----

// diffFormats are the diff command's output formats, in report order.
var diffFormats = []string{"table", "markdown", "json"}

// diffRuns runs the provider binary's diff on the mesh-wide rollout: base is
// the mesh without Sidecars, head the same mesh with a namespace-default
// Sidecar in every namespace. The formats take turns, count runs each.
func (b *runner) diffRuns() (*Diff, error) {
	n := b.sizes.diff
	m := bench.Generate(bench.DefaultSpec(n))
	dir := filepath.Join(b.work, "diff")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	base, head := filepath.Join(dir, "base"), filepath.Join(dir, "head")
	for _, f := range []struct{ src, dir string }{
		{bench.MeshFile(b.meshDir(), n), base}, {bench.MeshFile(b.meshDir(), n), head}, {bench.SidecarsFile(b.meshDir(), n, bench.PolicyNamespace), head},
	} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(f.dir, filepath.Base(f.src)), string(data)); err != nil {
			return nil, err
		}
	}
	d := &Diff{Services: n, Workloads: len(m.Proxies), Namespaces: len(m.Namespaces)}
	for _, f := range diffFormats {
		d.Formats = append(d.Formats, DiffFormat{Format: f})
	}
	bin := filepath.Join(b.providerDir, "terraform-provider-meshscope")
	for range b.cfg.count {
		for i, f := range diffFormats {
			run, err := runMeasured(dir, b.log, bin, "diff", "--base", base, "--head", head, "-o", f)
			if err != nil {
				return nil, err
			}
			if run.ExitCode != cli.ExitChanged {
				return nil, fmt.Errorf("diff -o %s exited %d, want %d (changes): see %s", f, run.ExitCode, cli.ExitChanged, filepath.Join(b.work, "meshbench.log"))
			}
			d.Formats[i].Runs = append(d.Formats[i].Runs, DiffRun{WallNs: run.WallNs, CPUNs: run.CPUNs, PeakRSSBytes: run.MaxRSSBytes, OutputBytes: run.OutputBytes})
		}
	}
	for _, f := range newDiffView(d).Rows {
		fmt.Printf("    diff -o %-9s %6.2f s, peak RSS %s, output %s\n", f.Format, f.WallNs.Median()/1e9, mib(f.PeakRSS), size(f.OutputBytes))
	}
	return d, nil
}
