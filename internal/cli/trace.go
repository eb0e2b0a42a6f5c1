package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

const traceUsage = `Usage: terraform-provider-meshscope trace -f PATH [-f PATH ...] (--namespace NS --labels k=v[,k=v] | --pod NS/NAME) [--call HOST[:PORT] ...] [-o table|json] [--istio-version V] [--domain-suffix S]
Follows calls from one proxy through its predicted listeners, routes and virtual hosts to the
cluster they reach, as Envoy would (R62). HOST is a Kubernetes Service's FQDN or a ServiceEntry
host; without a port, every port of the host. Without --call, the calls the proxy's Sidecar names
one by one (the exact hosts of its egress listeners). An HTTP call is followed by the FQDN and by
every shorter name the cluster's DNS resolves for it in the proxy's namespace. The exit status is
3 when a call does not reach its service.
`

func runTrace(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("trace", traceUsage, stderr)
	tf := addProxyFlags(fs)
	var calls stringList
	fs.Var(&calls, "call", "a call to follow, HOST or HOST:PORT (repeatable)")
	out := fs.String("o", "table", "output: table or json")
	if code, ok := parseFlagsOnly(fs, args, stderr); !ok {
		return code
	}
	if code := checkOutput(*out, stderr, "table", "json"); code != ExitOK {
		return code
	}
	hps := make([]predict.HostPort, 0, len(calls))
	for _, c := range calls {
		hp, err := parseCall(c)
		if err != nil {
			fmt.Fprintf(stderr, "trace: --call %q: %v\n", c, err)
			return ExitUsage
		}
		hps = append(hps, hp)
	}
	p, proxy, code := tf.resolve(stdin, stderr)
	if code != ExitOK || p == nil {
		return code
	}
	if len(hps) == 0 {
		hps = p.SidecarCalls(proxy)
		if len(hps) == 0 {
			fmt.Fprintf(stderr, "trace: no Sidecar in effect for this proxy names a host to call: name the calls with --call HOST[:PORT]\n")
			return ExitUsage
		}
	}
	warnListenerPatches(p, proxy, stderr)
	traced := p.Trace(proxy, hps)
	unreached := 0
	for _, c := range traced {
		if !c.Reached {
			unreached++
		}
	}
	if *out == "json" {
		doc := struct {
			SchemaVersion  int               `json:"schema_version"`
			Namespace      string            `json:"namespace"`
			Labels         map[string]string `json:"labels"`
			Calls          []predict.Call    `json:"calls"`
			UnreachedCount int               `json:"unreached_count"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, traced, unreached}
		if code := writeJSON(stdout, stderr, doc); code != ExitOK {
			return code
		}
	} else {
		writeTraceTable(stdout, traced)
	}
	if unreached > 0 {
		return ExitChanged
	}
	return ExitOK
}

// parseCall reads HOST or HOST:PORT.
func parseCall(s string) (predict.HostPort, error) {
	host, port, found := strings.Cut(s, ":")
	if host == "" || strings.ContainsAny(host, "/ ") {
		return predict.HostPort{}, fmt.Errorf("give a service host, as in reviews.bookinfo.svc.cluster.local:9080")
	}
	if !found {
		return predict.HostPort{Host: strings.ToLower(host)}, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return predict.HostPort{}, fmt.Errorf("the port %q is not a number from 1 to 65535", port)
	}
	return predict.HostPort{Host: strings.ToLower(host), Port: n}, nil
}

func writeTraceTable(w io.Writer, calls []predict.Call) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "CALL\tLISTENER\tROUTE\tVIRTUAL HOST\tCLUSTER\tRESULT")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, c := range calls {
		cluster := c.Cluster
		if cluster == "" && c.VirtualService != "" {
			cluster = "by VirtualService " + c.VirtualService
		}
		result := "reached"
		if !c.Reached {
			result = "astray at the " + c.Step + " step: " + c.Why
		}
		fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\t%s\t%s\n", c.Host, c.Port, dash(c.Listener), dash(c.Route), dash(c.VirtualHost), dash(cluster), result)
	}
	_ = tw.Flush()
}
