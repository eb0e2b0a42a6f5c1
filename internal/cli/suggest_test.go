package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/bench"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/review"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

const (
	suggestMesh     = "testdata/suggest/mesh.yaml"
	suggestObserved = "testdata/suggest/observed.json"
)

// TestSuggestGolden: the scopes suggested for the test mesh, in HCL and in Terraform's JSON,
// byte-identical from run to run; callers and hosts the inventory lacks are on stderr.
func TestSuggestGolden(t *testing.T) {
	for _, o := range []string{"hcl", "tf.json"} {
		code, out, errs := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved, "-o", o)
		if code != ExitOK {
			t.Fatalf("-o %s: exit %d: %s", o, code, errs)
		}
		goldenFile(t, filepath.Join("testdata", "suggest", "golden."+o), out)
		_, again, _ := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved, "-o", o)
		if again != out {
			t.Errorf("-o %s: two runs differ", o)
		}
		for _, want := range []string{
			"shop/gone: 6 requests over 7d",                   // a caller the inventory lacks
			"1 series has a caller Istio could not name",      // source_workload="unknown"
			"ghost.shop.svc.cluster.local: 1 request over 7d", // a host the inventory lacks
			"shop/Pod/debug has no pod labels",                // a caller no selector can single out
			`"vault.data" (30 requests over 7d, through Pass`, // a dependency the compiler refuses
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("-o %s: stderr lacks %q:\n%s", o, want, errs)
			}
		}
	}
	if !json.Valid(readFile(t, filepath.Join("testdata", "suggest", "golden.tf.json"))) {
		t.Error("golden.tf.json is not JSON")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSuggestTerraformFmt: terraform fmt leaves the HCL unchanged.
func TestSuggestTerraformFmt(t *testing.T) {
	// The terraform the acceptance tests run (make exports it), else the one on PATH.
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		var err error
		if tf, err = exec.LookPath("terraform"); err != nil {
			t.Skipf("no terraform binary to run terraform fmt with (set TF_ACC_TERRAFORM_PATH): %v", err)
		}
	}
	dir := t.TempDir()
	_, out, _ := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved)
	// The generated mesh too: long names, many dependencies, merged comments.
	_, gen, errs := run(t, "", "suggest", "-f", generatedMesh(t), "--observed", generatedSnapshot(t))
	if gen == "" {
		t.Fatalf("generated mesh: no output: %s", errs)
	}
	for name, text := range map[string]string{"seed.tf": out, "generated.tf": gen,
		"escapes.tf": "locals {\n  x = " + hclString("a\"b\\c${x}%{y}\n\t\u00e9\u0007") + "\n}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tf, "fmt", "-check", "-diff", "-no-color", dir)
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("terraform fmt -check: %v\n%s", err, b)
	}
}

// suggestedConfig is the part of suggest's -o tf.json output the provider reads.
type suggestedConfig struct {
	Resource map[string]map[string]struct {
		Namespace        string            `json:"namespace"`
		Name             string            `json:"name"`
		WorkloadSelector map[string]string `json:"workload_selector"`
		Dependencies     []struct {
			Service string   `json:"service"`
			Ports   []uint32 `json:"ports"`
		} `json:"dependencies"`
		Ingress []struct {
			Port            uint32 `json:"port"`
			Protocol        string `json:"protocol"`
			DefaultEndpoint string `json:"default_endpoint"`
		} `json:"ingress"`
		OutboundTrafficPolicy string `json:"outbound_traffic_policy"`
	} `json:"resource"`
	Import []struct {
		To string `json:"to"`
		ID string `json:"id"`
	} `json:"import"`
}

func (c suggestedConfig) declarations() map[string]scope.Declaration {
	out := map[string]scope.Declaration{}
	for name, r := range c.Resource[resourceType] {
		d := scope.Declaration{Name: r.Name, Namespace: r.Namespace, Selector: r.WorkloadSelector, OutboundTrafficPolicy: r.OutboundTrafficPolicy}
		for _, dep := range r.Dependencies {
			d.Dependencies = append(d.Dependencies, scope.Dependency{Service: dep.Service, Ports: dep.Ports})
		}
		for _, in := range r.Ingress {
			d.Ingress = append(d.Ingress, scope.Ingress{Port: in.Port, Protocol: in.Protocol, DefaultEndpoint: in.DefaultEndpoint})
		}
		out[name] = d
	}
	return out
}

