package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

const proxyConfigUsage = `Usage: terraform-provider-meshscope proxy-config cluster|listener|route|endpoint|all -f PATH [-f PATH ...] (--namespace NS --labels k=v[,k=v] | --pod NS/NAME) [-o table|names|json] [--istio-version V] [--domain-suffix S]
Predicts one proxy's Envoy configuration as istioctl proxy-config prints it. PATH is a file, a
directory (its *.yaml and *.yml files, recursively) or - for stdin.
  cluster   the CDS clusters, as the clusters command prints them
  listener  the LDS listeners; an address the manifests do not carry (a Service VIP the API server
            assigns, a pod IP) is named in angle brackets, as in <reviews.bookinfo VIP>_9080
  route     the RDS route configurations, -o names as ROUTE<TAB>VHOST (a route without virtual
            hosts as ROUTE alone), -o json with each virtual host's domains
  endpoint  the endpoints of every EDS cluster, -o names as CLUSTER<TAB>ADDRESS:PORT; a replica of a
            workload whose Pods the manifests do not hold is named <reviews-v1.bookinfo pod 1 IP>
  all       all four, each -o names line prefixed by its kind
`

// proxyConfigKinds are the kinds proxy-config predicts, in its output order.
var proxyConfigKinds = []string{"cluster", "listener", "route", "endpoint"}

func runProxyConfig(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fs := newFlagSet("proxy-config", proxyConfigUsage, stderr)
			addProxyFlags(fs)
			fs.String("o", "table", "output: table, names or json")
			fs.Usage()
			return ExitOK
		}
		fmt.Fprintf(stderr, "proxy-config: name what to print first, one of %s or all\n%s", strings.Join(proxyConfigKinds, ", "), proxyConfigUsage)
		return ExitUsage
	}
	kind := strings.TrimSuffix(args[0], "s") // istioctl takes "clusters" and "listeners" too
	if kind != "all" && !slices.Contains(proxyConfigKinds, kind) {
		fmt.Fprintf(stderr, "proxy-config: unknown kind %q: give one of %s or all\n",
			args[0], strings.Join(proxyConfigKinds, ", "))
		return ExitUsage
	}
	p, proxy, out, code := parseProxyCommand("proxy-config "+kind, proxyConfigUsage, args[1:], stdin, stderr)
	if code != ExitOK || p == nil {
		return code
	}
	switch kind {
	case "cluster":
		return writeClusters(p, proxy, out, stdout, stderr)
	case "listener":
		warnListenerPatches(p, proxy, stderr)
		return writeListeners(p.Listeners(proxy), proxy, out, stdout, stderr)
	case "route":
		warnListenerPatches(p, proxy, stderr)
		return writeRoutes(p.Routes(proxy), proxy, out, stdout, stderr)
	case "endpoint":
		res := p.Predict(proxy)
		warnEndpointsUnknown(p, res, stderr)
		return writeEndpoints(p.Endpoints(res), proxy, out, stdout, stderr)
	}
	warnListenerPatches(p, proxy, stderr)
	res := p.Predict(proxy)
	warnEndpointsUnknown(p, res, stderr)
	ls := p.Listeners(proxy)
	rs := p.Routes(proxy)
	eps := p.Endpoints(res)
	switch out {
	case "names":
		for _, n := range res.Names() {
			fmt.Fprintf(stdout, "cluster\t%s\n", n)
		}
		for _, l := range ls {
			fmt.Fprintf(stdout, "listener\t%s\n", l.Name)
		}
		for _, line := range routeNames(rs) {
			fmt.Fprintf(stdout, "route\t%s\n", line)
		}
		for _, e := range eps {
			fmt.Fprintf(stdout, "endpoint\t%s\t%s\n", e.Cluster, endpointAddress(e))
		}
		return ExitOK
	case "json":
		doc := struct {
			SchemaVersion int                `json:"schema_version"`
			Namespace     string             `json:"namespace"`
			Labels        map[string]string  `json:"labels"`
			Sidecar       string             `json:"sidecar"`
			Clusters      []predict.Cluster  `json:"clusters"`
			Listeners     []predict.Listener `json:"listeners"`
			Routes        []predict.Route    `json:"routes"`
			Endpoints     []predict.Endpoint `json:"endpoints"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, res.Sidecar, res.Clusters, ls, rs, eps}
		return writeJSON(stdout, stderr, doc)
	}
	writeTable(stdout, res)
	fmt.Fprintln(stdout)
	writeListenerTable(stdout, ls)
	fmt.Fprintln(stdout)
	writeRouteTable(stdout, rs)
	fmt.Fprintln(stdout)
	writeEndpointTable(stdout, eps)
	return ExitOK
}

// routeNames are the -o names lines of routes: ROUTE<TAB>VHOST, or ROUTE alone for a route
// without virtual hosts, sorted.
func routeNames(rs []predict.Route) []string {
	var out []string
	for _, r := range rs {
		if len(r.VirtualHosts) == 0 {
			out = append(out, r.Name)
		}
		for _, vh := range r.VirtualHosts {
			out = append(out, r.Name+"\t"+vh.Name)
		}
	}
	slices.Sort(out)
	return out
}

// writeRoutes prints the proxy's predicted route configurations in the output format.
func writeRoutes(rs []predict.Route, proxy predict.Proxy, out string, stdout, stderr io.Writer) int {
	unknown := 0
	for _, r := range rs {
		for _, vh := range r.VirtualHosts {
			if slices.ContainsFunc(vh.Domains, func(d string) bool { return strings.HasPrefix(d, "<") }) {
				unknown++
			}
		}
	}
	if unknown > 0 {
		fmt.Fprintf(stderr, "note: %d virtual hosts match a service address the manifests do not carry, named in angle brackets; "+
			"give the inventory as the cluster holds it (Services with spec.clusterIP) for their real domains\n", unknown)
	}
	switch out {
	case "names":
		for _, line := range routeNames(rs) {
			fmt.Fprintln(stdout, line)
		}
	case "json":
		vhosts := 0
		for _, r := range rs {
			vhosts += len(r.VirtualHosts)
		}
		doc := struct {
			SchemaVersion    int               `json:"schema_version"`
			Namespace        string            `json:"namespace"`
			Labels           map[string]string `json:"labels"`
			Routes           []predict.Route   `json:"routes"`
			RDSCount         int               `json:"rds_count"`
			VirtualHostCount int               `json:"virtual_host_count"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, rs, len(rs), vhosts}
		return writeJSON(stdout, stderr, doc)
	default:
		writeRouteTable(stdout, rs)
	}
	return ExitOK
}

