package cli

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/adopt"
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
	fs := newFlagSet("suggest", suggestUsage+"\nFlags:\n", stderr)
	var files, namespaces stringList
	fs.Var(&files, "f", "manifest file or directory of the inventory (repeatable; - reads stdin)")
	fs.Var(&namespaces, "namespace", "suggest for the workloads of this namespace only (repeatable)")
	out := fs.String("o", "hcl", "output: hcl or tf.json")
	imports := fs.Bool("import", true, "write an import block for each Sidecar of the inventory a scope adopts (import needs the provider's kubernetes block)")
	pf := addPredictFlags(fs)
	evf := addEvidenceFlags(fs, "the calls to suggest from")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if code := evf.check(true, stderr); code != ExitOK {
		return code
	}
	if code := checkFiles(files, stderr, "give the manifests of the inventory (files or directories), as for clusters"); code != ExitOK {
		return code
	}
	if code := checkOutput(*out, stderr, "hcl", "tf.json"); code != ExitOK {
		return code
	}
	inv, prog, code := pf.loadInventory(files, stdin, stderr)
	if code != ExitOK {
		return code
	}
	if code := checkNamespaces(namespaces, inv, stderr); code != ExitOK {
		return code
	}
	ev, code := evf.evidence(inv, *pf.domainSuffix, prog, stderr)
	if code != ExitOK {
		return code
	}
	keep := func(string) bool { return true }
	if len(namespaces) > 0 {
		keep = func(ns string) bool { return slices.Contains(namespaces, ns) }
	}
	reportUnknown(ev, keep, stderr)

	start := time.Now()
	pl, err := adopt.New(inv, ev, adopt.Options{Scope: pf.scopeOptions(), Import: *imports, Namespaces: namespaces})
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	prog.done(start, "indexed the inventory")

	start = time.Now()
	bw := bufio.NewWriter(stdout)
	var sw suggestionWriter
	if *out == "tf.json" {
		sw = newJSONWriter(bw, ev.Span())
	} else {
		sw = newHCLWriter(bw, ev.Span())
	}
	// Namespace by namespace, so that a whole mesh's plan is never held in memory.
	written, skipped := 0, 0
	for _, ns := range pl.Namespaces() {
		plan := pl.Namespace(ns)
		for _, w := range plan.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", warningText(w))
		}
		for _, s := range plan.Scopes {
			sw.write(s)
			written++
		}
		skipped += plan.Skipped
	}
	if written == 0 {
		where := "the inventory"
		if len(namespaces) > 0 {
			noun := "namespaces"
			if len(namespaces) == 1 {
				noun = "namespace"
			}
			where = noun + " " + quoteList(namespaces)
		}
		if skipped > 0 {
			fmt.Fprintf(stderr, "error: no scope to suggest: the %d calling workloads of %s could not be given one (see the warnings above)\n", skipped, where)
		} else {
			fmt.Fprintf(stderr, "error: no workload of %s made calls in the window %s of %s (%d series read): nothing to suggest. "+
				"Check that the manifests (-f) and the evidence are of the same mesh, and the --namespace filter.\n", where, ev.Span(), ev.Source, ev.Series)
		}
		return ExitError
	}
	sw.close()
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(stderr, "error: writing the output: %v\n", err)
		return ExitError
	}
	prog.done(start, "suggested %d scopes", written)
	if skipped > 0 {
		fmt.Fprintf(stderr, "warning: %s no scope (see above)\n", plural(skipped, "calling workload got", "calling workloads got"))
	}
	return ExitOK
}

// warningText words a warning of the plan for stderr.
func warningText(w adopt.Warning) string {
	problem := "the compiler refused it"
	if w.Problem != nil {
		problem = w.Problem.Summary + ": " + w.Problem.Detail
	}
	switch w.Kind {
	case adopt.Unlabelled:
		return fmt.Sprintf("%s has no pod labels, so no Sidecar can select it alone (an empty selector is the namespace default); label its pods, then run suggest again", quoteList(w.Workloads))
	case adopt.Inseparable:
		return fmt.Sprintf("no selector drawn from pod labels selects %s apart, and none selects them together without more: "+
			"their labels overlap (each has labels the others lack, and a workload has all of them). "+
			"Give them distinguishing labels, or declare their scopes by hand", quoteList(w.Workloads))
	case adopt.NotSuggested:
		return fmt.Sprintf("%s: not suggested: %s", w.Resource, problem)
	case adopt.AdoptedConflict:
		return fmt.Sprintf("%s: the Sidecar it adopts already conflicts: %s", w.Resource, problem)
	case adopt.LeftOut:
		evidence := ""
		if w.Evidence != "" {
			evidence = " (" + w.Evidence + ")"
		}
		return fmt.Sprintf("%s: the observed dependency %q%s is left out: %s", w.Resource, w.Dependency, evidence, problem)
	default: // adopt.CompilerWarning
		return fmt.Sprintf("%s: %s", w.Resource, problem)
	}
}

// quoteList joins at most adopt.NoteLimit names, then counts the rest.
func quoteList(l []string) string {
	if len(l) > adopt.NoteLimit {
		l = append(slices.Clone(l[:adopt.NoteLimit]), fmt.Sprintf("and %d more", len(l)-adopt.NoteLimit))
	}
	return strings.Join(l, ", ")
}
