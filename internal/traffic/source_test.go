package traffic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/problem"
)

// sample is one series of an answer to Query, as the HTTP API returns it.
func sample(window, ns, workload, dst, dstName string, n int) string {
	return fmt.Sprintf(`{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":%q,"reporter":"source","source_workload":%q,"source_workload_namespace":%q,"destination_service":%q,"destination_service_name":%q,"request_protocol":"http"},"value":[1733300000,"%d"]}`,
		window, workload, ns, dst, dstName, n)
}

// answer is the HTTP API's answer to Query holding the samples.
func answer(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",\n") + `]}}`
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func server(url string) *Prometheus {
	return &Prometheus{URL: url, Timeout: DefaultTimeout}
}

func TestSourceCheck(t *testing.T) {
	t.Setenv("MESHSCOPE_TEST_EMPTY_TOKEN", "")
	with := func(edit func(p *Prometheus)) *Prometheus {
		p := server("http://prometheus.istio-system:9090")
		edit(p)
		return p
	}
	for _, tc := range []struct {
		name    string
		src     Source
		code    problem.Code
		setting Setting
		value   string
	}{
		{"two sources", Source{Prometheus: server("http://p:9090"), File: "observed.json"}, CodeTwoSources, SettingSource, ""},
		{"two sources, one an empty file", Source{Prometheus: server("http://p:9090"), FileGiven: true}, CodeTwoSources, SettingSource, ""},
		{"no source", Source{}, CodeNoSource, SettingSource, ""},
		{"empty file", Source{File: "  "}, CodeEmptyFile, SettingFile, "  "},
		{"empty file given", Source{FileGiven: true}, CodeEmptyFile, SettingFile, ""},
		{"bad window of a file", Source{File: "observed.json", Window: "7 days"}, CodeInvalidWindow, SettingWindow, "7 days"},
		{"bad window of a server", Source{Prometheus: server("http://p:9090"), Window: "0d"}, CodeInvalidWindow, SettingWindow, "0d"},
		{"missing URL", Source{Prometheus: server(" ")}, CodeMissingURL, SettingURL, " "},
		{"URL without scheme", Source{Prometheus: server("prometheus:9090")}, CodeInvalidURL, SettingURL, "prometheus:9090"},
		{"URL without host", Source{Prometheus: server("http:///api")}, CodeInvalidURL, SettingURL, "http:///api"},
		{"URL that does not parse", Source{Prometheus: server("http://[::1")}, CodeInvalidURL, SettingURL, "http://[::1"},
		{"credentials in the URL", Source{Prometheus: server("http://admin:hunter2@p:9090")}, CodeURLCredentials, SettingURL, "http://admin:xxxxx@p:9090"},
		{"zero timeout", Source{Prometheus: with(func(p *Prometheus) { p.Timeout = 0 })}, CodeInvalidTimeout, SettingTimeout, "0s"},
		{"named token variable unset", Source{Prometheus: server("http://p:9090"), TokenEnv: "MESHSCOPE_TEST_UNSET_TOKEN"}, CodeTokenUnset, SettingToken, "MESHSCOPE_TEST_UNSET_TOKEN"},
		{"named token variable empty", Source{Prometheus: server("http://p:9090"), TokenEnv: "MESHSCOPE_TEST_EMPTY_TOKEN"}, CodeTokenUnset, SettingToken, "MESHSCOPE_TEST_EMPTY_TOKEN"},
		{"header name", Source{Prometheus: with(func(p *Prometheus) { p.Headers = map[string]string{"X Tenant": "a"} })}, CodeInvalidHeader, SettingHeaders, "X Tenant"},
		{"empty header name", Source{Prometheus: with(func(p *Prometheus) { p.Headers = map[string]string{"": "a"} })}, CodeInvalidHeader, SettingHeaders, ""},
		{"header value", Source{Prometheus: with(func(p *Prometheus) { p.Headers = map[string]string{"X-Tenant": "a\r\nX-Evil: b"} })}, CodeInvalidHeader, SettingHeaders, "X-Tenant"},
		{"CA not PEM", Source{Prometheus: with(func(p *Prometheus) { p.CACertificate = "not pem" })}, CodeInvalidCA, SettingCA, ""},
		{"CA block not a certificate", Source{Prometheus: with(func(p *Prometheus) {
			p.CACertificate = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
		})}, CodeInvalidCA, SettingCA, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := tc.src.Check()
			if len(faults) != 1 {
				t.Fatalf("Check() = %v, want one fault %s", faults, tc.code)
			}
			f := faults[0]
			if f.Code != tc.code || f.Setting != tc.setting || f.Value != tc.value || f.Kind != FaultConfig || !f.Input() {
				t.Errorf("fault = %s %s %q (kind %d), want %s %s %q: %v", f.Code, f.Setting, f.Value, f.Kind, tc.code, tc.setting, tc.value, f)
			}
			if _, ok := problem.Lookup(f.Code); !ok {
				t.Errorf("code %s is not defined", f.Code)
			}
			if strings.Contains(f.Error(), "hunter2") {
				t.Errorf("the fault shows a password: %v", f)
			}
		})
	}

	t.Run("valid", func(t *testing.T) {
		t.Setenv("MESHSCOPE_TEST_TOKEN", "t0ken")
		for _, src := range []Source{
			{File: "observed.json"},
			{File: "observed.json", Window: "1w"},
			{Prometheus: server("https://p:9090"), Window: "36h", TokenEnv: "MESHSCOPE_TEST_TOKEN"},
			{Prometheus: with(func(p *Prometheus) { p.Headers = map[string]string{"X-Scope-OrgID": "mesh"} })},
			// A token given as it is, even empty, reads no variable.
			{Prometheus: server("http://p:9090"), TokenEnv: "MESHSCOPE_TEST_UNSET_TOKEN", TokenGiven: true},
		} {
			if faults := src.Check(); len(faults) != 0 {
				t.Errorf("%+v: Check() = %v, want none", src, faults)
			}
		}
	})

	t.Run("every fault, in order", func(t *testing.T) {
		p := server("ftp://p")
		p.Timeout = -time.Second
		p.CACertificate = "not pem"
		var got []Setting
		for _, f := range (Source{Prometheus: p, Window: "x"}).Check() {
			got = append(got, f.Setting)
		}
		want := []Setting{SettingWindow, SettingURL, SettingTimeout, SettingCA}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("settings at fault = %v, want %v", got, want)
		}
	})
}

