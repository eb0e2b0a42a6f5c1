package cli

import (
	"fmt"
	"io"

	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

const queryUsage = `Usage: terraform-provider-meshscope query [--window W]

Prints the one PromQL instant query meshscope evaluates for observed traffic (suggest, diff and
the provider's prometheus block), and the one command that writes its answer to a snapshot file
for --observed (and the provider's observed_traffic_file), so that GitOps CI and air-gapped
plans work from a file. The answer labels itself with its window; a snapshot is read as the
window it was written for.
`

func runQuery(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("query", queryUsage+"\nFlags:\n", stderr)
	window := fs.String("window", traffic.DefaultWindow, "how far back the query looks, a Prometheus duration (7d, 36h)")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if _, err := traffic.ParseWindow(*window); err != nil {
		fmt.Fprintf(stderr, "--window: %v\n", err)
		return ExitUsage
	}
	fmt.Fprintf(stdout, "# The PromQL instant query meshscope evaluates, over the window %s:\n%s\n\n", *window, traffic.Query(*window))
	fmt.Fprintf(stdout, "# The command that writes the snapshot file observed.json, with PROM set to the Prometheus URL\n"+
		"# (e.g. PROM=http://prometheus.istio-system:9090; add -H \"Authorization: Bearer $TOKEN\" when it asks for a token):\n%s\n",
		traffic.SnapshotCommand(*window))
	return ExitOK
}
