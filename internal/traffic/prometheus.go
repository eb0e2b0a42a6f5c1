package traffic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultTimeout bounds one evaluation against a live Prometheus.
const DefaultTimeout = 30 * time.Second

// Prometheus says how to reach a Prometheus server.
type Prometheus struct {
	// URL is the server's base URL, as in a browser: "http://prometheus.istio-system:9090".
	URL string
	// Window is how far back to look, a Prometheus duration; DefaultWindow when empty. Load
	// sets it from the Source's Window.
	Window string
	// BearerToken is sent as "Authorization: Bearer ..." when set. Load sets it from the
	// environment, as the Source says.
	BearerToken string
	// Headers are sent with every request (a tenant header, say).
	Headers map[string]string
	// CACertificate is a PEM bundle to trust besides the system's roots.
	CACertificate string
	// Insecure skips the verification of the server's certificate.
	Insecure bool
	// Timeout bounds the evaluation; Fetch reads zero as DefaultTimeout, and a Source's
	// Check refuses it (a surface fills in the default).
	Timeout time.Duration
}

// Fetch evaluates Query against a live Prometheus at the instant now. The answer is a
// snapshot; resolve it against an inventory with Resolve.
func Fetch(ctx context.Context, cfg Prometheus, now time.Time) (*Snapshot, error) {
	window := cfg.Window
	if window == "" {
		window = DefaultWindow
	}
	if f := checkWindow(window); f != nil {
		f.Where = cfg.URL
		return nil, f
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if f := checkURL(cfg.URL, true); f != nil {
		return nil, f
	}
	rt, f := roundTripper(cfg)
	if f != nil {
		return nil, f
	}
	client, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, &Fault{Kind: FaultConfig, Code: CodeConfig, Setting: SettingURL, Where: cfg.URL, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// How much of the window the server holds is asked alongside the query, on a client of its
	// own (so that its answers' statuses never classify the query's fault). Its answer is
	// waited for only when the query has one to label.
	covered := make(chan Coverage, 1)
	go func() {
		crt, _ := roundTripper(cfg) // the query's checked the same settings
		cc, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: crt})
		if err != nil {
			covered <- Coverage{Err: err}
			return
		}
		d, _ := ParseWindow(window) // checked
		covered <- coverage(ctx, promv1.NewAPI(cc), d, now)
	}()
	val, _, _, err := promv1.NewAPI(client).Query(ctx, Query(window), now, promv1.WithTimeout(timeout))
	if err != nil {
		return nil, classify(cfg.URL, timeout, rt.lastStatus(), err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, &Fault{Kind: FaultQuery, Code: CodeQuery, Setting: SettingURL, Where: cfg.URL,
			Err: fmt.Errorf("Prometheus at %s answered the query with a %s, not an instant vector", cfg.URL, val.Type())}
	}
	snap := &Snapshot{Source: cfg.URL, Window: window, Series: make([]Series, 0, len(vec))}
	if len(vec) > 0 {
		snap.Coverage = <-covered
	}
	for i, s := range vec {
		sr, err := seriesFromSample(s, fmt.Sprintf("series %d of the answer", i))
		if err != nil {
			return nil, &Fault{Kind: FaultQuery, Code: CodeQuery, Setting: SettingURL, Where: cfg.URL, Err: err}
		}
		snap.Series = append(snap.Series, sr)
	}
	return snap, nil
}

// classify turns a client error into a Fault that says which setting is at fault.
func classify(where string, timeout time.Duration, status int, err error) *Fault {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		tlsRecord        tls.RecordHeaderError
		verify           *tls.CertificateVerificationError
		opErr            *net.OpError
		dnsErr           *net.DNSError
		apiErr           *promv1.Error
	)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &Fault{Kind: FaultUnauthorized, Code: CodeUnauthorized, Setting: SettingToken, Where: where, Status: status,
			Err: fmt.Errorf("Prometheus at %s refused the query with HTTP %d %s", where, status, http.StatusText(status))}
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &tlsRecord), errors.As(err, &verify):
		return &Fault{Kind: FaultTLS, Code: CodeTLS, Setting: SettingCA, Where: where, Err: fmt.Errorf("TLS with %s failed: %w", where, err)}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &apiErr) && apiErr.Type == promv1.ErrTimeout):
		return &Fault{Kind: FaultTimeout, Code: CodeTimeout, Setting: SettingTimeout, Where: where,
			Err: fmt.Errorf("Prometheus at %s did not answer within %s: %w", where, timeout, err)}
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		return &Fault{Kind: FaultUnreachable, Code: CodeUnreachable, Setting: SettingURL, Where: where, Err: fmt.Errorf("cannot reach Prometheus at %s: %w", where, err)}
	case status != 0:
		return &Fault{Kind: FaultQuery, Code: CodeQuery, Setting: SettingURL, Where: where, Status: status,
			Err: fmt.Errorf("Prometheus at %s answered HTTP %d: %w", where, status, err)}
	}
	return &Fault{Kind: FaultUnreachable, Code: CodeUnreachable, Setting: SettingURL, Where: where, Err: fmt.Errorf("cannot query Prometheus at %s: %w", where, err)}
}

// transport adds the configured headers and token, and records the last HTTP status.
type transport struct {
	next    http.RoundTripper
	headers map[string]string
	token   string

	mu     sync.Mutex
	status int
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.next.RoundTrip(req)
	if resp != nil {
		t.mu.Lock()
		t.status = resp.StatusCode
		t.mu.Unlock()
	}
	return resp, err
}

func (t *transport) lastStatus() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status/100 == 2 {
		return 0
	}
	return t.status
}

func roundTripper(cfg Prometheus) (*transport, *Fault) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // the user's choice, documented
	if strings.TrimSpace(cfg.CACertificate) != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(cfg.CACertificate)) {
			f := checkCA(cfg.CACertificate)
			if f == nil { // AppendCertsFromPEM is stricter than the check: it parses every block
				f = configFault(CodeInvalidCA, SettingCA, "", errors.New("the CA bundle holds no PEM certificate the client can use"))
			}
			f.Where = cfg.URL
			return nil, f
		}
		tlsCfg.RootCAs = pool
	}
	base := &http.Transport{}
	if def, ok := http.DefaultTransport.(*http.Transport); ok {
		base = def.Clone()
	}
	base.TLSClientConfig = tlsCfg
	base.Proxy = http.ProxyFromEnvironment
	return &transport{next: base, headers: cfg.Headers, token: cfg.BearerToken}, nil
}