// fakeServer answers every query with body (or status when not 200), and records the
// requests' Authorization header and time parameter.
func fakeServer(t *testing.T, status int, body string) (*httptest.Server, func() (auth, at string)) {
	t.Helper()
	var mu sync.Mutex
	var auth, at string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" { // a compatible server without the coverage endpoints
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		mu.Lock()
		auth, at = r.Header.Get("Authorization"), r.Form.Get("time")
		mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, `{"status":"error","errorType":"unauthorized","error":"no"}`, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func() (string, string) { mu.Lock(); defer mu.Unlock(); return auth, at }
}

func TestLoad(t *testing.T) {
	web := sample("7d", "shop", "web", "cart.shop.svc.cluster.local", "cart", 12)
	ghost := sample("7d", "shop", "gone", "cart.shop.svc.cluster.local", "cart", 6)
	observed := writeFile(t, "observed.json", answer(web, ghost))
	empty := writeFile(t, "empty.json", answer())
	malformed := writeFile(t, "malformed.json", "{\"status\":\"success\",\n\"data\": {\"resultType\": \"vector\", \"result\": [}\n}")
	live, _ := fakeServer(t, http.StatusOK, answer(web))
	liveEmpty, _ := fakeServer(t, http.StatusOK, answer())
	refusing, _ := fakeServer(t, http.StatusUnauthorized, "")

	for _, tc := range []struct {
		name    string
		src     Source
		code    problem.Code // "" for evidence
		setting Setting
		window  string // the fault's Window
	}{
		{"a snapshot file", Source{File: observed}, "", "", ""},
		{"a snapshot file over the window asked for", Source{File: observed, Window: "1w"}, "", "", ""},
		{"a live server", Source{Prometheus: server(live.URL)}, "", "", ""},
		{"an empty file", Source{File: empty}, CodeEmpty, SettingSource, ""},
		{"an empty file does not say its window", Source{File: empty, Window: "30d"}, CodeEmpty, SettingSource, ""},
		{"an empty answer of a server", Source{Prometheus: server(liveEmpty.URL)}, CodeEmpty, SettingSource, "7d"},
		{"a file over another window", Source{File: observed, Window: "30d"}, CodeWindowMismatch, SettingWindow, "7d"},
		{"a malformed file", Source{File: malformed}, CodeFile, SettingFile, ""},
		{"a missing file", Source{File: filepath.Join(t.TempDir(), "nope.json")}, CodeFile, SettingFile, ""},
		{"a refused query", Source{Prometheus: server(refusing.URL), TokenGiven: true}, CodeUnauthorized, SettingToken, ""},
		{"a fault of the settings", Source{Prometheus: server("prometheus:9090")}, CodeInvalidURL, SettingURL, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Load(context.Background(), tc.src, inventory(t), "cluster.local")
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if calls := ev.Calls("shop", "web"); len(calls) != 1 || calls[0].Count != 12 || ev.Window != "7d" {
					t.Errorf("calls of shop/web = %+v over %q, want 12 requests to cart over 7d", calls, ev.Window)
				}
				return
			}
			var f *Fault
			if !errors.As(err, &f) {
				t.Fatalf("Load() = %v, %v; want a fault %s", ev, err, tc.code)
			}
			if ev != nil || f.Code != tc.code || f.Setting != tc.setting || f.Window != tc.window {
				t.Errorf("fault = %s %s window %q, want %s %s window %q: %v", f.Code, f.Setting, f.Window, tc.code, tc.setting, tc.window, f)
			}
			if f.Code == CodeEmpty && (f.Kind != FaultEmpty || f.Input() || !strings.Contains(f.Error(), "no Istio series")) {
				t.Errorf("empty answer: kind %d, %v", f.Kind, f)
			}
		})
	}
}

