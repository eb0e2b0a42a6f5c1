package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

const diffUsage = `Usage: terraform-provider-meshscope diff --base PATH --head PATH [-o table|markdown|json] [--host-limit N] [--full] [--istio-version V] [--domain-suffix S]
         [--prometheus URL [--bearer-token-env NAME] [--header NAME=VALUE ...] [--ca-certificate FILE] [--insecure] [--timeout D] | --observed FILE] [--window W]
PATH is a file, a directory (its *.yaml and *.yml files, recursively) or - reads stdin (for one of the two).
With --prometheus or --observed, every workload's observed calls that the head tree's Sidecars would cut are flagged,
those this change cuts (new) and those cut today already, also for workloads whose cluster list does not change.
Exit status: 0 no change, 3 changes, 1 errors, 2 bad usage (cut calls alone do not change it).
`

func runDiff(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", diffUsage, stderr)
	base := fs.String("base", "", "manifest directory or file before the change")
	head := fs.String("head", "", "manifest directory or file after the change")
	out := fs.String("o", "table", "output: table, markdown or json")
	pf := addPredictFlags(fs)
	hostLimit := fs.Int("host-limit", DefaultHostLimit, "most hosts (and, in json, clusters) listed per workload and direction; the counts are always full; 0 lists all")
	full := fs.Bool("full", false, "markdown: every changed workload, not the largest changes that fit a pull-request comment")
	evf := addEvidenceFlags(fs, "flags the observed calls the head tree's Sidecars would cut")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *base == "" || *head == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "diff needs --base PATH and --head PATH and no other arguments")
		return ExitUsage
	}
	if code := checkOutput(*out, stderr, "table", "markdown", "json"); code != ExitOK {
		return code
	}
	if *hostLimit < 0 {
		fmt.Fprintf(stderr, "--host-limit %d: give a number of hosts, or 0 for all\n", *hostLimit)
		return ExitUsage
	}
	if code := evf.check(false, stderr); code != ExitOK {
		return code
	}
	if *base == "-" && *head == "-" {
		fmt.Fprintln(stderr, "stdin can be read once: give - for only one of --base and --head")
		return ExitUsage
	}
	if code := pf.check(stderr); code != ExitOK {
		return code
	}
	opts := pf.options()
	prog := pf.progress(stderr)
	load := func(which, path string) (*predict.Predictor, *mesh.Inventory, int) {
		inv, code := loadInventory([]string{path}, stdin, stderr, which+": ", prog)
		if code != ExitOK {
			return nil, nil, code
		}
		p, err := predict.New(inv, opts)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", which, err)
			return nil, nil, ExitError
		}
		return p, inv, ExitOK
	}
	pb, _, code := load("base", *base)
	if code != ExitOK {
		return code
	}
	ph, headInv, code := load("head", *head)
	if code != ExitOK {
		return code
	}
	// The observed calls are the head tree's workloads' calls, to the head tree's hosts.
	var ev *traffic.Evidence
	if evf.given() {
		resolved, code := evf.evidence(headInv, *pf.domainSuffix, prog, stderr)
		if code != ExitOK {
			return code
		}
		reportUnknown(resolved, nil, stderr)
		ev = resolved
	}
	tree := review.NewTree(pb, ph, headInv, ev, review.Options{DomainSuffix: *pf.domainSuffix, Scope: pf.scopeOptions()})
	var changed int
	var err error
	reviewStart := time.Now()
	defer func() { prog.done(reviewStart, "predicted and compared every workload (%d changed)", changed) }()
	switch *out {
	case "json":
		changed, err = writeDiffJSON(stdout, tree, *hostLimit, ev)
	case "markdown":
		var rows []DiffRow
		var obs *observedReview
		rows, obs, err = collectDiff(tree, *hostLimit, ev)
		changed = len(rows)
		if err == nil {
			limit := MarkdownLimit
			if *full {
				limit = 0
			}
			writeDiffMarkdown(stdout, rows, limit, obs, censusSentences(tree), tree.VersionNotes())
		}
	default:
		var rows []DiffRow
		var obs *observedReview
		rows, obs, err = collectDiff(tree, *hostLimit, ev)
		changed = len(rows)
		if err == nil {
			writeDiffTable(stdout, rows, obs, censusSentences(tree), tree.VersionNotes())
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
// changes when a field is removed or changes meaning; new fields keep it (the observed_cut
// fields and the observed object of diff with evidence are new fields of version 1).
const JSONSchemaVersion = 1

// DiffRow is one workload whose cluster list changes, with its lists capped at the host limit
// and their full counts.
type DiffRow struct {
	Namespace string  `json:"namespace"`
	Workload  string  `json:"workload"` // Kind/name
	Proxies   Proxies `json:"proxies"`  // how many proxies the workload runs, each with these clusters
	Before    int     `json:"before"`
	After     int     `json:"after"`
	Delta     int     `json:"delta"` // After - Before
	// ListenersBefore and ListenersAfter are the LDS listener counts of each proxy; routes and
	// virtual hosts likewise count its RDS route configurations and their virtual hosts.
	ListenersBefore     int            `json:"listeners_before"`
	ListenersAfter      int            `json:"listeners_after"`
	RoutesBefore        int            `json:"routes_before"`
	RoutesAfter         int            `json:"routes_after"`
	VirtualHostsBefore  int            `json:"virtual_hosts_before"`
	VirtualHostsAfter   int            `json:"virtual_hosts_after"`
	AddedHosts          []string       `json:"added_hosts"`
	AddedHostCount      int            `json:"added_host_count"`
	RemovedHosts        []string       `json:"removed_hosts"`
	RemovedHostCount    int            `json:"removed_host_count"`
	AddedClusters       []string       `json:"added_clusters"`
	AddedClusterCount   int            `json:"added_cluster_count"`
	RemovedClusters     []string       `json:"removed_clusters"`
	RemovedClusterCount int            `json:"removed_cluster_count"`
	Risks               []predict.Risk `json:"risks"`
	// EnvoyFilters name the EnvoyFilters whose cluster patches reach the workload, which the
	// prediction leaves out (R39); absent when none does.
	EnvoyFilters []string `json:"envoy_filters,omitempty"`
	// ListenerEnvoyFilters name the EnvoyFilters whose listener patches can add, remove or rename
	// the workload's listeners, which the listener counts leave out (R56); absent when none does.
	ListenerEnvoyFilters []string `json:"listener_envoy_filters,omitempty"`
	// UnreachedCalls are the calls the head tree's Sidecar names for the workload that do not
	// reach their service through its listeners and routes (R62) and do in the base tree,
	// "host:port: at the STEP step, why"; absent when the head breaks none.
	UnreachedCalls []string `json:"unreached_calls,omitempty"`
	// Sidecar is set when the workload runs a sidecar in one tree only: it then gains (before 0)
	// or loses (after 0) every cluster, and this says why.
	Sidecar string `json:"sidecar_change,omitempty"`
	// NotModelled is what istiod adds to the workload's proxies that meshscope does not predict
	// (R44, R45); absent when nothing.
	NotModelled []string `json:"not_modelled,omitempty"`
	// With evidence (--prometheus, --observed): the workload's observed calls the head tree
	// cuts, capped at the host limit, new ones first; the full count, and how many are new.
	// Absent without evidence, and when none is cut.
	ObservedCut         []CutCall `json:"observed_cut,omitempty"`
	ObservedCutCount    int       `json:"observed_cut_count,omitempty"`
	ObservedCutNewCount int       `json:"observed_cut_new_count,omitempty"`
}

// Proxies is how many proxies a workload runs: between Min and Max (equal unless an autoscaler
// sets a range), or, for a DaemonSet, one per node (PerNode, Min and Max 0: not known from
// manifests).
type Proxies struct {
	Min     int  `json:"min"`
	Max     int  `json:"max"`
	PerNode bool `json:"per_node,omitempty"`
}

func proxiesOf(r census.Replicas) Proxies { return Proxies{Min: r.Min, Max: r.Max, PerNode: r.PerNode} }

func (p Proxies) String() string {
	return census.Replicas{Min: p.Min, Max: p.Max, PerNode: p.PerNode}.String()
}

func newDiffRow(c review.Change, limit int) DiffRow {
	rv := c.WorkloadReview
	capped := func(l []string) []string {
		if limit > 0 && len(l) > limit {
			return slices.Clone(l[:limit])
		}
		return l
	}
	row := DiffRow{
		Namespace: rv.Namespace, Workload: rv.Workload, Proxies: proxiesOf(c.Replicas), Before: rv.Before, After: rv.After, Delta: rv.After - rv.Before,
		ListenersBefore: rv.ListenersBefore, ListenersAfter: rv.ListenersAfter,
		RoutesBefore: rv.RoutesBefore, RoutesAfter: rv.RoutesAfter, VirtualHostsBefore: rv.VirtualHostsBefore, VirtualHostsAfter: rv.VirtualHostsAfter,
		AddedHosts: capped(rv.AddedHosts), AddedHostCount: len(rv.AddedHosts),
		RemovedHosts: capped(rv.RemovedHosts), RemovedHostCount: len(rv.RemovedHosts),
		AddedClusters: capped(rv.AddedClusters), AddedClusterCount: len(rv.AddedClusters),
		RemovedClusters: capped(rv.RemovedClusters), RemovedClusterCount: len(rv.RemovedClusters),
		Risks: rv.Risks, EnvoyFilters: c.ClusterPatches, ListenerEnvoyFilters: c.ListenerPatches, Sidecar: c.Sidecar, NotModelled: c.NotModelled,
	}
	for _, u := range c.Unreached {
		row.UnreachedCalls = append(row.UnreachedCalls, fmt.Sprintf("%s:%d: at the %s step, %s", u.Host, u.Port, u.Step, u.Why))
	}
	if c.Cut != nil {
		cuts := cutCalls(c.Cut)
		row.ObservedCut, row.ObservedCutCount, row.ObservedCutNewCount = cappedCuts(cuts, limit), len(cuts), countNew(cuts)
	}
	return row
}

// observedReview is what the evidence adds to a review held in memory (table, markdown): the
// source and window, and the workloads whose cluster list does not change but whose observed
// calls the head tree cuts.
type observedReview struct {
	source, window string
	unchanged      []CutRow
}

// collectDiff returns the changed workloads, capped, in order; with evidence, also the
// unchanged workloads with calls cut.
func collectDiff(tree *review.Tree, limit int, ev *traffic.Evidence) ([]DiffRow, *observedReview, error) {
	var rows []DiffRow
	err := tree.Each(func(c review.Change) error {
		rows = append(rows, newDiffRow(c, limit))
		return nil
	})
	if err != nil || ev == nil {
		return rows, nil, err
	}
	obs := &observedReview{source: ev.Source, window: ev.Span()}
	changed := changedSet(rows)
	err = tree.EachUnchangedCut(func(k string) bool { return changed[k] }, func(c review.Change) error {
		obs.unchanged = append(obs.unchanged, cutRow(c, limit))
		return nil
	})
	return rows, obs, err
}

// cutRow is an unchanged workload's row of cut calls.
func cutRow(c review.Change, limit int) CutRow {
	cuts := cutCalls(c.Cut)
	return CutRow{Namespace: c.Namespace, Workload: c.Workload, ObservedCut: cappedCuts(cuts, limit), ObservedCutCount: len(cuts)}
}

func changedSet(rows []DiffRow) map[string]bool {
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.Namespace+"/"+r.Workload] = true
	}
	return out
}

