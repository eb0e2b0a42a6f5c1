package conformance

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/log"
)

var (
	flagCLI          = flag.String("meshscope.bin", os.Getenv("MESHSCOPE_BIN"), "use this prebuilt meshscope binary instead of building the main module (env MESHSCOPE_BIN)")
	flagIstioVersion = flag.String("meshscope.istio-version", envOr("MESHSCOPE_ISTIO_VERSION", "1.31"), "value for the CLI's --istio-version (empty: omit the flag)")
)

var (
	cli         CLI
	cliBuildErr error
	cliOnce     sync.Once
	cliTmpDir   string
)

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	quietIstioLogs()
	code := m.Run()
	if cliTmpDir != "" {
		_ = os.RemoveAll(cliTmpDir)
	}
	os.Exit(code)
}

// quietIstioLogs keeps istiod's info logging out of the test output.
func quietIstioLogs() {
	lvl := log.NoneLevel
	if v := os.Getenv("MESHSCOPE_ISTIO_LOG"); v != "" {
		lvl = log.StringToLevel(v)
	}
	o := log.DefaultOptions()
	o.SetDefaultOutputLevel(log.OverrideScopeName, lvl)
	_ = log.Configure(o)
	for _, s := range log.Scopes() {
		s.SetOutputLevel(lvl)
	}
}

