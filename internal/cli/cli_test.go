package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run("dev", args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestClustersNamesSeed(t *testing.T) {
	seed, sidecar := fixture.SeedFile(t), fixture.SidecarFooFile(t)
	code, out, errs := run(t, "", "clusters", "-f", seed, "--namespace", "foo", "--labels", "app=test-app", "-o", "names")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 19 || lines[0] != "BlackHoleCluster" || lines[len(lines)-1] != "outbound|80||istio-ingressgateway.istio-system.svc.cluster.local" {
		t.Errorf("got %d names:\n%s", len(lines), out)
	}
	code, out, _ = run(t, "", "clusters", "-f", seed, "-f", sidecar, "--pod", "foo/test-app", "-o", "names")
	if code != ExitOK || strings.Count(out, "\n") != 13 {
		t.Errorf("with the Sidecar, exit %d, %d names:\n%s", code, strings.Count(out, "\n"), out)
	}
}

func TestClustersTableAndJSON(t *testing.T) {
	seed := fixture.SeedFile(t)
	code, out, _ := run(t, "", "clusters", "-f", seed, "--namespace", "bar", "--labels", "app=test-app")
	if code != ExitOK || !strings.HasPrefix(out, "SERVICE FQDN") || strings.Count(out, "\n") != 24 {
		t.Errorf("table: exit %d, %d lines:\n%s", code, strings.Count(out, "\n"), out)
	}
	code, out, errs := run(t, fixture.Seed, "clusters", "-f", "-", "--namespace", "bar", "--labels", "app=test-app", "-o", "json")
	if code != ExitOK {
		t.Fatalf("json from the seed on stdin: exit %d: %s", code, errs)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		CDS           int `json:"cds_count"`
		Istioctl      int `json:"istioctl_count"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.SchemaVersion != 1 || doc.CDS != 19 || doc.Istioctl != 23 {
		// the seed: 19 CDS clusters, and 4 bootstrap rows
		t.Errorf("json = %s (err %v)", out, err)
	}
}

func TestClustersExitCodes(t *testing.T) {
	seed := fixture.SeedFile(t)
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, ExitUsage, "Usage"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{"missing -f", []string{"clusters", "--namespace", "foo"}, ExitUsage, "missing -f"},
		{"missing namespace", []string{"clusters", "-f", seed}, ExitUsage, "missing --namespace"},
		{"bad output", []string{"clusters", "-f", seed, "--namespace", "foo", "-o", "xml"}, ExitUsage, `"xml"`},
		{"bad labels", []string{"clusters", "-f", seed, "--namespace", "foo", "--labels", "novalue"}, ExitUsage, `"novalue"`},
		{"invalid label key", []string{"clusters", "-f", seed, "--namespace", "foo", "--labels", "bad key=x"}, ExitError, `"bad key"`},
		{"invalid namespace", []string{"clusters", "-f", seed, "--namespace", "Foo_"}, ExitError, `"Foo_"`},
		{"missing file", []string{"clusters", "-f", "testdata/nope.yaml", "--namespace", "foo"}, ExitError, "nope.yaml"},
		{"unknown pod", []string{"clusters", "-f", seed, "--pod", "foo/ghost"}, ExitError, `"foo/ghost"`},
		{"bad version", []string{"clusters", "-f", seed, "--namespace", "foo", "--istio-version", "2.0"}, ExitUsage, `"2.0"`},
		{"unknown namespace", []string{"clusters", "-f", seed, "--namespace", "fooo", "--labels", "app=test-app"}, ExitError,
			`namespace "fooo" is not in the inventory. Did you mean "foo"`},
		{"empty stdin", []string{"clusters", "-f", "-", "--namespace", "foo"}, ExitError, "stdin is empty"},
		{"stdin twice", []string{"clusters", "-f", "-", "-f", "-", "--namespace", "foo"}, ExitError, "given twice"},
		{"empty directory", []string{"clusters", "-f", "testdata/empty-dir", "--namespace", "foo"}, ExitError, "holds no *.yaml or *.yml file"},
		{"no kind meshscope reads", []string{"clusters", "-f", "testdata/configmaps-only.yaml", "--namespace", "foo"}, ExitError, "The inventory is empty"},
		{"bad domain suffix", []string{"clusters", "-f", seed, "--namespace", "foo", "--domain-suffix", "a..b"}, ExitUsage, `--domain-suffix "a..b"`},
		{"diff bad domain suffix", []string{"diff", "--base", seed, "--head", seed, "--domain-suffix", "-x"}, ExitUsage, `--domain-suffix "-x"`},
		{"diff stdin twice", []string{"diff", "--base", "-", "--head", "-"}, ExitUsage, "only one of --base and --head"},
		{"diff empty stdin", []string{"diff", "--base", "-", "--head", seed}, ExitError, "stdin is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errs+out, tc.msg) {
				t.Errorf("exit %d (want %d), output %q, want it to contain %q", code, tc.code, errs+out, tc.msg)
			}
		})
	}
	code, _, errs := run(t, "apiVersion: v1\nkind: Service\nmetadata: {name: [\n", "clusters", "-f", "-", "--namespace", "foo")
	if code != ExitError || !strings.Contains(errs, "stdin: document 0") {
		t.Errorf("broken YAML on stdin: exit %d, %q", code, errs)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errs := run(t, "", args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
		// Every command, with its flags.
		for _, want := range []string{"clusters", "diff", "render", "suggest", "query", "version", "-namespace", "-pod", "-base", "-head", "-domain-suffix", "-out", "-check", "-debug",
			"-prometheus", "-observed", "-window", "-bearer-token-env", "-header", "-ca-certificate", "-insecure", "-timeout", "-import", "tf.json", "MESHSCOPE_PROMETHEUS_TOKEN"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: the help lacks %q:\n%s", args, want, out)
			}
		}
	}
	code, out, _ := run(t, "", "version")
	if code != ExitOK || !strings.HasPrefix(out, "terraform-provider-meshscope ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	code, _, errs := run(t, "", "diff", "-h")
	if code != ExitOK || !strings.Contains(errs, "--domain-suffix S") || !strings.Contains(errs, "- reads stdin") {
		t.Errorf("diff -h: exit %d, the synopsis lacks --domain-suffix or stdin: %s", code, errs)
	}
}

// TestCommandsOneList: every command of the one list is a command for main, has its line in
// the usage, and, with flags, its -h in the help; version prints the version Run is given.
func TestCommandsOneList(t *testing.T) {
	_, help, _ := run(t, "", "help")
	for _, c := range commands("") {
		for _, arg := range append([]string{c.name}, c.aliases...) {
			if !IsCommand(arg) {
				t.Errorf("IsCommand(%q) = false", arg)
			}
		}
		if line := fmt.Sprintf("\n  %-13s %s\n", c.name, c.summary); !strings.Contains(usage(), line) {
			t.Errorf("the usage lacks %q", line)
		}
		if c.flags && !strings.Contains(help, "\n"+c.name+":\nUsage: terraform-provider-meshscope "+c.name) {
			t.Errorf("the help lacks the flags of %s:\n%s", c.name, help)
		}
	}
	var out bytes.Buffer
	if code := Run("v1.2.3", []string{"--version"}, nil, &out, io.Discard); code != ExitOK || out.String() != "terraform-provider-meshscope v1.2.3\n" {
		t.Errorf("version: exit %d, %q", code, out.String())
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	long := time.Now().Add(-3 * time.Second)
	newProgress(&b, false).done(long, "loaded %d objects", 7)
	if got := b.String(); !strings.HasPrefix(got, "meshscope: loaded 7 objects in 3") {
		t.Errorf("a slow step: %q", got)
	}
	b.Reset()
	newProgress(&b, true).done(long, "loaded %d objects", 7)
	newProgress(&b, false).done(time.Now(), "loaded %d objects", 7)
	if b.Len() != 0 {
		t.Errorf("--quiet, or a quick step: %q", b.String())
	}
	// A quick command prints nothing but its output.
	seed := fixture.SeedFile(t)
	if code, _, errs := run(t, "", "clusters", "-f", seed, "--namespace", "foo", "-o", "names"); code != ExitOK || errs != "" {
		t.Errorf("clusters: exit %d, stderr %q", code, errs)
	}
}

func TestQuery_PrintsTheQueryAndSnapshotCommand(t *testing.T) {
	code, out, errs := run(t, "", "query", "--window", "36h")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{traffic.Query("36h"), traffic.SnapshotCommand("36h"), "PROM="} {
		if !strings.Contains(out, want) {
			t.Errorf("query output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := run(t, "", "query"); !strings.Contains(out, traffic.Query(traffic.DefaultWindow)) {
		t.Errorf("query without --window does not use the default window:\n%s", out)
	}
	if code, _, errs := run(t, "", "query", "--window", "a week"); code != ExitUsage || !strings.Contains(errs, `"a week"`) {
		t.Errorf("bad window: exit %d, %q", code, errs)
	}
	if code, _, errs := run(t, "", "query", "extra"); code != ExitUsage || !strings.Contains(errs, `"extra"`) {
		t.Errorf("an argument: exit %d, %q", code, errs)
	}
}
