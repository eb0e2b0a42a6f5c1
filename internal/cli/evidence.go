package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/didyoumean"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// TokenEnv is the environment variable the Prometheus bearer token is read from when
// --bearer-token-env names no other. A token is never given on the command line, where
// ps and shell histories would keep it.
const TokenEnv = traffic.TokenEnv

// evidenceFlags say where the observed traffic comes from: a live Prometheus (--prometheus
// and its client flags) or a snapshot file of its answer (--observed).
type evidenceFlags struct {
	fs         *flag.FlagSet
	prometheus string
	observed   string
	window     string
	tokenEnv   string
	headers    stringList
	caFile     string
	insecure   bool
	timeout    time.Duration
}

// clientFlags are the flags that apply to --prometheus only.
var clientFlags = []string{"bearer-token-env", "header", "ca-certificate", "insecure", "timeout"}

// addEvidenceFlags registers the evidence flags on fs. what says what the evidence is for,
// in the flags' help.
func addEvidenceFlags(fs *flag.FlagSet, what string) *evidenceFlags {
	e := &evidenceFlags{fs: fs}
	fs.StringVar(&e.prometheus, "prometheus", "", "URL of the Prometheus that holds Istio's metrics ("+what+"), e.g. http://prometheus.istio-system:9090")
	fs.StringVar(&e.observed, "observed", "", "snapshot file of Prometheus's answer to meshscope's query ("+what+"; the query command prints how to write it)")
	fs.StringVar(&e.window, "window", traffic.DefaultWindow, "how far back to look, a Prometheus duration (7d, 36h); --observed reads the file's own window, and a different --window is an error")
	fs.StringVar(&e.tokenEnv, "bearer-token-env", "", "--prometheus: the environment variable holding a bearer token (default "+TokenEnv+" when set)")
	fs.Var(&e.headers, "header", "--prometheus: an HTTP header to send, NAME=VALUE (repeatable), e.g. a tenant header")
	fs.StringVar(&e.caFile, "ca-certificate", "", "--prometheus: PEM file of the CA to trust besides the system's")
	fs.BoolVar(&e.insecure, "insecure", false, "--prometheus: do not verify the server's certificate (test servers only)")
	fs.DurationVar(&e.timeout, "timeout", traffic.DefaultTimeout, "--prometheus: the longest the query may take")
	return e
}

// given reports whether a source of evidence was given.
func (e *evidenceFlags) given() bool { return e.prometheus != "" || e.observed != "" }