// writeDiffJSON streams the -o json document, a row at a time, so that its memory does not
// grow with the mesh. It returns the number of changed workloads. With evidence, the unchanged
// workloads with calls cut follow in a second pass over the head tree, which keeps only the
// names of the changed ones.
func writeDiffJSON(w io.Writer, tree *review.Tree, limit int, ev *traffic.Evidence) (int, error) {
	// A bufio.Writer keeps its first error and returns it from Flush, so the writes below need
	// no checks of their own.
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\n  \"schema_version\": %d,\n  \"changes\": [", JSONSchemaVersion)
	changes := &jsonArray{w: bw, indent: "    "}
	changed := map[string]bool{}
	err := tree.Each(func(c review.Change) error {
		r := newDiffRow(c, limit)
		changed[r.Namespace+"/"+r.Workload] = true
		return changes.add(r)
	})
	n := changes.n
	if err != nil {
		return n, err
	}
	end := "]"
	if n > 0 {
		end = "\n  ]"
	}
	_, _ = bw.WriteString(end)
	cj := censusOf(tree.Census(), limit)
	cj.Versions = tree.VersionNotes()
	cs, err := json.MarshalIndent(cj, "  ", "  ")
	if err != nil {
		return n, err
	}
	fmt.Fprintf(bw, ",\n  \"census\": %s", cs)
	if ev != nil {
		src, _ := json.Marshal(ev.Source)
		win, _ := json.Marshal(ev.Window)
		covered := ""
		if ev.Coverage.Covered != 0 {
			covered = fmt.Sprintf("\n    \"covered\": %q,", ev.Coverage.Covered.String())
		}
		fmt.Fprintf(bw, ",\n  \"observed\": {\n    \"source\": %s,\n    \"window\": %s,%s\n    \"series\": %d,\n    \"unchanged_cut\": [", src, win, covered, ev.Series)
		cuts := &jsonArray{w: bw, indent: "      "}
		err := tree.EachUnchangedCut(func(k string) bool { return changed[k] }, func(c review.Change) error { return cuts.add(cutRow(c, limit)) })
		m := cuts.n
		if err != nil {
			return n, err
		}
		if m > 0 {
			_, _ = bw.WriteString("\n    ")
		}
		fmt.Fprintf(bw, "],\n    \"unchanged_cut_count\": %d\n  }", m)
	}
	_, _ = bw.WriteString("\n}\n")
	return n, bw.Flush()
}