// tableDomains is how many of a virtual host's domains a table row names (-o json lists all).
const tableDomains = 3

// writeRouteTable prints one row per virtual host, with the columns of `istioctl proxy-config
// route` that meshscope predicts.
func writeRouteTable(w io.Writer, rs []predict.Route) {
	tw := tabwriter.NewWriter(w, 0, 8, 5, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVHOST NAME\tDOMAINS")
	for _, r := range rs {
		if len(r.VirtualHosts) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\n", r.Name)
		}
		for _, vh := range r.VirtualHosts {
			ds := strings.Join(vh.Domains, ", ")
			if n := len(vh.Domains); n > tableDomains {
				ds = fmt.Sprintf("%s + %d more...", strings.Join(vh.Domains[:tableDomains], ", "), n-tableDomains)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, vh.Name, ds)
		}
	}
	_ = tw.Flush()
}

// endpointAddress is ADDRESS:PORT.
func endpointAddress(e predict.Endpoint) string { return e.Address + ":" + strconv.Itoa(e.Port) }

// writeEndpoints prints the proxy's predicted endpoints in the output format.
func writeEndpoints(eps []predict.Endpoint, proxy predict.Proxy, out string, stdout, stderr io.Writer) int {
	unknown := 0
	for _, e := range eps {
		if !e.AddressKnown {
			unknown++
		}
	}
	if unknown > 0 {
		fmt.Fprintf(stderr, "note: %d endpoints are replicas of workloads whose Pods the manifests do not hold, named in angle "+
			"brackets: their count is known, their addresses are not; give the inventory as the cluster holds it (its Pods) for them\n", unknown)
	}
	switch out {
	case "names":
		for _, e := range eps {
			fmt.Fprintf(stdout, "%s\t%s\n", e.Cluster, endpointAddress(e))
		}
	case "json":
		doc := struct {
			SchemaVersion int                `json:"schema_version"`
			Namespace     string             `json:"namespace"`
			Labels        map[string]string  `json:"labels"`
			Endpoints     []predict.Endpoint `json:"endpoints"`
			EDSCount      int                `json:"eds_count"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, eps, len(eps)}
		return writeJSON(stdout, stderr, doc)
	default:
		writeEndpointTable(stdout, eps)
	}
	return ExitOK
}

// writeEndpointTable prints the endpoints with the columns of `istioctl proxy-config endpoint`
// that meshscope predicts.
func writeEndpointTable(w io.Writer, eps []predict.Endpoint) {
	tw := tabwriter.NewWriter(w, 0, 8, 5, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tSTATUS\tCLUSTER")
	for _, e := range eps {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", endpointAddress(e), e.Health, e.Cluster)
	}
	_ = tw.Flush()
}

// warnListenerPatches names on stderr the EnvoyFilters that can add, remove or rename the
// proxy's listeners, which the prediction leaves out (R56).
func warnListenerPatches(p *predict.Predictor, proxy predict.Proxy, stderr io.Writer) {
	if patches := p.ListenerPatches(proxy); len(patches) > 0 {
		fmt.Fprintf(stderr, "warning: EnvoyFilters patch this proxy's listeners in ways meshscope does not apply (R56): %s. "+
			"istiod's list differs from this one by what they add, remove or rename.\n", strings.Join(patches, "; "))
	}
}

// warnEndpointsUnknown names on stderr the services whose endpoints the inventory does not hold
// (R57): Kubernetes Services without a selector and without an EndpointSlice in the files.
func warnEndpointsUnknown(p *predict.Predictor, res *predict.Result, stderr io.Writer) {
	if hosts := p.EndpointsUnknown(res); len(hosts) > 0 {
		fmt.Fprintf(stderr, "warning: %s: Kubernetes Services without a selector, for which the files hold no "+
			"EndpointSlice (R57): their endpoints are not listed. Add their EndpointSlices to the -f files "+
			"(kubectl get endpointslices -A -o yaml lists a cluster's).\n", strings.Join(hosts, ", "))
	}
}

// writeListeners prints the proxy's predicted listeners in the output format.
func writeListeners(ls []predict.Listener, proxy predict.Proxy, out string, stdout, stderr io.Writer) int {
	unknown := 0
	for _, l := range ls {
		if !l.AddressKnown {
			unknown++
		}
	}
	if unknown > 0 {
		fmt.Fprintf(stderr, "note: %d listeners are bound to an address the manifests do not carry, named in angle brackets; "+
			"give the inventory as the cluster holds it (Services with spec.clusterIP, Pods with status.podIP) for their real names\n", unknown)
	}
	switch out {
	case "names":
		for _, l := range ls {
			fmt.Fprintln(stdout, l.Name)
		}
	case "json":
		doc := struct {
			SchemaVersion int                `json:"schema_version"`
			Namespace     string             `json:"namespace"`
			Labels        map[string]string  `json:"labels"`
			Listeners     []predict.Listener `json:"listeners"`
			LDSCount      int                `json:"lds_count"`
		}{JSONSchemaVersion, proxy.Namespace, proxy.Labels, ls, len(ls)}
		return writeJSON(stdout, stderr, doc)
	default:
		writeListenerTable(stdout, ls)
	}
	return ExitOK
}

// tableServices is how many of a listener's services a table row names: thousands of HTTP
// services can share 0.0.0.0_80 (-o json lists them all).
const tableServices = 3

// writeListenerTable prints one row per listener, with the address and port columns of
// `istioctl proxy-config listener`.
func writeListenerTable(w io.Writer, ls []predict.Listener) {
	tw := tabwriter.NewWriter(w, 0, 8, 5, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESSES\tPORT\tDIRECTION\tPROTOCOL\tSERVICES")
	for _, l := range ls {
		dir := l.Direction
		if dir == "" {
			dir = "-"
		}
		svcs := "-"
		switch n := len(l.Services); {
		case n > tableServices:
			svcs = fmt.Sprintf("%s (+%d more)", strings.Join(l.Services[:tableServices], ","), n-tableServices)
		case n > 0:
			svcs = strings.Join(l.Services, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Address, strconv.Itoa(l.Port), dir, l.Protocol, svcs)
	}
	_ = tw.Flush()
}
