package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
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
const TokenEnv = "MESHSCOPE_PROMETHEUS_TOKEN"

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

// check validates the flags once parsed; required says that one source must be given.
func (e *evidenceFlags) check(required bool, stderr io.Writer) int {
	switch {
	case e.prometheus != "" && e.observed != "":
		fmt.Fprintln(stderr, "give one source of observed traffic: --prometheus URL or --observed FILE, not both")
		return ExitUsage
	case required && !e.given():
		fmt.Fprintln(stderr, "missing the observed traffic: give --prometheus URL (a live Prometheus) or --observed FILE (a snapshot; `terraform-provider-meshscope query` prints how to write one)")
		return ExitUsage
	}
	if !e.given() {
		for _, name := range append([]string{"window"}, clientFlags...) {
			if e.set(name) {
				fmt.Fprintf(stderr, "--%s applies to observed traffic: give --prometheus URL or --observed FILE too\n", name)
				return ExitUsage
			}
		}
		return ExitOK
	}
	if _, err := traffic.ParseWindow(e.window); err != nil {
		fmt.Fprintf(stderr, "--window: %v\n", err)
		return ExitUsage
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
	if u, err := url.Parse(e.prometheus); err == nil && u.User != nil {
		fmt.Fprintf(stderr, "--prometheus %s: the URL carries credentials, which would sit in shell histories and ps: "+
			"give a bearer token in an environment variable named by --bearer-token-env (or in %s) instead\n", u.Redacted(), TokenEnv)
		return ExitUsage
	}
	if e.timeout <= 0 {
		fmt.Fprintf(stderr, "--timeout %s: give a duration longer than zero, such as 30s\n", e.timeout)
		return ExitUsage
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

// parseHeader splits NAME=VALUE. The value is never quoted back: it may be a secret.
func parseHeader(h string) (string, string, error) {
	name, value, ok := strings.Cut(h, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", fmt.Errorf("a header is NAME=VALUE, such as X-Scope-OrgID=mesh; %q has no '='", strings.SplitN(h, "=", 2)[0])
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return "", "", fmt.Errorf("the header name %q is not an HTTP header name", name)
		}
	}
	if strings.EqualFold(name, "Authorization") {
		return "", "", fmt.Errorf("the Authorization header would put a credential on the command line: put the token in an environment variable and name it with --bearer-token-env (or set %s)", TokenEnv)
	}
	if strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("the value of header %q holds a line break", name)
	}
	return name, value, nil
}

// snapshot reads the evidence: the file, or the live server's answer.
func (e *evidenceFlags) snapshot(ctx context.Context, stderr io.Writer) (*traffic.Snapshot, int) {
	if e.observed != "" {
		snap, err := traffic.ReadSnapshot(e.observed)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s\n", evidenceError(err))
			return nil, ExitError
		}
		if snap.Window != "" && e.set("window") { // an answer without series does not say its window
			mine, _ := traffic.ParseWindow(e.window)
			theirs, err := traffic.ParseWindow(snap.Window)
			if err != nil || mine != theirs {
				fmt.Fprintf(stderr, "error: --window %s, but %s holds the calls of the window %s: leave out --window (the file's window is used), "+
					"or write a snapshot over %s with the command `terraform-provider-meshscope query --window %s` prints\n",
					e.window, e.observed, snap.Window, e.window, e.window)
				return nil, ExitError
			}
		}
		return snap, ExitOK
	}
	cfg := traffic.Prometheus{URL: e.prometheus, Window: e.window, Insecure: e.insecure, Timeout: e.timeout}
	tokenEnv := e.tokenEnv
	if tokenEnv == "" {
		tokenEnv = TokenEnv
	}
	cfg.BearerToken = os.Getenv(tokenEnv)
	if e.tokenEnv != "" && cfg.BearerToken == "" {
		fmt.Fprintf(stderr, "error: --bearer-token-env %s: the environment variable %s is unset or empty; export the token in it\n", e.tokenEnv, e.tokenEnv)
		return nil, ExitError
	}
	if len(e.headers) > 0 {
		cfg.Headers = map[string]string{}
		for _, h := range e.headers {
			name, value, _ := parseHeader(h) // checked
			cfg.Headers[name] = value
		}
	}
	if e.caFile != "" {
		pem, err := os.ReadFile(e.caFile)
		if err != nil {
			fmt.Fprintf(stderr, "error: --ca-certificate: %v\n", err)
			return nil, ExitError
		}
		cfg.CACertificate = string(pem)
	}
	snap, err := traffic.Fetch(ctx, cfg, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "error: %s\n", evidenceError(err))
		return nil, ExitError
	}
	return snap, ExitOK
}

