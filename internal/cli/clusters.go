package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

const clustersUsage = `Usage: terraform-provider-meshscope clusters -f PATH [-f PATH ...] (--namespace NS --labels k=v[,k=v] | --pod NS/NAME) [-o table|names|json] [--istio-version V] [--domain-suffix S]
PATH is a file, a directory (its *.yaml and *.yml files, recursively) or - for stdin.
`

func runClusters(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	p, proxy, out, code := parseProxyCommand("clusters", clustersUsage, args, stdin, stderr)
	if code != ExitOK || p == nil {
		return code
	}
	return writeClusters(p, proxy, out, stdout, stderr)
}

// parseProxyCommand parses the flags of a command that predicts one proxy (-f, the proxy, -o
// table|names|json, the predictor's) and resolves the proxy. A nil Predictor with ExitOK means
// -h printed the usage.
func parseProxyCommand(name, usage string, args []string, stdin io.Reader, stderr io.Writer) (*predict.Predictor, predict.Proxy, string, int) {
	fs := newFlagSet(name, usage, stderr)
	tf := addProxyFlags(fs)
	out := fs.String("o", "table", "output: table, names or json")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return nil, predict.Proxy{}, "", code
	}
	if code := checkOutput(*out, stderr, "table", "names", "json"); code != ExitOK {
		return nil, predict.Proxy{}, "", code
	}
	p, proxy, code := tf.resolve(stdin, stderr)
	return p, proxy, *out, code
}

