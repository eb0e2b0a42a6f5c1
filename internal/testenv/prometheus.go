package testenv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"golang.org/x/crypto/bcrypt"
)

// PrometheusTimeout is the default bound on the backfill, and on the wait for a started
// Prometheus to be ready.
const PrometheusTimeout = 2 * time.Minute

// maxSampleAge keeps backfilled samples well inside Prometheus's default 15-day retention.
const maxSampleAge = 14 * 24 * time.Hour

// PrometheusOptions configures a Prometheus started by StartPrometheus.
type PrometheusOptions struct {
	// TLS serves HTTPS with a certificate for 127.0.0.1 signed by a CA generated for the test
	// (Prometheus.CACertPEM); a client that does not trust that CA gets an x509 error.
	TLS bool
	// BasicAuth, when set, is the only user Prometheus accepts: a request without these
	// credentials (none, a bearer token, a wrong password) gets 401 Unauthorized.
	BasicAuth *BasicAuth
	// Timeout bounds the backfill, and then the wait for the server to be ready; PrometheusTimeout
	// when zero. Raise it for benchmark-sized data.
	Timeout time.Duration
}

// BasicAuth is a user name and password for HTTP basic authentication.
type BasicAuth struct {
	Username, Password string
}

// Prometheus is a Prometheus server started by StartPrometheus.
type Prometheus struct {
	// URL is its base URL, http://127.0.0.1:<port>, or https:// with TLS.
	URL string
	// CACertPEM is the PEM of the CA that signed its serving certificate; empty without TLS.
	CACertPEM string
	// BasicAuth is the user it requires; nil when it requires none.
	BasicAuth *BasicAuth
	// DataDir is its TSDB directory, Log its log file; both are removed with the test.
	DataDir, Log string
}

// HTTPClient returns a client that trusts CACertPEM and sends BasicAuth: what a client
// configured with everything the server requires does.
func (p *Prometheus) HTTPClient() *http.Client {
	tr := &http.Transport{}
	if p.CACertPEM != "" {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(p.CACertPEM))
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if p.BasicAuth != nil {
		rt = basicAuthTransport{next: rt, auth: *p.BasicAuth}
	}
	return &http.Client{Transport: rt, Timeout: 30 * time.Second}
}

// API returns a client_golang Prometheus API client of this server, configured as HTTPClient.
func (p *Prometheus) API(t testing.TB) promv1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: p.URL, Client: p.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(c)
}

type basicAuthTransport struct {
	next http.RoundTripper
	auth BasicAuth
}

func (b basicAuthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.SetBasicAuth(b.auth.Username, b.auth.Password)
	return b.next.RoundTrip(req)
}