// evidenceError words a fault of reading the evidence with the flag that mends it.
func evidenceError(err error) string {
	var f *traffic.Fault
	if !errors.As(err, &f) {
		return err.Error()
	}
	msg := f.Error()
	switch f.Kind {
	case traffic.FaultConfig:
		if strings.Contains(msg, "ca_certificate") {
			return "--ca-certificate: the file holds no PEM certificate (it must begin with -----BEGIN CERTIFICATE-----)"
		}
		return "--prometheus: " + msg
	case traffic.FaultUnreachable:
		return msg + ". Check the --prometheus URL, and that the server is reachable from here (a port-forward, a proxy in HTTPS_PROXY)"
	case traffic.FaultTimeout:
		return msg + ". Raise --timeout, or shorten --window"
	case traffic.FaultUnauthorized:
		return msg + ". Give a bearer token in an environment variable named by --bearer-token-env (or in " + TokenEnv + "), or the header the server expects with --header"
	case traffic.FaultTLS:
		return msg + ". Trust the server's CA with --ca-certificate FILE (or, for a test server only, --insecure)"
	case traffic.FaultFile:
		return msg
	}
	return msg
}

// evidence reads the snapshot of the flags' source and maps it onto the inventory, as
// resolveEvidence does.
func (e *evidenceFlags) evidence(inv *mesh.Inventory, domain string, prog progress, stderr io.Writer) (*traffic.Evidence, int) {
	start := time.Now()
	snap, code := e.snapshot(context.Background(), stderr)
	if code != ExitOK {
		return nil, code
	}
	prog.done(start, "read %d series from %s", len(snap.Series), snap.Source)
	return resolveEvidence(snap, inv, domain, stderr)
}

// resolveEvidence maps the snapshot onto the inventory and refuses evidence that holds nothing:
// an answer without a single Istio series is no evidence, not "no traffic".
func resolveEvidence(snap *traffic.Snapshot, inv *mesh.Inventory, domain string, stderr io.Writer) (*traffic.Evidence, int) {
	ev := traffic.Resolve(snap, inv, domain)
	if ev.Empty() {
		window := "the window of the query that wrote it (an answer without series does not say which)"
		if snap.Window != "" {
			window = "the window " + snap.Window
		}
		fmt.Fprintf(stderr, "error: %s: Prometheus held no Istio series (istio_requests_total, istio_tcp_connections_opened_total) in %s. "+
			"That is no evidence, not \"no traffic\": check that Prometheus scrapes the sidecars, that its retention covers the window "+
			"(Istio's sample Prometheus keeps 6 hours), and that the window is right.\n", snap.Source, window)
		return nil, ExitError
	}
	return ev, ExitOK
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

// reportLimit is the most lines each part of the stderr report of unknown callers and hosts
// lists; the counts are always full.
const reportLimit = 10

// reportUnknown says on stderr what the evidence holds that the inventory does not: callers it
// does not hold, callers Istio could not name, and hosts it does not hold. None of them is
// silently dropped. keep filters namespaces (nil: all).
func reportUnknown(ev *traffic.Evidence, keep func(ns string) bool, stderr io.Writer) {
	if keep == nil {
		keep = func(string) bool { return true }
	}
	var unknown []traffic.UnknownWorkload
	for _, u := range ev.UnknownWorkloads {
		if keep(u.Namespace) {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(stderr, "warning: %s not in the inventory; their calls are left out. Give their manifests with -f:\n", plural(len(unknown), "calling workload is", "calling workloads are"))
		for i, u := range unknown {
			if i == reportLimit {
				fmt.Fprintf(stderr, "  ... and %d more\n", len(unknown)-i)
				break
			}
			fmt.Fprintf(stderr, "  %s/%s: %s over %s (%s)\n", u.Namespace, u.Workload, traffic.Quantity(u.Count, "call", "calls"), ev.Window, plural(u.Series, "series", "series"))
		}
	}
	if ev.Unattributed > 0 {
		fmt.Fprintf(stderr, "warning: %s a caller Istio could not name (source_workload=\"unknown\": a client without a sidecar, or outside the mesh); left out\n", plural(ev.Unattributed, "series has", "series have"))
	}
	type hostAcc struct {
		host      string
		count     float64
		workloads int
	}
	hosts := map[string]*hostAcc{}
	for _, k := range ev.Workloads() {
		ns, name, _ := strings.Cut(k, "/")
		if !keep(ns) {
			continue
		}
		seen := map[string]bool{}
		for _, c := range ev.Calls(ns, name) {
			if c.Class != traffic.ClassUnknown {
				continue
			}
			h := hosts[c.Host]
			if h == nil {
				h = &hostAcc{host: c.Host}
				hosts[c.Host] = h
			}
			h.count += c.Count
			if !seen[c.Host] {
				seen[c.Host] = true
				h.workloads++
			}
		}
	}
	if len(hosts) > 0 {
		list := make([]*hostAcc, 0, len(hosts))
		for _, h := range hosts {
			list = append(list, h)
		}
		slices.SortFunc(list, func(a, b *hostAcc) int { return strings.Compare(a.host, b.host) })
		fmt.Fprintf(stderr, "warning: calls go to %s the inventory does not hold (its manifests are likely incomplete); left out. Give their manifests with -f:\n", plural(len(list), "host", "hosts"))
		for i, h := range list {
			if i == reportLimit {
				fmt.Fprintf(stderr, "  ... and %d more\n", len(list)-i)
				break
			}
			fmt.Fprintf(stderr, "  %s: %s over %s from %s\n", h.host, traffic.Quantity(h.count, "call", "calls"), ev.Window, plural(h.workloads, "workload", "workloads"))
		}
	}
}

// plural is "1 host" or "3 hosts".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
