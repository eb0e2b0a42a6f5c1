package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

const suggestUsage = `Usage: terraform-provider-meshscope suggest (--prometheus URL | --observed FILE) -f PATH [-f PATH ...] [--namespace NS ...] [-o hcl|tf.json] [--window W] [--import=false] [--istio-version V] [--domain-suffix S]
       Prometheus client: [--bearer-token-env NAME] [--header NAME=VALUE ...] [--ca-certificate FILE] [--insecure] [--timeout D]

Writes one meshscope_workload_scope per workload of the inventory that made calls in the
window, and nothing else: its observed dependencies ("name.namespace" for a Service, the host
for a ServiceEntry), each with its count; ports only when the metrics or a single-port
destination make them certain, and then for every dependency of the scope; a workload_selector
that selects exactly that workload (or, for a workload a Sidecar of the inventory selects, that
Sidecar's name and selector, with an import block). Calls through PassthroughCluster or
BlackHoleCluster, and to hosts the inventory does not hold, are comments that say what to add.
Callers and hosts the inventory does not hold are reported on stderr.

PATH is a file, a directory (its *.yaml and *.yml files, recursively) or - for stdin. The token
for --prometheus is read from the environment variable --bearer-token-env names, else from
MESHSCOPE_PROMETHEUS_TOKEN; it is never given on the command line.

Exit status: 0 written, 1 bad input (also: no Istio series in the window, no calling workload), 2 bad usage.
`

func runSuggest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("suggest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files, namespaces stringList
	fs.Var(&files, "f", "manifest file or directory of the inventory (repeatable; - reads stdin)")
	fs.Var(&namespaces, "namespace", "suggest for the workloads of this namespace only (repeatable)")
	out := fs.String("o", "hcl", "output: hcl or tf.json")
	imports := fs.Bool("import", true, "write an import block for each Sidecar of the inventory a scope adopts (import needs the provider's kubernetes block)")
	ver := fs.String("istio-version", istioconfig.DefaultVersion, "Istio release whose behaviour to predict, MAJOR.MINOR")
	domain := fs.String("domain-suffix", mesh.DefaultDomainSuffix, "cluster domain suffix")
	quiet := fs.Bool("quiet", false, "do not report slow steps (over 2s) on stderr")
	evf := addEvidenceFlags(fs, "the calls to suggest from")
	fs.Usage = func() {
		fmt.Fprint(stderr, suggestUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	if code := evf.check(true, stderr); code != ExitOK {
		return code
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "missing -f PATH: give the manifests of the inventory (files or directories), as for clusters")
		return ExitUsage
	}
	if *out != "hcl" && *out != "tf.json" {
		fmt.Fprintf(stderr, "output %q is not one of hcl, tf.json\n", *out)
		return ExitUsage
	}
	if code := checkDomainSuffix(*domain, stderr); code != ExitOK {
		return code
	}
	if code := checkIstioVersion(*ver, stderr); code != ExitOK {
		return code
	}
	prog := newProgress(stderr, *quiet)
	inv, code := loadInventory(files, stdin, stderr, "", prog)
	if code != ExitOK {
		return code
	}
	if code := checkNamespaces(namespaces, inv, stderr); code != ExitOK {
		return code
	}
	start := time.Now()
	snap, code := evf.snapshot(context.Background(), stderr)
	if code != ExitOK {
		return code
	}
	prog.done(start, "read %d series from %s", len(snap.Series), snap.Source)
	ev, code := resolveEvidence(snap, inv, *domain, stderr)
	if code != ExitOK {
		return code
	}
	keep := func(string) bool { return true }
	if len(namespaces) > 0 {
		keep = func(ns string) bool { return slices.Contains(namespaces, ns) }
	}
	reportUnknown(ev, keep, stderr)

	start = time.Now()
	pred, err := predict.New(inv, predict.Options{IstioVersion: *ver, DomainSuffix: *domain})
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	prog.done(start, "indexed the inventory")

	byNs := map[string][]*mesh.Workload{}
	var order []string
	for _, w := range inv.Workloads {
		if !keep(w.Namespace) {
			continue
		}
		if _, ok := byNs[w.Namespace]; !ok {
			order = append(order, w.Namespace)
		}
		byNs[w.Namespace] = append(byNs[w.Namespace], w)
	}
	slices.Sort(order)

	start = time.Now()
	pl := newPlanner(inv, pred, ev, scope.Options{DomainSuffix: *domain, IstioVersion: *ver}, *imports, stderr)
	bw := bufio.NewWriter(stdout)
	var sw suggestionWriter
	if *out == "tf.json" {
		sw = newJSONWriter(bw, ev.Window)
	} else {
		sw = newHCLWriter(bw, ev.Window)
	}
	written := 0
	for _, ns := range order {
		for _, s := range pl.namespace(ns, byNs[ns]) {
			sw.write(s)
			written++
		}
	}
	if written == 0 {
		where := "the inventory"
		if len(namespaces) > 0 {
			where = fmt.Sprintf("namespaces %s", quoteList(namespaces))
		}
		if pl.skipped > 0 {
			fmt.Fprintf(stderr, "error: no scope to suggest: the %d calling workloads of %s could not be given one (see the warnings above)\n", pl.skipped, where)
		} else {
			fmt.Fprintf(stderr, "error: no workload of %s made calls in the window %s of %s (%d series read): nothing to suggest. "+
				"Check that the manifests (-f) and the evidence are of the same mesh, and the --namespace filter.\n", where, ev.Window, ev.Source, ev.Series)
		}
		return ExitError
	}
	sw.close()
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(stderr, "error: writing the output: %v\n", err)
		return ExitError
	}
	prog.done(start, "suggested %d scopes", written)
	if pl.skipped > 0 {
		fmt.Fprintf(stderr, "warning: %s no scope (see above)\n", plural(pl.skipped, "calling workload got", "calling workloads got"))
	}
	return ExitOK
}