// StartPrometheus starts a Prometheus holding the samples of openMetrics (OpenMetrics text, as
// WriteOpenMetrics writes it) and waits until it is ready. It needs the prometheus and promtool
// binaries (`make prometheus`): without them the test is skipped, or fails when TF_ACC is set,
// since acceptance tests never pass by not running.
//
// The samples are turned into TSDB blocks with `promtool tsdb create-blocks-from openmetrics`
// before the server starts, so nothing is backfilled into a running head block; every sample must
// be at least MinSampleAge old and younger than 14 days (the default retention is 15), or the
// test fails. The server listens on a free loopback port, scrapes nothing, and is stopped with
// the test, its files removed; when it fails to start, the test fails with the tail of its log.
func StartPrometheus(t testing.TB, openMetrics io.Reader, opts PrometheusOptions) *Prometheus {
	t.Helper()
	prometheusBin, promtoolBin := lookPrometheus(t)
	dir := t.TempDir()
	p := &Prometheus{
		DataDir: filepath.Join(dir, "data"),
		Log:     filepath.Join(dir, "prometheus.log"),
	}
	if opts.BasicAuth != nil {
		auth := *opts.BasicAuth
		p.BasicAuth = &auth
	}

	input := filepath.Join(dir, "input.om")
	if err := writeFile(input, openMetrics); err != nil {
		t.Fatalf("writing the OpenMetrics input: %v", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = PrometheusTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtoolBin, "tsdb", "create-blocks-from", "openmetrics",
		"--quiet", input, p.DataDir).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %s (PrometheusOptions.Timeout)", err, timeout)
		}
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, lastLines(string(out), 20))
	}
	if err := os.Remove(input); err != nil { // the blocks hold it now, smaller
		t.Fatal(err)
	}
	start := time.Now()
	if err := checkBlockTimes(p.DataDir, start); err != nil {
		t.Fatal(err)
	}

	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("# Nothing to scrape: the data was backfilled.\nscrape_configs: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	args := []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + p.DataDir,
		"--storage.tsdb.retention.time=15d",
		"--web.listen-address=" + addr,
		"--web.max-connections=64",
		"--query.max-concurrency=4",
		"--log.level=warn",
	}
	scheme := "http"
	if opts.TLS || opts.BasicAuth != nil {
		webConfig, caPEM, err := writeWebConfig(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--web.config.file="+webConfig)
		p.CACertPEM = caPEM
		if opts.TLS {
			scheme = "https"
		}
	}
	p.URL = scheme + "://" + addr

	logf, err := os.Create(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prometheusBin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", prometheusBin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			_ = err // stopped by the interrupt: its exit status says nothing
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("prometheus killed: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("prometheus log (%s), last lines:\n%s", p.Log, tail(p.Log, 40))
		}
	})

	client := p.HTTPClient()
	awaitReady(t, "prometheus", p.Log, exited, timeout, 100*time.Millisecond,
		func(ctx context.Context) error { return getOK(ctx, client, p.URL+"/-/ready") },
		func(err error) string {
			return fmt.Sprintf("not ready on %s after %s (last error: %v)", p.URL, timeout, err)
		})
	// The port was free a moment before the server took it: make sure the server on it is this one.
	if err := checkDataDir(client, p); err != nil {
		t.Fatal(err)
	}
	t.Logf("prometheus ready on %s after %s", p.URL, time.Since(start).Round(10*time.Millisecond))
	return p
}

// lookPrometheus finds prometheus and promtool on PATH, or skips the test (fails with TF_ACC).
func lookPrometheus(t testing.TB) (prometheusBin, promtoolBin string) {
	t.Helper()
	var missing []string
	prometheusBin, err := exec.LookPath("prometheus")
	if err != nil {
		missing = append(missing, "prometheus")
	}
	promtoolBin, err = exec.LookPath("promtool")
	if err != nil {
		missing = append(missing, "promtool")
	}
	if len(missing) == 0 {
		return prometheusBin, promtoolBin
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	msg := fmt.Sprintf("%s %s not on PATH: run `make prometheus` (Debian's prometheus package)", strings.Join(missing, " and "), verb)
	if os.Getenv("TF_ACC") != "" {
		t.Fatalf("TF_ACC is set but %s", msg)
	}
	t.Skip(msg)
	return "", ""
}

// FreeAddr returns 127.0.0.1:<port> for a port nothing listens on: it was free a moment ago and
// is closed again, so a connection to it is refused (unless another process takes it meanwhile).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", freePort(t))
}

