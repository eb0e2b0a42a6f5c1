// Package cli is the meshscope command line, served by the provider binary:
// `terraform-provider-meshscope clusters|diff|render|suggest|query ...`.
package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1 // bad input
	ExitUsage   = 2 // bad usage
	ExitChanged = 3 // diff found changes / render --check found drift
)

// A command is one verb of the command line.
type command struct {
	name    string
	aliases []string // other spellings that run it: "--help" for help
	summary string   // its line in the usage
	flags   bool     // it has flags of its own, which help lists from its -h
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands is the one list of the command line's verbs: Run dispatches on it, the usage and
// help list it, and IsCommand tells main which arguments run it. version is what the version
// command prints.
func commands(version string) []command {
	return []command{
		{name: "clusters", summary: "predict the Envoy CDS clusters istiod pushes to one sidecar proxy", flags: true, run: runClusters},
		{name: "proxy-config", summary: "predict one sidecar proxy's clusters, listeners and endpoints, as istioctl proxy-config prints them", flags: true, run: runProxyConfig},
		{name: "trace", summary: "follow calls from one sidecar proxy through its predicted listeners and routes to the cluster they reach", flags: true, run: runTrace},
		{name: "diff", summary: "compare every proxy's predicted clusters between two manifest trees", flags: true, run: runDiff},
		{name: "render", summary: "write Sidecars as a kustomize base and overlays (and Argo CD Applications) for GitOps", flags: true, run: runRender},
		{name: "suggest", summary: "write a meshscope_workload_scope per calling workload, from the calls Prometheus observed", flags: true, run: runSuggest},
		{name: "query", summary: "print the PromQL meshscope issues and the command that writes a snapshot of its answer", flags: true, run: runQuery},
		{name: "version", aliases: []string{"--version", "-version"}, summary: "print the version",
			run: func(_ []string, _ io.Reader, stdout, _ io.Writer) int {
				fmt.Fprintf(stdout, "terraform-provider-meshscope %s\n", version)
				return ExitOK
			}},
		{name: "help", aliases: []string{"-h", "-help", "--help"}, summary: "print this help, with every command's flags",
			run: func(_ []string, _ io.Reader, stdout, _ io.Writer) int {
				help(stdout)
				return ExitOK
			}},
	}
}

// lookup finds the command that arg names, by name or alias.
func lookup(cmds []command, arg string) (command, bool) {
	for _, c := range cmds {
		if c.name == arg || slices.Contains(c.aliases, arg) {
			return c, true
		}
	}
	return command{}, false
}

// IsCommand reports whether arg names a command of the command line (or its help or version);
// given anything else, the binary serves the Terraform provider.
func IsCommand(arg string) bool {
	_, ok := lookup(commands(""), arg)
	return ok
}

// usage is the synopsis of the command line, with a line per command.
func usage() string {
	var b strings.Builder
	b.WriteString("Usage: terraform-provider-meshscope <command> [flags]\n\nCommands:\n")
	for _, c := range commands("") {
		fmt.Fprintf(&b, "  %-13s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Run 'terraform-provider-meshscope <command> -h' for the flags of a command.
Run without arguments, the binary serves the Terraform provider (-debug: for a debugger such as delve).
`)
	return b.String()
}

// help prints the usage, then each command's own -h, so that the help never drifts from the flags.
func help(stdout io.Writer) {
	fmt.Fprint(stdout, usage())
	for _, c := range commands("") {
		if !c.flags {
			continue
		}
		var b bytes.Buffer
		c.run([]string{"-h"}, nil, io.Discard, &b)
		fmt.Fprintf(stdout, "\n%s:\n%s", c.name, b.String())
	}
}

// Run runs one command of the command line and returns its exit status; version is the
// provider's version, which the version command prints.
func Run(version string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return ExitUsage
	}
	c, ok := lookup(commands(version), args[0])
	if !ok {
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage())
		return ExitUsage
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

// checkDomainSuffix validates --domain-suffix as the provider validates domain_suffix.
func checkDomainSuffix(s string, stderr io.Writer) int {
	if err := istioconfig.ValidateDNSName(s); err != nil {
		fmt.Fprintf(stderr, "--domain-suffix %q is not a DNS name, such as cluster.local: %v\n", s, err)
		return ExitUsage
	}
	return ExitOK
}

// checkIstioVersion validates --istio-version as the provider validates istio_version, and warns
// on stderr when the release is newer than the newest modelled.
func checkIstioVersion(s string, stderr io.Writer) int {
	v, err := istioconfig.ParseVersion(s)
	if err != nil {
		fmt.Fprintf(stderr, "error: --istio-version: %v\n", err)
		return ExitUsage
	}
	if !v.Modelled() {
		fmt.Fprintf(stderr, "warning: Istio %s is newer than the newest release meshscope models: predicted with %s rules\n", v, istioconfig.Newest)
	}
	return ExitOK
}

// progress reports, on stderr, the steps that take longer than after, so that a command over a
// large mesh is not silent for long; --quiet turns it off.
type progress struct {
	w     io.Writer
	quiet bool
	after time.Duration
}

// progressAfter is how long a step runs before the command line reports it.
const progressAfter = 2 * time.Second

func newProgress(stderr io.Writer, quiet bool) progress {
	return progress{w: stderr, quiet: quiet, after: progressAfter}
}

// done reports a step that started at start, when it took long enough: "meshscope: <what> in 3.1s".
func (p progress) done(start time.Time, format string, a ...any) {
	d := time.Since(start)
	if p.quiet || d < p.after {
		return
	}
	fmt.Fprintf(p.w, "meshscope: %s in %s\n", fmt.Sprintf(format, a...), d.Round(100*time.Millisecond))
}

// loadInventory reads the manifests of paths, refusing an inventory with nothing meshscope reads.
// prefix goes before the error message ("base: ").
func loadInventory(paths []string, stdin io.Reader, stderr io.Writer, prefix string, prog progress) (*mesh.Inventory, int) {
	start := time.Now()
	inv := mesh.New()
	defer func() {
		prog.done(start, "%sloaded %d objects from %s", prefix, inv.ObjectCount(), strings.Join(paths, ", "))
	}()
	if err := inv.LoadPaths(paths, stdin); err != nil {
		fmt.Fprintf(stderr, "error: %s%v\n", prefix, err)
		return nil, ExitError
	}
	if inv.Empty() {
		fmt.Fprintf(stderr, "error: %s%s:%s\n", prefix, strings.Join(paths, ", "), mesh.EmptyHint)
		return nil, ExitError
	}
	return inv, ExitOK
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// parseLabels parses "k=v,k2=v2".
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