// set reports whether the flag was given on the command line.
func (e *evidenceFlags) set(name string) bool {
	found := false
	e.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// source is the Source the flags describe; ca is the PEM of --ca-certificate, once read.
// A --header that does not parse is left out: check reports it.
func (e *evidenceFlags) source(ca string) traffic.Source {
	src := traffic.Source{File: e.observed, TokenEnv: e.tokenEnv}
	if e.prometheus != "" || e.set("window") { // --observed reads the file's own window
		src.Window = e.window
	}
	if e.prometheus != "" {
		src.Prometheus = &traffic.Prometheus{URL: e.prometheus, Insecure: e.insecure, Timeout: e.timeout, CACertificate: ca}
		for _, h := range e.headers {
			if name, value, err := parseHeader(h); err == nil {
				if src.Prometheus.Headers == nil {
					src.Prometheus.Headers = map[string]string{}
				}
				src.Prometheus.Headers[name] = value
			}
		}
	}
	return src
}

// check validates the flags once parsed; required says that one source must be given. A
// fault in how the flags are written is a usage error; the rest (a URL or a CA the client
// refuses, an unset token variable) is reported when the evidence is read.
func (e *evidenceFlags) check(required bool, stderr io.Writer) int {
	if !e.given() {
		if required {
			fmt.Fprintln(stderr, "missing the observed traffic: give --prometheus URL (a live Prometheus) or --observed FILE (a snapshot; `terraform-provider-meshscope query` prints how to write one)")
			return ExitUsage
		}
		for _, name := range append([]string{"window"}, clientFlags...) {
			if e.set(name) {
				fmt.Fprintf(stderr, "--%s applies to observed traffic: give --prometheus URL or --observed FILE too\n", name)
				return ExitUsage
			}
		}
		return ExitOK
	}
	for _, f := range e.source("").Check() {
		switch {
		case f.Setting == traffic.SettingSource, f.Setting == traffic.SettingWindow, f.Setting == traffic.SettingTimeout,
			f.Setting == traffic.SettingHeaders, f.Code == traffic.CodeURLCredentials:
			fmt.Fprintln(stderr, faultMessage(f))
			return ExitUsage
		}
	}
	if e.observed != "" {
		for _, name := range clientFlags {
			if e.set(name) {
				fmt.Fprintf(stderr, "--%s applies to --prometheus only; --observed reads a file\n", name)
				return ExitUsage
			}
		}
		return ExitOK
	}
	if e.set("bearer-token-env") && strings.TrimSpace(e.tokenEnv) == "" {
		fmt.Fprintln(stderr, "--bearer-token-env: give the name of an environment variable, such as "+TokenEnv)
		return ExitUsage
	}
	for _, h := range e.headers {
		if _, _, err := parseHeader(h); err != nil {
			fmt.Fprintf(stderr, "--header: %v\n", err)
			return ExitUsage
		}
	}
	return ExitOK
}

// parseHeader splits NAME=VALUE, and refuses a credential on the command line. The value is
// never quoted back: it may be a secret. Check refuses names and values HTTP does not allow.
func parseHeader(h string) (string, string, error) {
	name, value, ok := strings.Cut(h, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", fmt.Errorf("a header is NAME=VALUE, such as X-Scope-OrgID=mesh; %q has no '='", strings.SplitN(h, "=", 2)[0])
	}
	if strings.EqualFold(name, "Authorization") {
		return "", "", fmt.Errorf("the Authorization header would put a credential on the command line: put the token in an environment variable and name it with --bearer-token-env (or set %s)", TokenEnv)
	}
	return name, value, nil
}

// evidence reads the evidence of the flags' source and maps it onto the inventory
// (traffic.Load): an answer without a single Istio series is an error, not "no traffic".
func (e *evidenceFlags) evidence(inv *mesh.Inventory, domain string, prog progress, stderr io.Writer) (*traffic.Evidence, int) {
	start := time.Now()
	var ca []byte
	if e.prometheus != "" && e.caFile != "" {
		var err error
		if ca, err = os.ReadFile(e.caFile); err != nil {
			fmt.Fprintf(stderr, "error: --ca-certificate: %v\n", err)
			return nil, ExitError
		}
	}
	ev, err := traffic.Load(context.Background(), e.source(string(ca)), inv, domain)
	if err != nil {
		fmt.Fprintf(stderr, "error: %s\n", evidenceError(err))
		return nil, ExitError
	}
	prog.done(start, "read %d series from %s", ev.Series, ev.Source)
	return ev, ExitOK
}

// evidenceError words a fault of reading the evidence with the flag that mends it.
func evidenceError(err error) string {
	var f *traffic.Fault
	if !errors.As(err, &f) {
		return err.Error()
	}
	return faultMessage(f)
}

// faultMessage words a fault with the flag at fault and what mends it.
func faultMessage(f *traffic.Fault) string {
	msg := f.Error()
	switch f.Code {
	case traffic.CodeTwoSources:
		return "give one source of observed traffic: --prometheus URL or --observed FILE, not both"
	case traffic.CodeURLCredentials:
		return fmt.Sprintf("--prometheus %s: the URL carries credentials, which would sit in shell histories and ps: "+
			"give a bearer token in an environment variable named by --bearer-token-env (or in %s) instead", f.Where, TokenEnv)
	case traffic.CodeInvalidWindow:
		return "--window: " + msg
	case traffic.CodeInvalidTimeout:
		return fmt.Sprintf("--timeout %s: give a duration longer than zero, such as 30s", f.Value)
	case traffic.CodeInvalidHeader:
		return "--header: " + msg
	case traffic.CodeTokenUnset:
		return fmt.Sprintf("--bearer-token-env %s: the environment variable %s is unset or empty; export the token in it", f.Value, f.Value)
	case traffic.CodeInvalidCA:
		return "--ca-certificate: the file holds no PEM certificate (it must begin with -----BEGIN CERTIFICATE-----)"
	case traffic.CodeMissingURL, traffic.CodeInvalidURL, traffic.CodeConfig:
		return "--prometheus: " + msg
	case traffic.CodeEmptyFile, traffic.CodeNoSource:
		return "--observed: " + msg
	case traffic.CodeWindowMismatch:
		return fmt.Sprintf("--window %s, but %s holds the calls of the window %s: leave out --window (the file's window is used), "+
			"or write a snapshot over %s with the command `terraform-provider-meshscope query --window %s` prints",
			f.Value, f.Where, f.Window, f.Value, f.Value)
	case traffic.CodeEmpty:
		window := "the window of the query that wrote it (an answer without series does not say which)"
		if f.Window != "" {
			window = "the window " + f.Window
		}
		return fmt.Sprintf("%s: Prometheus held no Istio series (%s, %s) in %s. "+
			"That is no evidence, not \"no traffic\": check that Prometheus scrapes the sidecars, that its retention covers the window "+
			"(Istio's sample Prometheus keeps 6 hours), and that the window is right.", f.Where, traffic.RequestsMetric, traffic.TCPConnectionsMetric, window)
	case traffic.CodeUnreachable:
		return msg + ". Check the --prometheus URL, and that the server is reachable from here (a port-forward, a proxy in HTTPS_PROXY)"
	case traffic.CodeTimeout:
		return msg + ". Raise --timeout, or shorten --window"
	case traffic.CodeUnauthorized:
		return msg + ". Give a bearer token in an environment variable named by --bearer-token-env (or in " + TokenEnv + "), or the header the server expects with --header"
	case traffic.CodeTLS:
		return msg + ". Trust the server's CA with --ca-certificate FILE (or, for a test server only, --insecure)"
	}
	return msg // CodeFile and CodeQuery name the file or the server
}

// checkNamespaces validates --namespace filters against the inventory.
func checkNamespaces(names []string, inv *mesh.Inventory, stderr io.Writer) int {
	known := inv.NamespaceNames()
	for _, ns := range names {
		if !slices.Contains(known, ns) {
			fmt.Fprintf(stderr, "error: --namespace %q is not a namespace of the inventory.%s Give the manifests of that namespace with -f, or correct the name.\n",
				ns, didyoumean.DidYouMean(ns, known))
			return ExitError
		}
	}
	return ExitOK
}

// reportUnknown says on stderr what the evidence holds that the inventory does not
// (traffic's Unknowns): callers it does not hold, callers Istio could not name, and hosts it
// does not hold. keep filters namespaces (nil: all).
func reportUnknown(ev *traffic.Evidence, keep func(ns string) bool, stderr io.Writer) {
	if facts := ev.ShortFacts(); facts != "" {
		fix := "shorten --window to the span it holds"
		if ev.Coverage.Covered != 0 {
			fix = "give --window " + ev.Coverage.Covered.String() + " or less"
		}
		fmt.Fprintf(stderr, "warning: %s. Counts are labelled with that span; %s, or query a server that keeps the window (Thanos, Mimir)\n", facts, fix)
	}
	r := ev.Unknowns(keep)
	if r.CallerCount > 0 {
		fmt.Fprintf(stderr, "warning: %s not in the inventory; their calls are left out. Give their manifests with -f:\n", plural(r.CallerCount, "calling workload is", "calling workloads are"))
		for _, u := range r.Callers {
			fmt.Fprintf(stderr, "  %s/%s: %s over %s (%s)\n", u.Namespace, u.Workload, u.Amount(), ev.Span(), plural(u.Series, "series", "series"))
		}
		andMore(stderr, r.CallerCount-len(r.Callers))
	}
	if r.Unattributed > 0 {
		fmt.Fprintf(stderr, "warning: %s a caller Istio could not name (source_workload=\"unknown\": a client without a sidecar, or outside the mesh); left out\n", plural(r.Unattributed, "series has", "series have"))
	}
	if r.HostCount > 0 {
		fmt.Fprintf(stderr, "warning: calls go to %s the inventory does not hold (its manifests are likely incomplete); left out. Give their manifests with -f:\n", plural(r.HostCount, "host", "hosts"))
		for _, h := range r.Hosts {
			fmt.Fprintf(stderr, "  %s: %s over %s from %s\n", h.Host, h.Amount(), ev.Span(), plural(h.Workloads, "workload", "workloads"))
		}
		andMore(stderr, r.HostCount-len(r.Hosts))
	}
}

// andMore ends a capped list of the report.
func andMore(stderr io.Writer, n int) {
	if n > 0 {
		fmt.Fprintf(stderr, "  ... and %d more\n", n)
	}
}

// plural is "1 host" or "3 hosts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