// CensusJSON is the head tree's census in -o json: how many workloads run sidecars and how
// many proxies they run, and the workloads that run none, with why (capped at the host limit).
type CensusJSON struct {
	SidecarWorkloads int            `json:"sidecar_workloads"`
	SidecarProxies   Proxies        `json:"sidecar_proxies"` // DaemonSets not counted
	PerNodeWorkloads int            `json:"per_node_workloads"`
	NoSidecarCount   int            `json:"no_sidecar_count"`
	NoSidecarReasons map[string]int `json:"no_sidecar_reasons"`
	NoSidecar        []NoSidecarRow `json:"no_sidecar"`
	// VMProxiesNotModelled counts the WorkloadEntries and WorkloadGroups: VM proxies, sidecars
	// that meshscope does not predict.
	VMProxiesNotModelled int `json:"vm_proxies_not_modelled"`
	// Versions say which Istio release the proxies are predicted with, per istiod revision.
	Versions []string `json:"versions"`
}

// NoSidecarRow is a workload of the head tree that runs no sidecar.
type NoSidecarRow struct {
	Namespace string  `json:"namespace"`
	Workload  string  `json:"workload"` // Kind/name, as Istio names it
	Proxy     string  `json:"proxy"`    // gateway, proxyless-grpc, ztunnel or none
	Reason    string  `json:"reason"`
	Why       string  `json:"why"`
	Replicas  Proxies `json:"replicas"`
}