// assertPlansClean is the domain-level half of the issue's bar, "suggest output plans with zero
// errors, zero warnings and zero observed_missing against the same inventory": every suggested
// scope compiles without a problem (not even a warning) and conflicts with no Sidecar of the
// inventory nor with another suggested scope; and with the compiled Sidecars in place, no
// observed call of any calling workload is cut. It returns the number of scopes.
//
// uncuttable lists the calls no scope can route, as "namespace/workload host": a call to a
// Service not exported to the caller's namespace (suggest leaves it out and says why).
func assertPlansClean(t *testing.T, manifests []string, snapshot, tfJSON string, uncuttable ...string) int {
	t.Helper()
	var cfg suggestedConfig
	if err := json.Unmarshal([]byte(tfJSON), &cfg); err != nil {
		t.Fatalf("the tf.json output does not parse: %v", err)
	}
	inv := mesh.New()
	if err := inv.LoadPaths(manifests, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := traffic.ReadSnapshot(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	ev := traffic.Resolve(snap, inv, mesh.DefaultDomainSuffix)
	decls := cfg.declarations()
	pred, err := predict.New(inv, predict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each scope is reviewed as the provider plans it: the review must find no observed call cut.
	reviewer := review.NewReviewer(inv, pred, review.Options{DomainSuffix: mesh.DefaultDomainSuffix})
	byName := map[string]string{} // namespace/Sidecar name -> resource
	var sidecars []*mesh.Sidecar
	reviewed := 0
	for _, name := range sortedKeysOf(decls) {
		d := decls[name]
		res, problems := scope.Compile(inv, d, scope.Options{})
		if len(problems) > 0 {
			t.Errorf("%s: the compiler reports %+v", name, problems)
		}
		if res == nil {
			continue
		}
		if c := scope.Conflicts(inv, res.Sidecar); len(c) > 0 {
			t.Errorf("%s: conflicts with a Sidecar of the inventory: %+v", name, c)
		}
		key := d.Namespace + "/" + res.Name
		if other, ok := byName[key]; ok {
			t.Errorf("%s and %s are both the Sidecar %s", name, other, key)
		}
		byName[key] = name
		sidecars = append(sidecars, res.Sidecar)
		for _, w := range reviewer.Scope(d, res, ev).Workloads {
			reviewed++
			for _, c := range w.Observed.Cut {
				if slices.Contains(uncuttable, w.Proxy.Namespace+"/"+w.Proxy.Name+" "+c.Host) {
					continue
				}
				t.Errorf("%s (%s): the suggested scope cuts %s", w.Key, name, c.Describe(ev.Window))
			}
		}
	}
	// No workload is selected by two suggested scopes (the provider's conflicting-selector error),
	// and every labelled workload with observed calls is selected by one (an unlabelled Pod has no
	// selector to scope it by: suggest warns about it instead).
	for _, w := range inv.Workloads {
		var by []string
		for name, d := range decls {
			if d.Namespace == w.Namespace && scope.Selects(d.Selector, w.PodLabels) {
				by = append(by, name)
			}
		}
		if len(by) > 1 {
			slices.Sort(by)
			t.Errorf("%s/%s is selected by %v", w.Namespace, w.Name, by)
		}
		if len(by) == 0 && len(w.PodLabels) > 0 && len(ev.Calls(w.Namespace, w.Name)) > 0 {
			t.Errorf("%s/%s made calls but no suggested scope selects it", w.Namespace, w.Name)
		}
	}
	if reviewed == 0 {
		t.Error("the suggested scopes select no workload")
	}
	// And all of them applied together cut no observed call of any workload.
	head := pred.WithSidecars(sidecars...)
	for _, k := range ev.Workloads() {
		ns, name, _ := strings.Cut(k, "/")
		for _, w := range inv.Workloads {
			if w.Namespace != ns || w.Name != name {
				continue
			}
			for _, c := range traffic.Cut(ev.Calls(ns, name), head.Outbound(predict.Proxy{Namespace: ns, Labels: w.PodLabels})) {
				if !slices.Contains(uncuttable, ns+"/"+name+" "+c.Host) {
					t.Errorf("%s/%s/%s: the suggested scopes together cut %s", ns, w.Kind, name, c.Describe(ev.Window))
				}
			}
		}
	}
	return len(decls)
}

// TestSuggestPlansClean: the suggested scopes of the test mesh, and of a generated mesh of
// 300 services, compile without a problem and cut no observed call.
func TestSuggestPlansClean(t *testing.T) {
	code, out, errs := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved, "-o", "tf.json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// pay/payments calls vault.data, which is exported to its own namespace only.
	if n := assertPlansClean(t, []string{suggestMesh}, suggestObserved, out, "pay/payments vault.data.svc.cluster.local"); n != 6 {
		t.Errorf("%d scopes, want 6", n)
	}
	// Without the suggestions, the namespace default Sidecar of shop and the Sidecar of pay cut calls today.
	inv := mesh.New()
	_ = inv.LoadPaths([]string{suggestMesh}, nil)
	snap, _ := traffic.ReadSnapshot(suggestObserved)
	ev := traffic.Resolve(snap, inv, mesh.DefaultDomainSuffix)
	pred, _ := predict.New(inv, predict.Options{})
	if cut := traffic.Cut(ev.Calls("shop", "web"), pred.Outbound(predict.Proxy{Namespace: "shop", Labels: inv.WorkloadByName("shop", "web").PodLabels})); len(cut) != 1 {
		t.Errorf("today, shop/web has %d calls cut, want 1 (payments.pay)", len(cut))
	}

	mesh, snapshot := generatedMesh(t), generatedSnapshot(t)
	code, out, errs = run(t, "", "suggest", "-f", mesh, "--observed", snapshot, "-o", "tf.json")
	if code != ExitOK || errs != "" {
		t.Fatalf("generated mesh: exit %d: %s", code, errs)
	}
	if n := assertPlansClean(t, []string{mesh}, snapshot, out); n != 600 {
		t.Errorf("generated mesh: %d scopes, want 600 (two versions of 300 services)", n)
	}
}

var generated struct {
	once           sync.Once
	dir            string
	mesh, snapshot string
	err            error
}

// generatedMesh writes, once per test binary, bench's mesh of 300 services (two versions each,
// five dependencies drawn with a Zipf skew) and a snapshot in which every workload calls its
// service's dependencies on their declared ports, with destination_port on half of them.
func generatedMesh(t *testing.T) string {
	t.Helper()
	generated.once.Do(func() {
		m := bench.Generate(bench.DefaultSpec(300))
		generated.mesh = filepath.Join(generated.dir, "mesh.yaml")
		generated.snapshot = filepath.Join(generated.dir, "observed.json")
		if generated.err = os.WriteFile(generated.mesh, m.YAML(), 0o600); generated.err != nil {
			return
		}
		generated.err = os.WriteFile(generated.snapshot, benchSnapshot(m, "7d"), 0o600)
	})
	if generated.err != nil {
		t.Fatal(generated.err)
	}
	return generated.mesh
}

func generatedSnapshot(t *testing.T) string {
	generatedMesh(t)
	return generated.snapshot
}

// benchSnapshot is the Prometheus answer for a bench mesh: every workload calls each of its
// service's dependencies on each declared port; the odd services' series carry destination_port.
func benchSnapshot(m *bench.Mesh, window string) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	n := 0
	for i, a := range m.Apps {
		for _, w := range a.Workloads {
			for _, d := range a.Deps {
				name, ns, _ := strings.Cut(d.Service, ".")
				for _, p := range d.Ports {
					port, proto := "", "http"
					if p == 9090 {
						proto = "grpc"
					}
					if i%2 == 1 {
						port = fmt.Sprintf(`,"destination_port":"%d"`, p)
					}
					if n > 0 {
						b.WriteString(",")
					}
					n++
					fmt.Fprintf(&b, "\n"+`{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":%q,"reporter":"source","source_workload":%q,"source_workload_namespace":%q,"destination_service":"%s.%s.svc.cluster.local","destination_service_name":%q,"destination_service_namespace":%q,"request_protocol":%q%s},"value":[1733300000,"%d"]}`,
						window, w, a.Namespace, name, ns, name, ns, proto, port, 10+(i*7+int(p))%1000)
				}
			}
		}
	}
	b.WriteString("\n]}}\n")
	return []byte(b.String())
}

// asBinaryEnv makes the test binary run the command line instead of the tests, so that a test
// can put it on PATH as terraform-provider-meshscope (TestArgoCDPlugin).
const asBinaryEnv = "MESHSCOPE_CLI_TEST_AS_BINARY"

// TestMain makes the directory of the generated mesh, which several tests share.
func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		os.Exit(Run("test", os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "meshscope-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	generated.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestSuggestNamespaceFilter: --namespace keeps the scopes (and the report of unknown callers)
// of the namespaces named.
func TestSuggestNamespaceFilter(t *testing.T) {
	code, out, errs := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved, "--namespace", "pay", "--namespace", "legacy")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got := strings.Count(out, "resource \""); got != 2 || !strings.Contains(out, `"pay_payments"`) || !strings.Contains(out, `"legacy_old_api"`) {
		t.Errorf("%d blocks:\n%s", got, out)
	}
	if strings.Contains(errs, "shop/gone") || strings.Contains(errs, "ghost.shop") {
		t.Errorf("stderr reports shop's unknowns under a filter without shop:\n%s", errs)
	}
}

// TestSuggestBadInput: every wrong, ambiguous or empty input is an error that names the value
// and the fix.
func TestSuggestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	observed := string(readFile(t, suggestObserved))
	empty := write("empty.json", `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	malformed := write("malformed.json", "{\"status\":\"success\",\n\"data\": {\"resultType\": \"vector\", \"result\": [}\n}")
	thirty := write("thirty.json", strings.ReplaceAll(observed, `"meshscope_window":"7d"`, `"meshscope_window":"30d"`))
	onlyData := write("data.json", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"meshscope_metric":"istio_requests_total","meshscope_window":"7d","reporter":"source","source_workload":"nobody","source_workload_namespace":"data","destination_service":"elsewhere.example.org","destination_service_name":"PassthroughCluster"},"value":[1,"3"]}]}}`)
	ca := write("ca.pem", "not a certificate")
	emptySrv, _ := fakePrometheus(t, empty, "")
	base := []string{"suggest", "-f", suggestMesh}
	with := func(extra ...string) []string { return append(slices.Clone(base), extra...) }
	cases := []struct {
		name string
		args []string
		code int
		msg  []string
	}{
		{"neither source", with(), ExitUsage, []string{"--prometheus URL", "--observed FILE"}},
		{"both sources", with("--prometheus", "http://127.0.0.1:1", "--observed", suggestObserved), ExitUsage, []string{"not both"}},
		{"missing -f", []string{"suggest", "--observed", suggestObserved}, ExitUsage, []string{"missing -f"}},
		{"bad output", with("--observed", suggestObserved, "-o", "yaml"), ExitUsage, []string{`"yaml"`, "hcl, tf.json"}},
		{"missing snapshot", with("--observed", filepath.Join(dir, "nope.json")), ExitError, []string{"nope.json", "no such file"}},
		{"malformed snapshot", with("--observed", malformed), ExitError, []string{"malformed.json", "line 2, column"}},
		{"empty evidence", with("--observed", empty), ExitError, []string{"empty.json", "no Istio series", "not \"no traffic\""}},
		{"empty evidence, live", with("--prometheus", emptySrv.URL), ExitError, []string{emptySrv.URL, "no Istio series", "window 7d"}},
		{"window mismatch", with("--observed", suggestObserved, "--window", "30d"), ExitError, []string{"--window 30d", "window 7d", "observed.json"}},
		{"window mismatch the other way", with("--observed", thirty, "--window", "7d"), ExitError, []string{"--window 7d", "window 30d"}},
		{"bad window", with("--observed", suggestObserved, "--window", "7 days"), ExitUsage, []string{`"7 days"`}},
		{"unknown namespace", with("--observed", suggestObserved, "--namespace", "shp"), ExitError, []string{`--namespace "shp"`, `Did you mean "shop"`}},
		{"no caller in the filter", with("--observed", suggestObserved, "--namespace", "data"), ExitError, []string{"no workload of namespace data made calls", "made calls"}},
		{"no caller of the inventory", with("--observed", onlyData), ExitError, []string{"made calls", "data.json", "data/nobody: 3 requests"}},
		{"client flag with a file", with("--observed", suggestObserved, "--insecure"), ExitUsage, []string{"--insecure applies to --prometheus only"}},
		{"window without a source", []string{"suggest", "-f", suggestMesh, "--window", "1d"}, ExitUsage, []string{"--prometheus URL"}},
		{"authorization header", with("--prometheus", "http://127.0.0.1:1", "--header", "Authorization=Bearer x"), ExitUsage, []string{"--bearer-token-env"}},
		{"malformed header", with("--prometheus", "http://127.0.0.1:1", "--header", "X-Tenant"), ExitUsage, []string{`"X-Tenant"`, "NAME=VALUE"}},
		{"unset token variable", with("--prometheus", "http://127.0.0.1:1", "--bearer-token-env", "MESHSCOPE_TEST_UNSET_TOKEN"), ExitError, []string{"MESHSCOPE_TEST_UNSET_TOKEN", "unset or empty"}},
		{"bad CA", with("--prometheus", "https://127.0.0.1:1", "--ca-certificate", ca), ExitError, []string{"--ca-certificate", "PEM"}},
		{"missing CA", with("--prometheus", "https://127.0.0.1:1", "--ca-certificate", filepath.Join(dir, "nope.pem")), ExitError, []string{"--ca-certificate", "nope.pem"}},
		{"bad URL", with("--prometheus", "prometheus:9090"), ExitError, []string{`"prometheus:9090"`, "http(s) URL"}},
		{"credentials in the URL", with("--prometheus", "http://admin:hunter2@prometheus:9090"), ExitUsage, []string{"carries credentials", "--bearer-token-env"}},
		{"bad timeout", with("--prometheus", "http://127.0.0.1:1", "--timeout", "0s"), ExitUsage, []string{"--timeout 0s"}},
		{"unreachable", with("--prometheus", "http://127.0.0.1:1", "--timeout", "5s"), ExitError, []string{"http://127.0.0.1:1", "--prometheus URL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, errs)
			}
			for _, m := range tc.msg {
				if !strings.Contains(errs, m) {
					t.Errorf("stderr lacks %q:\n%s", m, errs)
				}
			}
			if strings.Contains(errs, "hunter2") {
				t.Errorf("a password is printed: %s", errs)
			}
			if code != ExitOK && out != "" {
				t.Errorf("a failed run wrote to stdout:\n%s", out)
			}
		})
	}
}

// fakePrometheus answers every query with the snapshot file, after checking the headers; it
// records the requests' Authorization headers.
func fakePrometheus(t *testing.T, snapshot string, wantToken string) (*httptest.Server, *[]string) {
	t.Helper()
	body := readFile(t, snapshot)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if wantToken != "" && r.Header.Get("Authorization") != "Bearer "+wantToken {
			http.Error(w, `{"status":"error","errorType":"unauthorized","error":"no"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// TestSuggestPrometheus: a live server's answer gives the output the same answer in a file
// gives; the token comes from the environment, never the command line, and is never printed.
func TestSuggestPrometheus(t *testing.T) {
	const token = "s3cr3t-token"
	srv, seen := fakePrometheus(t, suggestObserved, token)
	_, fromFile, _ := run(t, "", "suggest", "-f", suggestMesh, "--observed", suggestObserved)

	t.Setenv(TokenEnv, token)
	code, live, errs := run(t, "", "suggest", "-f", suggestMesh, "--prometheus", srv.URL, "--header", "X-Scope-OrgID=mesh")
	if code != ExitOK || live != fromFile {
		t.Fatalf("exit %d; live output differs from the file's:\n%s\n--- stderr\n%s", code, live, errs)
	}
	if len(*seen) == 0 || (*seen)[0] != "Bearer "+token+"|mesh" {
		t.Errorf("the server saw %q", *seen)
	}
	t.Setenv("MY_PROM_TOKEN", token)
	t.Setenv(TokenEnv, "wrong")
	if code, _, errs := run(t, "", "suggest", "-f", suggestMesh, "--prometheus", srv.URL, "--bearer-token-env", "MY_PROM_TOKEN"); code != ExitOK {
		t.Errorf("--bearer-token-env: exit %d: %s", code, errs)
	}
	code, out, errs := run(t, "", "suggest", "-f", suggestMesh, "--prometheus", srv.URL)
	if code != ExitError || !strings.Contains(errs, "401") || !strings.Contains(errs, "--bearer-token-env") || out != "" {
		t.Errorf("a refused token: exit %d, stderr %q", code, errs)
	}
	if strings.Contains(errs, "wrong") || strings.Contains(errs, token) {
		t.Errorf("the token is printed: %q", errs)
	}
}

// TestSuggestQuoting: values and comments cannot break out of the HCL written.
func TestSuggestQuoting(t *testing.T) {
	if got := hclString("a\"b\\c${x}%{y}$z\n"); got != `"a\"b\\c$${x}%%{y}$z\n"` {
		t.Errorf("hclString = %s", got)
	}
	if got := commentText("evil\nresource {"); strings.Contains(got, "\n") {
		t.Errorf("commentText kept a line break: %q", got)
	}
}

// BenchmarkSuggestMesh runs suggest over a whole generated mesh (MESHSCOPE_SUGGEST_SERVICES
// services, 10,000 by default: 20,000 workloads and about 140,000 call series), writing HCL.
// Run it under /usr/bin/time -v for the peak RSS.
func BenchmarkSuggestMesh(b *testing.B) {
	n := 10000
	if v := os.Getenv("MESHSCOPE_SUGGEST_SERVICES"); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	m := bench.Generate(bench.DefaultSpec(n))
	meshFile, snapFile := filepath.Join(dir, "mesh.yaml"), filepath.Join(dir, "observed.json")
	if err := os.WriteFile(meshFile, m.YAML(), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(snapFile, benchSnapshot(m, "7d"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out countingWriter
		var errb strings.Builder
		if code := Run("dev", []string{"suggest", "-f", meshFile, "--observed", snapFile, "--quiet"}, nil, &out, &errb); code != ExitOK {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
		b.ReportMetric(float64(out.n), "output-bytes")
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
