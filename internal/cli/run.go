// Package cli is the meshscope command line, served by the provider binary:
// `terraform-provider-meshscope clusters|render|diff ...`.
package cli

import (
	"fmt"
	"io"
	"strings"
)

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

Run 'terraform-provider-meshscope <command> -h' for the flags of a command.
Run without arguments, the binary serves the Terraform provider.
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return ExitUsage
	}
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