func writeFile(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkBlockTimes checks that the samples in the blocks promtool wrote lie between 14 days and
// MinSampleAge before start.
func checkBlockTimes(dataDir string, start time.Time) error {
	metas, err := filepath.Glob(filepath.Join(dataDir, "*", "meta.json"))
	if err != nil {
		return err
	}
	for _, path := range metas {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var meta struct {
			MinTime, MaxTime int64 // milliseconds; MaxTime is exclusive
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		first, last := time.UnixMilli(meta.MinTime).UTC(), time.UnixMilli(meta.MaxTime-1).UTC()
		if last.After(start.Add(-MinSampleAge)) {
			return fmt.Errorf("samples up to %s are less than %s before the start of Prometheus (%s): "+
				"end the data at testenv.EvaluationTime(time.Now()) or earlier (and write timestamps in seconds, not milliseconds)",
				last.Format(time.RFC3339), MinSampleAge, start.UTC().Format(time.RFC3339))
		}
		if first.Before(start.Add(-maxSampleAge)) {
			return fmt.Errorf("samples from %s are more than %s before the start of Prometheus (%s), "+
				"too close to its 15-day retention: start the data at testenv.EvaluationTime(time.Now()) minus the span",
				first.Format(time.RFC3339), maxSampleAge, start.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// writeWebConfig writes Prometheus's --web.config.file: a serving certificate signed by a new CA
// (returned as PEM) when opts.TLS, and the bcrypt hash of the basic-auth password.
func writeWebConfig(dir string, opts PrometheusOptions) (path, caPEM string, err error) {
	var cfg strings.Builder
	if opts.TLS {
		certPEM, keyPEM, ca, err := serverCertificate()
		if err != nil {
			return "", "", err
		}
		certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			return "", "", err
		}
		fmt.Fprintf(&cfg, "tls_server_config:\n  cert_file: %q\n  key_file: %q\n", certFile, keyFile)
		caPEM = ca
	}
	if a := opts.BasicAuth; a != nil {
		if a.Username == "" || strings.ContainsAny(a.Username, ":\n") {
			return "", "", fmt.Errorf("basic auth user name %q: want a non-empty name without ':'", a.Username)
		}
		// The lowest cost: Prometheus checks the hash on every request.
		hash, err := bcrypt.GenerateFromPassword([]byte(a.Password), bcrypt.MinCost)
		if err != nil {
			return "", "", err
		}
		fmt.Fprintf(&cfg, "basic_auth_users:\n  %q: %q\n", a.Username, hash)
	}
	path = filepath.Join(dir, "web.yml")
	return path, caPEM, os.WriteFile(path, []byte(cfg.String()), 0o600)
}

// serverCertificate returns a serving certificate and key for 127.0.0.1 and the PEM of the new,
// self-signed CA that signed it.
func serverCertificate() (certPEM, keyPEM []byte, caPEM string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, "", err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "meshscope testenv Prometheus CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, "", err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, "", err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), nil
}

func getOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// checkDataDir asks the server on p.URL for its flags: its storage.tsdb.path must be p.DataDir.
func checkDataDir(client *http.Client, p *Prometheus) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := api.NewClient(api.Config{Address: p.URL, Client: client})
	if err != nil {
		return err
	}
	flags, err := promv1.NewAPI(c).Flags(ctx)
	if err != nil {
		return fmt.Errorf("reading the flags of the Prometheus on %s: %w", p.URL, err)
	}
	if got := flags["storage.tsdb.path"]; got != p.DataDir {
		return fmt.Errorf("the Prometheus on %s is not the one started (storage.tsdb.path %q, want %q): "+
			"another process took the port", p.URL, got, p.DataDir)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Answer is the body of this server's answer to an instant query over its HTTP API, as
// `curl -fsS --get "$PROM/api/v1/query" --data-urlencode 'query=...'` saves it. at is the
// evaluation time; zero leaves it to the server (now). The test fails on any other answer than 200.
func (p *Prometheus) Answer(t testing.TB, query string, at time.Time) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := url.Values{"query": {query}}
	if !at.IsZero() {
		q.Set("time", fmt.Sprint(at.Unix()))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query answered %d: %s %v", resp.StatusCode, body, err)
	}
	return body
}

// AnswerFor starts a Prometheus holding the series of calls, ending at EvaluationTime(now) so that
// increase() there is exactly their counts, and returns its answer to query at that instant.
func AnswerFor(t testing.TB, calls []IstioCall, query string) []byte {
	t.Helper()
	at := EvaluationTime(time.Now())
	var om bytes.Buffer
	if err := WriteOpenMetrics(&om, calls, OpenMetricsOptions{At: at}); err != nil {
		t.Fatal(err)
	}
	return StartPrometheus(t, &om, PrometheusOptions{}).Answer(t, query, at)
}

// WriteAnswer writes an answer of Prometheus to path as a snapshot file is kept: indented, with a
// final newline.
func WriteAnswer(t testing.TB, path string, answer []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, answer, "", " "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(pretty.Bytes(), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}