// The token comes from TokenEnv unless another variable is named or a token is given; the
// query is evaluated at the start of the minute of the source's clock.
func TestLoad_TokenAndClock(t *testing.T) {
	srv, seen := fakeServer(t, http.StatusOK, answer(sample("7d", "shop", "web", "cart.shop.svc.cluster.local", "cart", 1)))
	at := time.Date(2026, 12, 6, 10, 42, 37, 0, time.UTC)
	clock := func() time.Time { return at }
	t.Setenv(TokenEnv, "default-t0ken")
	t.Setenv("MY_TOKEN", "named-t0ken")
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{"the default variable", Source{Prometheus: server(srv.URL)}, "Bearer default-t0ken"},
		{"a named variable", Source{Prometheus: server(srv.URL), TokenEnv: "MY_TOKEN"}, "Bearer named-t0ken"},
		{"a given token", Source{Prometheus: &Prometheus{URL: srv.URL, Timeout: time.Minute, BearerToken: "given"}, TokenEnv: "MY_TOKEN"}, "Bearer given"},
		{"a given empty token", Source{Prometheus: server(srv.URL), TokenGiven: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.Now = clock
			if _, err := Load(context.Background(), tc.src, inventory(t), "cluster.local"); err != nil {
				t.Fatal(err)
			}
			auth, when := seen()
			if auth != tc.want {
				t.Errorf("Authorization = %q, want %q", auth, tc.want)
			}
			if want := fmt.Sprint(at.Truncate(time.Minute).Unix()); !strings.HasPrefix(when, want) {
				t.Errorf("evaluated at %s, want %s (the start of the minute)", when, want)
			}
		})
	}
}

func TestUnknowns(t *testing.T) {
	series := []Series{
		call("source", "shop", "web", "ghost.shop.svc.cluster.local", "ghost", 0, "http", 3),
		call("source", "shop", "web", "ghost.shop.svc.cluster.local", "ghost", 0, "tcp", 2),
		call("source", "pay", "unknown", "cart.shop.svc.cluster.local", "cart", 0, "http", 1),
	}
	for i := range ReportLimit + 2 {
		series = append(series,
			call("source", "shop", fmt.Sprintf("gone-%02d", i), "cart.shop.svc.cluster.local", "cart", 0, "http", float64(i+1)),
			call("source", "shop", "web", fmt.Sprintf("svc-%02d.pay.svc.cluster.local", i), "svc", 0, "http", 1))
	}
	ev := Resolve(&Snapshot{Window: "7d", Series: series}, inventory(t), "cluster.local")
	r := ev.Unknowns(nil)
	if r.CallerCount != ReportLimit+2 || len(r.Callers) != ReportLimit || r.Callers[0].Workload != "gone-00" || r.Callers[1].Requests != 2 {
		t.Errorf("callers = %d %+v", r.CallerCount, r.Callers)
	}
	if r.Unattributed != 1 {
		t.Errorf("unattributed = %d, want 1", r.Unattributed)
	}
	if r.HostCount != ReportLimit+3 || len(r.Hosts) != ReportLimit {
		t.Fatalf("hosts = %d %+v", r.HostCount, r.Hosts)
	}
	if h := r.Hosts[0]; h.Host != "ghost.shop.svc.cluster.local" || h.Requests != 3 || h.Connections != 2 || h.Amount() != "3 requests and 2 connections" || h.Workloads != 1 {
		t.Errorf("first host = %+v, want ghost with 5 calls from 1 workload", h)
	}
	other := ev.Unknowns(func(ns string) bool { return ns == "pay" })
	if other.CallerCount != 0 || other.HostCount != 0 || other.Unattributed != 1 {
		t.Errorf("filtered to pay: %+v", other)
	}
}