// writeClusters prints the proxy's predicted clusters in the output format.
func writeClusters(p *predict.Predictor, proxy predict.Proxy, out string, stdout, stderr io.Writer) int {
	res := p.Predict(proxy)
	if patches := p.ClusterPatches(proxy); len(patches) > 0 {
		fmt.Fprintf(stderr, "warning: EnvoyFilters patch this proxy's clusters in ways meshscope does not apply (R39): %s. "+
			"istiod's list differs from this one by what they add, remove or change.\n", strings.Join(patches, "; "))
	}
	switch out {
	case "names":
		for _, n := range res.Names() {
			fmt.Fprintln(stdout, n)
		}
	case "json":
		doc := struct {
			SchemaVersion int               `json:"schema_version"`
			Namespace     string            `json:"namespace"`
			Labels        map[string]string `json:"labels"`
			*predict.Result
			CDSCount      int `json:"cds_count"`
			IstioctlCount int `json:"istioctl_count"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, res, len(res.Clusters), len(res.Clusters) + len(res.Bootstrap)}
		return writeJSON(stdout, stderr, doc)
	default:
		writeTable(stdout, res)
	}
	return ExitOK
}

// writeJSON prints doc as indented JSON.
func writeJSON(stdout, stderr io.Writer, doc any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<foo.foo VIP>" reads as written
	if err := enc.Encode(doc); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	return ExitOK
}

// proxyFlags are the flags that name one proxy of an inventory: -f, and --namespace with
// --labels or --pod.
type proxyFlags struct {
	files         stringList
	ns, lbls, pod *string
	pf            predictFlags
}

func addProxyFlags(fs *flag.FlagSet) *proxyFlags {
	f := &proxyFlags{}
	fs.Var(&f.files, "f", "manifest file or directory (repeatable; - reads stdin)")
	f.ns = fs.String("namespace", "", "namespace of the proxy")
	f.lbls = fs.String("labels", "", "pod labels of the proxy, k=v[,k=v]")
	f.pod = fs.String("pod", "", "take namespace and labels from this Pod or workload of the inventory: NS/NAME")
	f.pf = addPredictFlags(fs)
	return f
}

// resolve loads the inventory, indexes it and finds the proxy the flags name, with the notes
// on what is assumed of it.
func (f *proxyFlags) resolve(stdin io.Reader, stderr io.Writer) (*predict.Predictor, predict.Proxy, int) {
	files, ns, lbls, pod := f.files, f.ns, f.lbls, f.pod
	if code := checkFiles(files, stderr, "give at least one manifest file or directory"); code != ExitOK {
		return nil, predict.Proxy{}, code
	}
	if *pod == "" && *ns == "" {
		fmt.Fprintln(stderr, "missing --namespace (or --pod NS/NAME)")
		return nil, predict.Proxy{}, ExitUsage
	}
	if *pod != "" && (*ns != "" || *lbls != "") {
		fmt.Fprintln(stderr, "--pod cannot be combined with --namespace or --labels")
		return nil, predict.Proxy{}, ExitUsage
	}
	inv, prog, code := f.pf.loadInventory(files, stdin, stderr)
	if code != ExitOK {
		return nil, predict.Proxy{}, code
	}
	proxy := predict.Proxy{Namespace: *ns}
	if *pod != "" {
		pns, pname, ok := strings.Cut(*pod, "/")
		if !ok || pns == "" || pname == "" {
			fmt.Fprintf(stderr, "--pod %q is not NAMESPACE/NAME\n", *pod)
			return nil, predict.Proxy{}, ExitUsage
		}
		w := census.Take(inv).Lookup(pns, pname)
		if w == nil {
			fmt.Fprintf(stderr, "error: no Pod or workload %q in the inventory\n", *pod)
			return nil, predict.Proxy{}, ExitError
		}
		if !w.RunsSidecar() {
			fmt.Fprintf(stderr, "error: %s runs no sidecar, so no Sidecar resource configures it: %s (%s)\n", w.Key(), w.Why, w.Reason)
			return nil, predict.Proxy{}, ExitError
		}
		proxy = predict.Proxy{Namespace: pns, Labels: w.Labels, Version: w.Version}
		assumed(stderr, w)
	} else {
		if errs := validation.IsDNS1123Label(*ns); len(errs) > 0 {
			fmt.Fprintf(stderr, "error: namespace %q is invalid: %s\n", *ns, strings.Join(errs, "; "))
			return nil, predict.Proxy{}, ExitError
		}
		if !slices.Contains(inv.NamespaceNames(), *ns) {
			fmt.Fprintf(stderr, "error: namespace %q is not in the inventory.%s Give the manifests of that namespace with -f, or correct the name.\n",
				*ns, didyoumean.DidYouMean(*ns, inv.NamespaceNames()))
			return nil, predict.Proxy{}, ExitError
		}
		l, err := parseLabels(*lbls)
		if err != nil {
			fmt.Fprintf(stderr, "error: --labels: %v\n", err)
			return nil, predict.Proxy{}, ExitUsage
		}
		for k, v := range l {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				fmt.Fprintf(stderr, "error: label key %q is invalid: %s\n", k, strings.Join(errs, "; "))
				return nil, predict.Proxy{}, ExitError
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				fmt.Fprintf(stderr, "error: label value %q is invalid: %s\n", v, strings.Join(errs, "; "))
				return nil, predict.Proxy{}, ExitError
			}
		}
		proxy.Labels = l
		w := census.Pod(inv, *ns, l)
		if !w.RunsSidecar() {
			fmt.Fprintf(stderr, "error: a pod in namespace %s with these labels runs no sidecar, so no Sidecar resource configures it: %s (%s)\n", *ns, w.Why, w.Reason)
			return nil, predict.Proxy{}, ExitError
		}
		proxy.Version = w.Version
		assumed(stderr, w)
	}
	indexStart := time.Now()
	p, err := predict.New(inv, f.pf.options())
	prog.done(indexStart, "indexed the inventory")
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return nil, predict.Proxy{}, ExitUsage
	}
	if proxy.Version != "" && p.VersionFor(proxy) != p.Version() {
		fmt.Fprintf(stderr, "note: predicted with Istio %s rules, the release of the istiod revision that injects this proxy (C12)\n", p.VersionFor(proxy))
	} else if proxy.Version != "" && proxy.Version != p.Version() {
		fmt.Fprintf(stderr, "warning: the istiod revision that injects this proxy runs Istio %s, whose rules meshscope does not model: predicted with %s rules\n", proxy.Version, p.Version())
	}
	return p, proxy, ExitOK
}

// writeTable prints rows the way `istioctl proxy-config cluster` does.
func writeTable(w io.Writer, res *predict.Result) {
	tw := tabwriter.NewWriter(w, 0, 8, 5, ' ', 0)
	fmt.Fprintln(tw, "SERVICE FQDN\tPORT\tSUBSET\tDIRECTION\tTYPE\tDESTINATION RULE")
	for _, c := range res.IstioctlRows() {
		if c.Direction == "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\t\n", c.Name, c.Type)
			continue
		}
		subset := c.Subset
		if subset == "" {
			subset = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.FQDN, strconv.Itoa(c.Port), subset, c.Direction, c.Type, c.DestinationRule)
	}
	_ = tw.Flush()
}

// assumed notes on stderr a proxy counted as a sidecar only because its namespace's labels are
// not in the inventory (C4), and what istiod adds to it that meshscope does not predict (R44, R45).
func assumed(stderr io.Writer, w *census.Workload) {
	if w.Reason == census.AssumedInjected {
		fmt.Fprintf(stderr, "note: %s\n", w.Why)
	}
	for _, n := range w.NotModelled {
		fmt.Fprintf(stderr, "warning: %s\n", n)
	}
}
