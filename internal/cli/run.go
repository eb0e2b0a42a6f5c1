// Package cli is the meshscope command line, served by the provider binary:
// `terraform-provider-meshscope clusters|diff|render|suggest|query ...`.
package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Version is the provider's version, set by main.
var Version = "dev"

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1 // bad input
	ExitUsage   = 2 // bad usage
	ExitChanged = 3 // diff found changes / render --check found drift
)

const usage = `Usage: terraform-provider-meshscope <command> [flags]

Commands:
  clusters   predict the Envoy CDS clusters istiod pushes to one sidecar proxy
  diff       compare every proxy's predicted clusters between two manifest trees
  render     write Sidecars as a kustomize base and overlays (and Argo CD Applications) for GitOps
  suggest    write a meshscope_workload_scope per calling workload, from the calls Prometheus observed
  query      print the PromQL meshscope issues and the command that writes a snapshot of its answer
  version    print the version
  help       print this help, with every command's flags

Run 'terraform-provider-meshscope <command> -h' for the flags of a command.
Run without arguments, the binary serves the Terraform provider (-debug: for a debugger such as delve).
`

// Run runs one command and returns its exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "clusters":
		return runClusters(args[1:], stdin, stdout, stderr)
	case "diff":
		return runDiff(args[1:], stdin, stdout, stderr)
	case "render":
		return runRender(args[1:], stdin, stdout, stderr)
	case "suggest":
		return runSuggest(args[1:], stdin, stdout, stderr)
	case "query":
		return runQuery(args[1:], stdin, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "terraform-provider-meshscope %s\n", Version)
		return ExitOK
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		// Each command's own -h, so that the help never drifts from the flags.
		for _, cmd := range []struct {
			name string
			run  func([]string, io.Reader, io.Writer, io.Writer) int
		}{{"clusters", runClusters}, {"diff", runDiff}, {"render", runRender}, {"suggest", runSuggest}, {"query", runQuery}} {
			var b bytes.Buffer
			cmd.run([]string{"-h"}, nil, io.Discard, &b)
			fmt.Fprintf(stdout, "\n%s:\n%s", cmd.name, b.String())
		}
		return ExitOK
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return ExitUsage
	}
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