func censusOf(c *census.Census, limit int) CensusJSON {
	out := CensusJSON{NoSidecarReasons: map[string]int{}, NoSidecar: []NoSidecarRow{}, VMProxiesNotModelled: len(c.VMs())}
	for _, w := range c.All() {
		if w.RunsSidecar() {
			out.SidecarWorkloads++
			if w.Replicas.PerNode {
				out.PerNodeWorkloads++
			} else {
				out.SidecarProxies.Min += w.Replicas.Min
				out.SidecarProxies.Max += w.Replicas.Max
			}
			continue
		}
		out.NoSidecarCount++
		out.NoSidecarReasons[string(w.Reason)]++
		if limit <= 0 || len(out.NoSidecar) < limit {
			out.NoSidecar = append(out.NoSidecar, NoSidecarRow{Namespace: w.Namespace, Workload: w.ID(), Proxy: string(w.Proxy),
				Reason: string(w.Reason), Why: w.Why, Replicas: proxiesOf(w.Replicas)})
		}
	}
	return out
}

// jsonArray streams the items of a JSON array to w, each on a new line, indented by indent.
type jsonArray struct {
	w      *bufio.Writer
	indent string
	n      int // items written
}

// add writes v as the next item.
func (a *jsonArray) add(v any) error {
	b, err := json.MarshalIndent(v, a.indent, "  ")
	if err != nil {
		return err
	}
	sep := ",\n" + a.indent
	if a.n == 0 {
		sep = "\n" + a.indent
	}
	_, _ = a.w.WriteString(sep)
	_, _ = a.w.Write(b)
	a.n++
	return nil
}