// requireCLI returns the CLI, building it on first use. The build happens once
// per test binary (lazily, so Istio-only tests do not pay for it). A build
// failure FAILS the calling test: the comparison cannot silently be skipped.
func requireCLI(t testing.TB) CLI {
	t.Helper()
	cliOnce.Do(func() {
		if *flagCLI != "" {
			cli = CLI{Bin: *flagCLI, IstioVersion: *flagIstioVersion}
			return
		}
		wd, err := os.Getwd()
		if err != nil {
			cliBuildErr = err
			return
		}
		root, err := RepoRoot(wd)
		if err != nil {
			cliBuildErr = err
			return
		}
		cliTmpDir, err = os.MkdirTemp("", "meshscope-conformance-")
		if err != nil {
			cliBuildErr = err
			return
		}
		bin, err := BuildCLI(root, cliTmpDir)
		if err != nil {
			cliBuildErr = err
			return
		}
		cli = CLI{Bin: bin, IstioVersion: *flagIstioVersion}
	})
	if cliBuildErr != nil {
		t.Fatalf("cannot build the meshscope CLI, so nothing can be compared: %v", cliBuildErr)
	}
	return cli
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// joinYAML concatenates several YAML streams into one.
func joinYAML(files ...string) string {
	var parts []string
	for _, f := range files {
		parts = append(parts, strings.TrimSpace(f))
	}
	return strings.Join(parts, "\n---\n") + "\n"
}

// writeFiles writes each YAML stream to its own file in dir.
func writeFiles(t testing.TB, dir string, files []string) []string {
	t.Helper()
	var paths []string
	for i, f := range files {
		p := filepath.Join(dir, fmt.Sprintf("inventory-%d.yaml", i))
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// saveFailingMesh writes the mesh to a file that outlives the test and returns its path.
func saveFailingMesh(t testing.TB, label, yaml string) string {
	t.Helper()
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, label)
	f, err := os.CreateTemp("", "meshscope-mismatch-"+safe+"-*.yaml")
	if err != nil {
		t.Logf("cannot save failing mesh: %v", err)
		return "(not saved)"
	}
	defer f.Close()
	_, _ = f.WriteString(yaml)
	return f.Name()
}

// compareCase runs Istio and the CLI on the same inventory (given as one or more
// files) for every proxy, and reports differences. It returns the number of
// mismatching proxies.
func compareCase(t testing.TB, label string, files []string, proxies []Proxy, istio IstioResult) int {
	t.Helper()
	c := requireCLI(t)
	paths := writeFiles(t, t.TempDir(), files)
	mismatches := 0
	var saved string
	for _, px := range proxies {
		if inject.IgnoredNamespaces.Contains(px.Namespace) {
			// Istio's injector never injects these namespaces: the CLI must refuse the proxy.
			if _, err := c.Clusters(paths, px); err == nil || !strings.Contains(err.Error(), "(ignored-namespace)") {
				t.Errorf("%s: proxy %s: Istio never injects namespace %s, but the CLI did not refuse it as such: %v", label, px.Key(), px.Namespace, err)
				mismatches++
			}
			continue
		}
		got, err := c.Clusters(paths, px)
		if err != nil {
			if saved == "" {
				saved = saveFailingMesh(t, label, joinYAML(files...))
			}
			t.Errorf("%s: proxy %s: CLI failed: %v\n  mesh: %s", label, px.Key(), err, saved)
			mismatches++
			continue
		}
		want := istio[px.Key()]
		if d := FormatDiff(want, got); d != "" {
			if saved == "" {
				saved = saveFailingMesh(t, label, joinYAML(files...))
			}
			t.Errorf("%s: proxy %s: meshscope disagrees with Istio\n%s  mesh: %s\n  rerun: meshscope clusters -f %s --namespace %s --labels %s -o names",
				label, px.Key(), d, saved, saved, px.Namespace, LabelString(px.Labels))
			mismatches++
		}
	}
	return mismatches
}

// expectNames asserts Istio's own output (a check of the harness and of the
// reference document, independent of the CLI).
func expectNames(t testing.TB, label string, got, want []string) {
	t.Helper()
	if d := FormatDiff(got, want); d != "" {
		t.Errorf("%s: Istio output differs from the expected list (only-in-istio = Istio generated it, only-in-meshscope = expected but missing):\n%s  istio gave (%d): %s",
			label, d, len(got), strings.Join(got, " "))
	}
}

var seedProxyFoo = Proxy{Namespace: "foo", Labels: map[string]string{"app": "test-app"}}
var seedProxyBar = Proxy{Namespace: "bar", Labels: map[string]string{"app": "test-app"}}

// seed19 is reference §4 Example 1.
var seed19 = []string{
	"BlackHoleCluster",
	"InboundPassthroughCluster",
	"PassthroughCluster",
	"inbound|80||",
	"outbound|15010||istiod.istio-system.svc.cluster.local",
	"outbound|15012||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|15012||istiod.istio-system.svc.cluster.local",
	"outbound|15014||istiod.istio-system.svc.cluster.local",
	"outbound|15021||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|15443||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|443||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|443||istiod.istio-system.svc.cluster.local",
	"outbound|443||kubernetes.default.svc.cluster.local",
	"outbound|443||metrics-server.kube-system.svc.cluster.local",
	"outbound|53||kube-dns.kube-system.svc.cluster.local",
	"outbound|80||bar.bar.svc.cluster.local",
	"outbound|80||default-http-backend.kube-system.svc.cluster.local",
	"outbound|80||foo.foo.svc.cluster.local",
	"outbound|80||istio-ingressgateway.istio-system.svc.cluster.local",
}

// seed13 is reference §4 Example 2.
var seed13 = []string{
	"BlackHoleCluster",
	"InboundPassthroughCluster",
	"PassthroughCluster",
	"inbound|80||",
	"outbound|15010||istiod.istio-system.svc.cluster.local",
	"outbound|15012||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|15012||istiod.istio-system.svc.cluster.local",
	"outbound|15014||istiod.istio-system.svc.cluster.local",
	"outbound|15021||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|15443||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|443||istio-ingressgateway.istio-system.svc.cluster.local",
	"outbound|443||istiod.istio-system.svc.cluster.local",
	"outbound|80||istio-ingressgateway.istio-system.svc.cluster.local",
}

// TestSeedIstio checks Istio alone on the seed scenario: 19 CDS clusters for
// foo's test-app without a Sidecar and 13 with it.
func TestSeedIstio(t *testing.T) {
	before := readFile(t, "testdata/seed/before.yaml")
	sidecar := readFile(t, "testdata/seed/sidecar.yaml")
	proxies := []Proxy{seedProxyFoo, seedProxyBar}

	t.Run("before", func(t *testing.T) {
		got := IstioClusters(t, before, proxies)
		if n := len(got[seedProxyFoo.Key()]); n != 19 {
			t.Errorf("foo: Istio gave %d clusters, want 19", n)
		}
		expectNames(t, "foo", got[seedProxyFoo.Key()], seed19)
		expectNames(t, "bar", got[seedProxyBar.Key()], seed19)
	})
	t.Run("sidecar", func(t *testing.T) {
		got := IstioClusters(t, joinYAML(before, sidecar), proxies)
		if n := len(got[seedProxyFoo.Key()]); n != 13 {
			t.Errorf("foo: Istio gave %d clusters, want 13", n)
		}
		expectNames(t, "foo", got[seedProxyFoo.Key()], seed13)
		expectNames(t, "bar (Sidecar is in foo)", got[seedProxyBar.Key()], seed19)
	})
}

// TestSeed_CLIEqualsIstioOnTwoFiles compares the CLI with Istio on the seed files, passed as two -f files.
func TestSeed_CLIEqualsIstioOnTwoFiles(t *testing.T) {
	before := readFile(t, "testdata/seed/before.yaml")
	sidecar := readFile(t, "testdata/seed/sidecar.yaml")
	proxies := []Proxy{seedProxyFoo, seedProxyBar}
	t.Run("before", func(t *testing.T) {
		compareCase(t, "seed/before", []string{before}, proxies, IstioClusters(t, before, proxies))
	})
	t.Run("sidecar", func(t *testing.T) {
		compareCase(t, "seed/sidecar", []string{before, sidecar}, proxies, IstioClusters(t, joinYAML(before, sidecar), proxies))
	})
}

// TestIstioFile is a debugging aid: it prints Istio's cluster names for one
// inventory and proxy. It runs only when MESHSCOPE_ISTIO_FILE is set, e.g.
//
//	MESHSCOPE_ISTIO_FILE=mesh.yaml MESHSCOPE_NS=foo MESHSCOPE_LABELS=app=x go test -run TestIstioFile -v
func TestIstioFile(t *testing.T) {
	path := os.Getenv("MESHSCOPE_ISTIO_FILE")
	if path == "" {
		t.Skip("MESHSCOPE_ISTIO_FILE not set")
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("MESHSCOPE_LABELS"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[k] = v
		}
	}
	px := Proxy{Namespace: os.Getenv("MESHSCOPE_NS"), Labels: labels}
	got := IstioClusters(t, readFile(t, path), []Proxy{px})
	fmt.Println(strings.Join(got[px.Key()], "\n"))
}
