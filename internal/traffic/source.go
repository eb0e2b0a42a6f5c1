package traffic

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TokenEnv is the environment variable the bearer token is read from when no token is given
// and no other variable is named.
const TokenEnv = "MESHSCOPE_PROMETHEUS_TOKEN"

// ExampleURL is the form of a Prometheus URL, for messages.
const ExampleURL = "http://prometheus.istio-system:9090"

// Source says where the evidence comes from, as the provider's settings or the command's
// flags give it: a live Prometheus or a snapshot file of its answer.
type Source struct {
	// Prometheus is the live server to query; nil when there is none. Its Window is ignored
	// (Window is), and its Timeout must be set (Check refuses zero).
	Prometheus *Prometheus
	// File is the path of a snapshot file; "" when there is none.
	File string
	// FileGiven says a file was given even when File is "" (a surface that takes an empty
	// setting as given): Check then refuses the empty path, and a server besides it.
	FileGiven bool
	// Window is the window asked for. For a server, "" is DefaultWindow. For a file, "" reads
	// the file's own window, and any other must be the file's.
	Window string
	// TokenEnv names the environment variable the bearer token is read from when
	// Prometheus.BearerToken is empty and TokenGiven is false: "" reads TokenEnv, where an
	// unset variable means no token; a variable named here must hold one.
	TokenEnv string
	// TokenGiven says Prometheus.BearerToken is the token as given (even empty): no
	// environment variable is read.
	TokenGiven bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Describe names the source, for messages: "Prometheus at URL" or "the observed traffic file PATH".
func (s Source) Describe() string {
	if s.Prometheus != nil {
		return "Prometheus at " + redacted(s.Prometheus.URL)
	}
	return "the observed traffic file " + s.File
}

// At is the instant the query is evaluated at: the start of the current minute, so that a
// plan and the re-plan of its apply a moment later (or two runs of a command) ask the same
// question.
func (s Source) At() time.Time {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	return now().Truncate(time.Minute)
}

// window is the window asked of a server.
func (s Source) window() string {
	if s.Window == "" {
		return DefaultWindow
	}
	return s.Window
}

// Check validates the settings, in a fixed order: the choice of source, the window, then the
// server's URL, timeout, token, headers and CA. It returns every fault it finds, each with
// its code and setting; none means Load may read.
func (s Source) Check() []*Fault {
	var out []*Fault
	add := func(f *Fault) {
		if f != nil {
			out = append(out, f)
		}
	}
	hasFile := s.File != "" || s.FileGiven
	switch {
	case s.Prometheus != nil && hasFile:
		add(configFault(CodeTwoSources, SettingSource, "", errors.New("both a Prometheus server and a snapshot file are given; give one")))
	case s.Prometheus == nil && !hasFile:
		add(configFault(CodeNoSource, SettingSource, "", errors.New("neither a Prometheus server nor a snapshot file is given")))
	case s.Prometheus == nil && strings.TrimSpace(s.File) == "":
		add(configFault(CodeEmptyFile, SettingFile, s.File, errors.New("the path of the snapshot file is empty")))
	}
	if s.Window != "" || s.Prometheus != nil {
		add(checkWindow(s.window()))
	}
	if p := s.Prometheus; p != nil {
		add(checkURL(p.URL, false))
		if p.Timeout <= 0 {
			add(configFault(CodeInvalidTimeout, SettingTimeout, p.Timeout.String(),
				fmt.Errorf("the timeout %s is not longer than zero", p.Timeout)))
		}
		if _, f := s.token(); f != nil {
			add(f)
		}
		add(checkHeaders(p.Headers))
		add(checkCA(p.CACertificate))
	}
	return out
}

// token is the bearer token to send: the one given, else the environment variable's.
func (s Source) token() (string, *Fault) {
	if s.TokenGiven || s.Prometheus.BearerToken != "" {
		return s.Prometheus.BearerToken, nil
	}
	if s.TokenEnv == "" {
		return os.Getenv(TokenEnv), nil
	}
	tok := os.Getenv(s.TokenEnv)
	if tok == "" {
		return "", configFault(CodeTokenUnset, SettingToken, s.TokenEnv,
			fmt.Errorf("the environment variable %s is unset or empty", s.TokenEnv))
	}
	return tok, nil
}

// checkWindow checks a window as Prometheus reads a range.
func checkWindow(window string) *Fault {
	if _, err := ParseWindow(window); err != nil {
		return configFault(CodeInvalidWindow, SettingWindow, window, err)
	}
	return nil
}

// checkURL checks the base URL of a Prometheus server: http(s), with a host and, unless
// credentials are allowed (Fetch's callers may), without a user and password.
func checkURL(raw string, credentials bool) *Fault {
	if strings.TrimSpace(raw) == "" {
		return configFault(CodeMissingURL, SettingURL, raw, fmt.Errorf("the URL of the Prometheus server is empty; give one such as %q", ExampleURL))
	}
	invalid := func(reason string) *Fault {
		shown := redacted(raw)
		f := configFault(CodeInvalidURL, SettingURL, shown,
			fmt.Errorf("%q is not an http(s) URL of a Prometheus server, such as %q: %s", shown, ExampleURL, reason))
		f.Where = shown
		return f
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return invalid(err.Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return invalid(fmt.Sprintf("the scheme is %q, not http or https", u.Scheme))
	case u.Host == "":
		return invalid("it names no host")
	case u.User != nil && !credentials:
		f := configFault(CodeURLCredentials, SettingURL, u.Redacted(), fmt.Errorf("the URL %s carries credentials", u.Redacted()))
		f.Where = u.Redacted()
		return f
	}
	return nil
}

// redacted is the URL without its password, for messages.
func redacted(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

// checkHeaders checks the headers' names and values. A value is never quoted: it may be a secret.
func checkHeaders(headers map[string]string) *Fault {
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		bad := name == ""
		for _, r := range name {
			if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
				bad = true
			}
		}
		if bad {
			return configFault(CodeInvalidHeader, SettingHeaders, name, fmt.Errorf("the header name %q is not an HTTP header name", name))
		}
		if strings.ContainsAny(headers[name], "\r\n") {
			return configFault(CodeInvalidHeader, SettingHeaders, name, fmt.Errorf("the value of header %q holds a line break", name))
		}
	}
	return nil
}

// checkCA checks that a PEM bundle holds a certificate, as the client will read it.
func checkCA(bundle string) *Fault {
	if strings.TrimSpace(bundle) == "" {
		return nil
	}
	rest := []byte(bundle)
	var first error
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			first = cmpOr(first, fmt.Errorf("a PEM block is a %q, not a CERTIFICATE", block.Type))
			continue
		}
		_, err := x509.ParseCertificate(block.Bytes)
		if err == nil {
			return nil
		}
		first = cmpOr(first, err)
	}
	if first == nil {
		first = errors.New("it holds no PEM block (it must begin with -----BEGIN CERTIFICATE-----)")
	}
	return configFault(CodeInvalidCA, SettingCA, "", fmt.Errorf("the CA bundle holds no PEM certificate: %w", first))
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Load reads the evidence of the source and maps it onto the inventory (Resolve); domain is
// the cluster's DNS suffix. Every error is a *Fault: the first of Check's, one of reading
// (Fetch, ReadSnapshot), a snapshot over another window than the one asked for
// (CodeWindowMismatch), or an answer without a single Istio series (CodeEmpty): that is no
// evidence, not "no traffic", and the surface decides how serious it is.
func Load(ctx context.Context, src Source, inv *mesh.Inventory, domain string) (*Evidence, error) {
	if faults := src.Check(); len(faults) > 0 {
		return nil, faults[0]
	}
	var snap *Snapshot
	if src.Prometheus != nil {
		cfg := *src.Prometheus
		cfg.Window = src.window()
		cfg.BearerToken, _ = src.token() // checked
		var err error
		if snap, err = Fetch(ctx, cfg, src.At()); err != nil {
			return nil, err
		}
	} else {
		var err error
		if snap, err = ReadSnapshot(src.File); err != nil {
			return nil, err
		}
		if src.Window != "" && snap.Window != "" { // an answer without series does not say its window
			mine, _ := ParseWindow(src.Window) // checked
			if theirs, err := ParseWindow(snap.Window); err != nil || mine != theirs {
				return nil, &Fault{Kind: FaultConfig, Code: CodeWindowMismatch, Setting: SettingWindow, Where: src.File,
					Value: src.Window, Window: snap.Window,
					Err: fmt.Errorf("the window %s was asked for, but %s holds the calls of the window %s", src.Window, src.File, snap.Window)}
			}
		}
	}
	ev := Resolve(snap, inv, domain)
	if ev.Empty() {
		in := "in the window of the query that wrote it (an answer without series does not say which)"
		if snap.Window != "" {
			in = "in the window " + snap.Window
		}
		return nil, &Fault{Kind: FaultEmpty, Code: CodeEmpty, Setting: SettingSource, Where: snap.Source, Window: snap.Window,
			Err: fmt.Errorf("%s: Prometheus held no Istio series (%s, %s) %s", snap.Source, RequestsMetric, TCPConnectionsMetric, in)}
	}
	return ev, nil
}