// totalsSentence sums the changed workloads' clusters over their proxies: "2 workloads change
// (4 proxies): 76 Envoy clusters before, 52 after (-24), summed over their proxies." An
// autoscaler's range makes the sums ranges; DaemonSets, whose proxies the manifests do not
// count, are left out of the sums and said so.
func totalsSentence(rows []DiffRow) string {
	var proxies, before, after, delta [2]int
	perNode := 0
	for _, r := range rows {
		if r.Proxies.PerNode {
			perNode++
			continue
		}
		for i, n := range []int{r.Proxies.Min, r.Proxies.Max} {
			proxies[i] += n
			before[i] += n * r.Before
			after[i] += n * r.After
			delta[i] += n * r.Delta
		}
	}
	span := func(v [2]int, f func(int) string) string {
		if v[0] == v[1] {
			return f(v[0])
		}
		return f(v[0]) + " to " + f(v[1])
	}
	what := "workloads change"
	if len(rows) == 1 {
		what = "workload changes"
	}
	noun := "proxies"
	if proxies == [2]int{1, 1} {
		noun = "proxy"
	}
	summed := ""
	if proxies[1] > 1 {
		summed = ", summed over their proxies"
	}
	out := fmt.Sprintf("%d %s (%s %s): %s Envoy clusters before, %s after (%s)%s.",
		len(rows), what, span(proxies, strconv.Itoa), noun, span(before, strconv.Itoa), span(after, strconv.Itoa), span(delta, signed), summed)
	if perNode > 0 {
		out += fmt.Sprintf(" %s run one proxy per node, which manifests do not count: not in these sums.", plural(perNode, "DaemonSet", "DaemonSets"))
	}
	patched := map[string]bool{}
	n := 0
	for _, r := range rows {
		if len(r.EnvoyFilters) > 0 {
			n++
		}
		for _, f := range r.EnvoyFilters {
			patched[f] = true
		}
	}
	var changes []string
	for _, r := range rows {
		if r.Sidecar != "" {
			if len(changes) == sidecarChangesListed {
				changes = append(changes, fmt.Sprintf("and %d more", countSidecarChanges(rows)-len(changes)))
				break
			}
			changes = append(changes, r.Namespace+"/"+r.Workload+" "+r.Sidecar)
		}
	}
	if len(changes) > 0 {
		out += " Counted from or to no cluster: " + strings.Join(changes, "; ") + "."
	}
	notModelled := 0
	for _, r := range rows {
		if len(r.NotModelled) > 0 {
			notModelled++
		}
	}
	if notModelled > 0 {
		out += fmt.Sprintf(" %s get clusters meshscope does not predict (HBONE listening, a credential socket; see not_modelled in -o json).",
			plural(notModelled, "of these workloads", "of these workloads"))
	}
	if n > 0 {
		names := slices.Sorted(maps.Keys(patched))
		out += fmt.Sprintf(" EnvoyFilters patch the clusters of %s in ways meshscope does not apply (%s): their counts may differ from istiod's by those patches.",
			plural(n, "of these workloads", "of these workloads"), strings.Join(names, "; "))
	}
	listenerPatched := map[string]bool{}
	n = 0
	for _, r := range rows {
		if len(r.ListenerEnvoyFilters) > 0 {
			n++
		}
		for _, f := range r.ListenerEnvoyFilters {
			listenerPatched[f] = true
		}
	}
	if n > 0 {
		out += fmt.Sprintf(" EnvoyFilters patch the listeners of %s in ways meshscope does not apply (%s): their listener counts may differ from istiod's by those patches.",
			plural(n, "of these workloads", "of these workloads"), strings.Join(slices.Sorted(maps.Keys(listenerPatched)), "; "))
	}
	var unreached []string
	for _, r := range rows {
		for _, u := range r.UnreachedCalls {
			unreached = append(unreached, r.Namespace+"/"+r.Workload+" to "+u)
		}
	}
	if len(unreached) > 0 {
		if len(unreached) > unreachedListed {
			unreached = append(unreached[:unreachedListed], fmt.Sprintf("and %d more (unreached_calls in -o json)", len(unreached)-unreachedListed))
		}
		out += fmt.Sprintf(" Calls the head tree's Sidecars name that reach their service in the base tree would not through the proxies' listeners and routes: %s.",
			strings.Join(unreached, "; "))
	}
	return out
}

