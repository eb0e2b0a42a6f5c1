package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

func runDiff(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "manifest directory or file before the change")
	head := fs.String("head", "", "manifest directory or file after the change")
	out := fs.String("o", "table", "output: table, markdown or json")
	ver := fs.String("istio-version", istioconfig.DefaultVersion, "Istio release whose behaviour to predict, MAJOR.MINOR")
	domain := fs.String("domain-suffix", mesh.DefaultDomainSuffix, "cluster domain suffix")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: terraform-provider-meshscope diff --base PATH --head PATH [-o table|markdown|json] [--istio-version V] [--domain-suffix S]")
		fmt.Fprintln(stderr, "PATH is a file, a directory (its *.yaml and *.yml files, recursively) or - reads stdin (for one of the two).")
		fmt.Fprintln(stderr, "Exit status: 0 no change, 3 changes, 1 errors, 2 bad usage.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return ExitOK
		}
		return ExitUsage
	}
	if *base == "" || *head == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "diff needs --base PATH and --head PATH and no other arguments")
		return ExitUsage
	}
	if *out != "table" && *out != "markdown" && *out != "json" {
		fmt.Fprintf(stderr, "output %q is not one of table, markdown, json\n", *out)
		return ExitUsage
	}
	if *base == "-" && *head == "-" {
		fmt.Fprintln(stderr, "stdin can be read once: give - for only one of --base and --head")
		return ExitUsage
	}
	if code := checkDomainSuffix(*domain, stderr); code != ExitOK {
		return code
	}
	opts := predict.Options{IstioVersion: *ver, DomainSuffix: *domain}
	if code := checkIstioVersion(*ver, stderr); code != ExitOK {
		return code
	}
	load := func(which, path string) (*predict.Predictor, int) {
		inv, code := loadInventory([]string{path}, stdin, stderr, which+": ")
		if code != ExitOK {
			return nil, code
		}
		p, err := predict.New(inv, opts)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", which, err)
			return nil, ExitError
		}
		return p, ExitOK
	}
	pb, code := load("base", *base)
	if code != ExitOK {
		return code
	}
	ph, code := load("head", *head)
	if code != ExitOK {
		return code
	}
	rows := Diff(pb, ph)
	switch *out {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		doc := diffJSON{SchemaVersion: JSONSchemaVersion, Changes: make([]diffJSONRow, len(rows))}
		for i, r := range rows {
			doc.Changes[i] = diffJSONRow{WorkloadReview: r, Change: r.After - r.Before}
		}
		if err := enc.Encode(doc); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return ExitError
		}
	case "markdown":
		writeDiffMarkdown(stdout, rows)
	default:
		writeDiffTable(stdout, rows)
	}
	if len(rows) > 0 {
		return ExitChanged
	}
	return ExitOK
}

// JSONSchemaVersion is the schema_version of the -o json documents of clusters and diff. It
// changes when a field is removed or changes meaning; new fields keep it.
const JSONSchemaVersion = 1

// diffJSON is diff's -o json document.
type diffJSON struct {
	SchemaVersion int           `json:"schema_version"`
	Changes       []diffJSONRow `json:"changes"`
}

// diffJSONRow is one changed workload: the review's fields, and delta = after - before.
type diffJSONRow struct {
	predict.WorkloadReview
	Change int `json:"delta"`
}

// Diff predicts every workload of both inventories and returns those whose
// cluster list changes, sorted by namespace and workload.
func Diff(base, head *predict.Predictor) []predict.WorkloadReview {
	type key struct{ ns, kind, name string }
	seen := map[key]predict.WorkloadProxy{}
	var keys []key
	for _, p := range []*predict.Predictor{base, head} {
		for _, w := range p.WorkloadProxies() {
			k := key{w.Namespace, w.Kind, w.Name}
			if _, ok := seen[k]; !ok {
				seen[k] = w
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.ns != b.ns {
			return a.ns < b.ns
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.kind < b.kind
	})
	var rows []predict.WorkloadReview
	for _, k := range keys {
		if rv := predict.Review(base, head, seen[k]); rv.Changed() {
			rows = append(rows, rv)
		}
	}
	return rows
}

func riskMessages(rs []predict.Risk) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Message
	}
	return out
}

func hostList(h []string) string {
	if len(h) == 0 {
		return "-"
	}
	return strings.Join(h, ", ")
}

func signed(n int) string {
	if n > 0 {
		return "+" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func writeDiffTable(w io.Writer, rows []predict.WorkloadReview) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No proxy's cluster list changes.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tBEFORE\tAFTER\tDELTA\tHOSTS ADDED\tHOSTS REMOVED\tRISK")
	for _, r := range rows {
		risk := "-"
		if len(r.Risks) > 0 {
			risk = strings.Join(riskMessages(r.Risks), "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Namespace, r.Workload, r.Before, r.After, signed(r.After-r.Before),
			hostList(r.AddedHosts), hostList(r.RemovedHosts), risk)
	}
	_ = tw.Flush()
}

func writeDiffMarkdown(w io.Writer, rows []predict.WorkloadReview) {
	fmt.Fprintln(w, "### meshscope: predicted Envoy cluster changes")
	fmt.Fprintln(w)
	if len(rows) == 0 {
		fmt.Fprintln(w, "No proxy's cluster list changes.")
		return
	}
	fmt.Fprintln(w, "| Namespace | Workload | Before | After | Delta | Hosts added | Hosts removed |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---|")
	var risky []string
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s |\n", r.Namespace, r.Workload, r.Before, r.After, signed(r.After-r.Before),
			mdHosts(r.AddedHosts), mdHosts(r.RemovedHosts))
		for _, k := range r.Risks {
			risky = append(risky, fmt.Sprintf("- :warning: `%s/%s` %s", r.Namespace, r.Workload, k.Message))
		}
	}
	if len(risky) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "**Risky tightenings**")
		fmt.Fprintln(w)
		for _, l := range risky {
			fmt.Fprintln(w, l)
		}
	}
}

func mdHosts(h []string) string {
	if len(h) == 0 {
		return "-"
	}
	parts := make([]string, len(h))
	for i, x := range h {
		parts[i] = "`" + x + "`"
	}
	return strings.Join(parts, "<br>")
}
