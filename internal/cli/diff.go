package cli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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
	hostLimit := fs.Int("host-limit", DefaultHostLimit, "most hosts (and, in json, clusters) listed per workload and direction; the counts are always full; 0 lists all")
	quiet := fs.Bool("quiet", false, "do not report slow steps (over 2s) on stderr")
	full := fs.Bool("full", false, "markdown: every changed workload, not the largest changes that fit a pull-request comment")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: terraform-provider-meshscope diff --base PATH --head PATH [-o table|markdown|json] [--host-limit N] [--full] [--istio-version V] [--domain-suffix S]")
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
	if *hostLimit < 0 {
		fmt.Fprintf(stderr, "--host-limit %d: give a number of hosts, or 0 for all\n", *hostLimit)
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
	prog := newProgress(stderr, *quiet)
	load := func(which, path string) (*predict.Predictor, int) {
		inv, code := loadInventory([]string{path}, stdin, stderr, which+": ", prog)
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
	var changed int
	var err error
	reviewStart := time.Now()
	defer func() { prog.done(reviewStart, "predicted and compared every workload (%d changed)", changed) }()
	switch *out {
	case "json":
		changed, err = writeDiffJSON(stdout, pb, ph, *hostLimit)
	case "markdown":
		var rows []DiffRow
		rows, err = collectDiff(pb, ph, *hostLimit)
		changed = len(rows)
		if err == nil {
			limit := MarkdownLimit
			if *full {
				limit = 0
			}
			writeDiffMarkdown(stdout, rows, limit)
		}
	default:
		var rows []DiffRow
		rows, err = collectDiff(pb, ph, *hostLimit)
		changed = len(rows)
		if err == nil {
			writeDiffTable(stdout, rows)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	if changed > 0 {
		return ExitChanged
	}
	return ExitOK
}

// DefaultHostLimit is the most hosts diff lists per workload and direction, as the provider's
// review_host_limit.
const DefaultHostLimit = 25

// MarkdownLimit is the size -o markdown stays under without --full: a GitHub pull-request
// comment holds 65,536 characters.
const MarkdownLimit = 60000

// JSONSchemaVersion is the schema_version of the -o json documents of clusters and diff. It
// changes when a field is removed or changes meaning; new fields keep it.
const JSONSchemaVersion = 1

// DiffRow is one workload whose cluster list changes, with its lists capped at the host limit
// and their full counts.
type DiffRow struct {
	Namespace           string         `json:"namespace"`
	Workload            string         `json:"workload"` // Kind/name
	Before              int            `json:"before"`
	After               int            `json:"after"`
	Delta               int            `json:"delta"` // After - Before
	AddedHosts          []string       `json:"added_hosts"`
	AddedHostCount      int            `json:"added_host_count"`
	RemovedHosts        []string       `json:"removed_hosts"`
	RemovedHostCount    int            `json:"removed_host_count"`
	AddedClusters       []string       `json:"added_clusters"`
	AddedClusterCount   int            `json:"added_cluster_count"`
	RemovedClusters     []string       `json:"removed_clusters"`
	RemovedClusterCount int            `json:"removed_cluster_count"`
	Risks               []predict.Risk `json:"risks"`
}

func newDiffRow(rv predict.WorkloadReview, limit int) DiffRow {
	capped := func(l []string) []string {
		if limit > 0 && len(l) > limit {
			return slices.Clone(l[:limit])
		}
		return l
	}
	return DiffRow{
		Namespace: rv.Namespace, Workload: rv.Workload, Before: rv.Before, After: rv.After, Delta: rv.After - rv.Before,
		AddedHosts: capped(rv.AddedHosts), AddedHostCount: len(rv.AddedHosts),
		RemovedHosts: capped(rv.RemovedHosts), RemovedHostCount: len(rv.RemovedHosts),
		AddedClusters: capped(rv.AddedClusters), AddedClusterCount: len(rv.AddedClusters),
		RemovedClusters: capped(rv.RemovedClusters), RemovedClusterCount: len(rv.RemovedClusters),
		Risks: rv.Risks,
	}
}

// collectDiff returns the changed workloads, capped, in order.
func collectDiff(base, head *predict.Predictor, limit int) ([]DiffRow, error) {
	var rows []DiffRow
	err := EachDiff(base, head, limit, func(r DiffRow) error {
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// writeDiffJSON streams the -o json document, a row at a time, so that its memory does not
// grow with the mesh. It returns the number of changed workloads.
func writeDiffJSON(w io.Writer, base, head *predict.Predictor, limit int) (int, error) {
	// A bufio.Writer keeps its first error and returns it from Flush, so the writes below need
	// no checks of their own.
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\n  \"schema_version\": %d,\n  \"changes\": [", JSONSchemaVersion)
	n := 0
	err := EachDiff(base, head, limit, func(r DiffRow) error {
		b, err := json.MarshalIndent(r, "    ", "  ")
		if err != nil {
			return err
		}
		sep := "\n    "
		if n > 0 {
			sep = ",\n    "
		}
		_, _ = bw.WriteString(sep)
		_, _ = bw.Write(b)
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	end := "]\n}\n"
	if n > 0 {
		end = "\n  ]\n}\n"
	}
	_, _ = bw.WriteString(end)
	return n, bw.Flush()
}

// EachDiff predicts every workload of both inventories and calls fn with each whose cluster
// list changes, capped at limit hosts and clusters per list (0: no cap), sorted by namespace
// and workload. Only one full review is held at a time.
func EachDiff(base, head *predict.Predictor, limit int, fn func(DiffRow) error) error {
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
	reviewer := predict.NewReviewer(base, head)
	for _, k := range keys {
		if rv := reviewer.Review(seen[k]); rv.Changed() {
			if err := fn(newDiffRow(rv, limit)); err != nil {
				return err
			}
		}
	}
	return nil
}

func riskMessages(rs []predict.Risk) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Message
	}
	return out
}

func hostList(h []string, count int) string {
	if count == 0 {
		return "-"
	}
	out := strings.Join(h, ", ")
	if more := count - len(h); more > 0 {
		out += fmt.Sprintf(" (+%d more)", more)
	}
	return out
}

func signed(n int) string {
	if n > 0 {
		return "+" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func writeDiffTable(w io.Writer, rows []DiffRow) {
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Namespace, r.Workload, r.Before, r.After, signed(r.Delta),
			hostList(r.AddedHosts, r.AddedHostCount), hostList(r.RemovedHosts, r.RemovedHostCount), risk)
	}
	_ = tw.Flush()
}

// writeDiffMarkdown writes the pull-request comment. With limit > 0 it stays under limit
// characters: a summary, then the largest changes (by |delta|) that fit, then how many workloads
// are left out; the risky tightenings come first, as they need a reviewer most.
func writeDiffMarkdown(w io.Writer, rows []DiffRow, limit int) {
	var b strings.Builder
	b.WriteString("### meshscope: predicted Envoy cluster changes\n\n")
	if len(rows) == 0 {
		b.WriteString("No proxy's cluster list changes.\n")
		_, _ = io.WriteString(w, b.String())
		return
	}
	var before, after int
	var risky []string
	for _, r := range rows {
		before += r.Before
		after += r.After
		for _, k := range r.Risks {
			risky = append(risky, fmt.Sprintf("- :warning: `%s/%s` %s\n", r.Namespace, r.Workload, k.Message))
		}
	}
	what := "workloads change"
	if len(rows) == 1 {
		what = "workload changes"
	}
	fmt.Fprintf(&b, "%d %s: %d Envoy clusters before, %d after (%s).\n\n", len(rows), what, before, after, signed(after-before))
	if len(risky) > 0 {
		b.WriteString("**Risky tightenings**\n\n")
		for i, l := range risky {
			if limit > 0 && b.Len()+len(l) > limit/4 {
				fmt.Fprintf(&b, "- ... and %d more\n", len(risky)-i)
				break
			}
			b.WriteString(l)
		}
		b.WriteString("\n")
	}
	order := rows
	if limit > 0 {
		order = slices.Clone(rows)
		slices.SortStableFunc(order, func(x, y DiffRow) int { return abs(y.Delta) - abs(x.Delta) })
	}
	b.WriteString("| Namespace | Workload | Before | After | Delta | Hosts added | Hosts removed |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---|\n")
	const tailRoom = 200 // for the "N more" line
	for i, r := range order {
		line := fmt.Sprintf("| %s | %s | %d | %d | %s | %s | %s |\n", r.Namespace, r.Workload, r.Before, r.After, signed(r.Delta),
			mdHosts(r.AddedHosts, r.AddedHostCount), mdHosts(r.RemovedHosts, r.RemovedHostCount))
		if limit > 0 && b.Len()+len(line)+tailRoom > limit {
			fmt.Fprintf(&b, "\n%d more workloads change, with smaller deltas; run `diff -o markdown --full` or `-o json` for all of them.\n", len(order)-i)
			break
		}
		b.WriteString(line)
	}
	_, _ = io.WriteString(w, b.String())
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func mdHosts(h []string, count int) string {
	if count == 0 {
		return "-"
	}
	parts := make([]string, len(h))
	for i, x := range h {
		parts[i] = "`" + x + "`"
	}
	out := strings.Join(parts, "<br>")
	if more := count - len(h); more > 0 {
		out += fmt.Sprintf("<br>(+%d more)", more)
	}
	return out
}