// unreachedListed is how many unreached calls the totals sentence names.
const unreachedListed = 5

// sidecarChangesListed is how many workloads that start or stop running a sidecar the totals
// sentence names.
const sidecarChangesListed = 10

func countSidecarChanges(rows []DiffRow) int {
	n := 0
	for _, r := range rows {
		if r.Sidecar != "" {
			n++
		}
	}
	return n
}

// censusSentences say which workloads of the head tree run no sidecar, and so are not reviewed,
// which proxies meshscope does not model, and which Istio release the proxies are predicted with.
func censusSentences(tree *review.Tree) []string {
	c := tree.Census()
	var out []string
	if l := c.LeftOut(); l.Total() > 0 {
		out = append(out, l.String()+", and are not reviewed: Sidecar resources configure sidecars only.")
	}
	if a := c.AssumedSentence(); a != "" {
		out = append(out, a)
	}
	if v := c.VMSentence(); v != "" {
		out = append(out, v)
	}
	return out
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

// writeDiffTable writes the table; notes are the census's sentences, versions which Istio
// release the changed proxies are predicted with (shown when some change).
func writeDiffTable(w io.Writer, rows []DiffRow, obs *observedReview, notes, versions []string) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No proxy's cluster list changes.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		head := "NAMESPACE\tWORKLOAD\tPROXIES\tBEFORE\tAFTER\tDELTA\tLISTENERS\tROUTES\tVHOSTS\tHOSTS ADDED\tHOSTS REMOVED\tRISK"
		if obs != nil {
			head += "\tOBSERVED CALLS CUT"
		}
		fmt.Fprintln(tw, head)
		for _, r := range rows {
			risk := "-"
			if len(r.Risks) > 0 {
				risk = strings.Join(riskMessages(r.Risks), "; ")
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%s\t%d -> %d\t%d -> %d\t%d -> %d\t%s\t%s\t%s", r.Namespace, r.Workload, r.Proxies, r.Before, r.After, signed(r.Delta),
				r.ListenersBefore, r.ListenersAfter, r.RoutesBefore, r.RoutesAfter, r.VirtualHostsBefore, r.VirtualHostsAfter, hostList(r.AddedHosts, r.AddedHostCount), hostList(r.RemovedHosts, r.RemovedHostCount), risk)
			if obs != nil {
				line += "\t" + cutList(r.ObservedCut, r.ObservedCutCount)
			}
			fmt.Fprintln(tw, line)
		}
		_ = tw.Flush()
		fmt.Fprintf(w, "\n%s\n", totalsSentence(rows))
		notes = append(notes, versions...)
	}
	for _, l := range notes {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	if obs == nil {
		return
	}
	fmt.Fprintf(w, "\n%s\n", obs.summary(rows))
	if len(obs.unchanged) > 0 {
		fmt.Fprintln(w, "\nObserved calls cut today, by workloads whose cluster list does not change:")
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tOBSERVED CALLS CUT")
		for _, r := range obs.unchanged {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Namespace, r.Workload, cutList(r.ObservedCut, r.ObservedCutCount))
		}
		_ = tw.Flush()
	}
}

// summary says in one sentence what the evidence found.
func (o *observedReview) summary(rows []DiffRow) string {
	var newCalls, newWorkloads, oldCalls, oldWorkloads int
	for _, r := range rows {
		if r.ObservedCutNewCount > 0 {
			newCalls += r.ObservedCutNewCount
			newWorkloads++
		}
		if old := r.ObservedCutCount - r.ObservedCutNewCount; old > 0 {
			oldCalls += old
			oldWorkloads++
		}
	}
	for _, r := range o.unchanged {
		oldCalls += r.ObservedCutCount
		oldWorkloads++
	}
	fresh := "this change cuts no observed call"
	if newCalls > 0 {
		fresh = fmt.Sprintf("this change cuts calls to %s from %s", plural(newCalls, "destination", "destinations"), plural(newWorkloads, "workload", "workloads"))
	}
	old := "no observed call is cut today"
	if oldCalls > 0 {
		old = fmt.Sprintf("calls to %s from %s are cut today already", plural(oldCalls, "destination", "destinations"), plural(oldWorkloads, "workload", "workloads"))
	}
	return fmt.Sprintf("Observed calls over %s (%s): %s; %s.", o.window, o.source, fresh, old)
}

// writeDiffMarkdown writes the pull-request comment. With limit > 0 it stays under limit
// characters: a summary, then the largest changes (by |delta|) that fit, then how many workloads
// are left out; the observed calls this change cuts and the risky tightenings come first, as
// they need a reviewer most.
func writeDiffMarkdown(w io.Writer, rows []DiffRow, limit int, obs *observedReview, notes, versions []string) {
	var b strings.Builder
	b.WriteString("### meshscope: predicted Envoy cluster changes\n\n")
	if len(rows) == 0 {
		b.WriteString("No proxy's cluster list changes.\n")
		for _, l := range notes {
			b.WriteString("\n" + l + "\n")
		}
		if obs != nil {
			b.WriteString("\n")
			writeObservedMarkdown(&b, rows, limit, obs)
		}
		_, _ = io.WriteString(w, b.String())
		return
	}
	var risky []string
	for _, r := range rows {
		for _, k := range r.Risks {
			risky = append(risky, fmt.Sprintf("- :warning: `%s/%s` %s\n", r.Namespace, r.Workload, k.Message))
		}
	}
	b.WriteString(totalsSentence(rows) + "\n\n")
	for _, l := range append(notes, versions...) {
		b.WriteString(l + "\n\n")
	}
	if obs != nil {
		writeObservedMarkdown(&b, rows, limit, obs)
		b.WriteString("\n")
	}
	if len(risky) > 0 {
		b.WriteString("**Risky tightenings**\n\n")
		start := b.Len()
		for i, l := range risky {
			if limit > 0 && b.Len()-start+len(l) > limit/4 {
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
	if obs != nil {
		b.WriteString("| Namespace | Workload | Proxies | Before | After | Delta | Listeners | Routes | Virtual hosts | Hosts added | Hosts removed | Observed calls cut |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|\n")
	} else {
		b.WriteString("| Namespace | Workload | Proxies | Before | After | Delta | Listeners | Routes | Virtual hosts | Hosts added | Hosts removed |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	}
	const tailRoom = 200 // for the "N more" line
	for i, r := range order {
		line := fmt.Sprintf("| %s | %s | %s | %d | %d | %s | %d → %d | %d → %d | %d → %d | %s | %s |\n", r.Namespace, r.Workload, r.Proxies, r.Before, r.After, signed(r.Delta),
			r.ListenersBefore, r.ListenersAfter, r.RoutesBefore, r.RoutesAfter, r.VirtualHostsBefore, r.VirtualHostsAfter, mdHosts(r.AddedHosts, r.AddedHostCount), mdHosts(r.RemovedHosts, r.RemovedHostCount))
		if obs != nil {
			line = strings.TrimSuffix(line, "\n") + " " + mdCutCount(r) + " |\n"
		}
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

// mdCutCount is the table cell of a row's cut calls: "3 (2 new)", or "-".
func mdCutCount(r DiffRow) string {
	switch {
	case r.ObservedCutCount == 0:
		return "-"
	case r.ObservedCutNewCount == 0:
		return strconv.Itoa(r.ObservedCutCount)
	}
	return fmt.Sprintf("%d (%d new)", r.ObservedCutCount, r.ObservedCutNewCount)
}

// writeObservedMarkdown writes the evidence's part of the comment: a summary, the calls this
// change cuts, then those cut today already. With limit > 0, each list stays within a share of
// it and says how many it leaves out.
func writeObservedMarkdown(b *strings.Builder, rows []DiffRow, limit int, obs *observedReview) {
	fmt.Fprintf(b, "%s\n", obs.summary(rows))
	var fresh, old []string
	for _, r := range rows {
		for _, c := range r.ObservedCut {
			line := mdCut(r.Namespace, r.Workload, c, obs.window)
			if c.New {
				fresh = append(fresh, "- :x: "+line)
			} else {
				old = append(old, "- :warning: "+line)
			}
		}
		// The calls past the host limit are counted, not listed.
		if more := r.ObservedCutCount - len(r.ObservedCut); more > 0 {
			old = append(old, fmt.Sprintf("- `%s/%s`: %d more (run `diff -o json --host-limit 0` for all)\n", r.Namespace, r.Workload, more))
		}
	}
	for _, r := range obs.unchanged {
		for _, c := range r.ObservedCut {
			old = append(old, "- :warning: "+mdCut(r.Namespace, r.Workload, c, obs.window))
		}
		if more := r.ObservedCutCount - len(r.ObservedCut); more > 0 {
			old = append(old, fmt.Sprintf("- `%s/%s`: %d more (run `diff -o json --host-limit 0` for all)\n", r.Namespace, r.Workload, more))
		}
	}
	list := func(title string, lines []string, budget int) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(b, "\n**%s**\n\n", title)
		start := b.Len()
		for i, l := range lines {
			if budget > 0 && b.Len()-start+len(l) > budget {
				fmt.Fprintf(b, "- ... and %d more\n", len(lines)-i)
				break
			}
			b.WriteString(l)
		}
	}
	list("Observed calls this change cuts", fresh, limit/4)
	list("Observed calls cut today already (declare them, or they pass through or fail)", old, limit/8)
}
