package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestClustersNamesSeed(t *testing.T) {
	code, out, errs := run(t, "", "clusters", "-f", "testdata/seed.yaml", "--namespace", "foo", "--labels", "app=test-app", "-o", "names")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 19 || lines[0] != "BlackHoleCluster" || lines[len(lines)-1] != "outbound|80||istio-ingressgateway.istio-system.svc.cluster.local" {
		t.Errorf("got %d names:\n%s", len(lines), out)
	}
	code, out, _ = run(t, "", "clusters", "-f", "testdata/seed.yaml", "-f", "testdata/sidecar.yaml", "--pod", "foo/test-app", "-o", "names")
	if code != ExitOK || strings.Count(out, "\n") != 13 {
		t.Errorf("with the Sidecar, exit %d, %d names:\n%s", code, strings.Count(out, "\n"), out)
	}
}

func TestClustersTableAndJSON(t *testing.T) {
	code, out, _ := run(t, "", "clusters", "-f", "testdata/seed.yaml", "--namespace", "bar", "--labels", "app=test-app")
	if code != ExitOK || !strings.HasPrefix(out, "SERVICE FQDN") || strings.Count(out, "\n") != 24 {
		t.Errorf("table: exit %d, %d lines:\n%s", code, strings.Count(out, "\n"), out)
	}
	code, out, _ = run(t, "", "clusters", "-f", "-", "--namespace", "bar", "--labels", "app=test-app", "-o", "json")
	if code != ExitOK {
		t.Fatalf("json from empty stdin: exit %d", code)
	}
	var doc struct {
		CDS      int `json:"cds_count"`
		Istioctl int `json:"istioctl_count"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.CDS != 2+1 || doc.Istioctl != 7 {
		// empty inventory: BlackHole, Passthrough, InboundPassthrough + 4 bootstrap
		t.Errorf("json = %s (err %v)", out, err)
	}
}

func TestClustersExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, ExitUsage, "Usage"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{"missing -f", []string{"clusters", "--namespace", "foo"}, ExitUsage, "missing -f"},
		{"missing namespace", []string{"clusters", "-f", "testdata/seed.yaml"}, ExitUsage, "missing --namespace"},
		{"bad output", []string{"clusters", "-f", "testdata/seed.yaml", "--namespace", "foo", "-o", "xml"}, ExitUsage, `"xml"`},
		{"bad labels", []string{"clusters", "-f", "testdata/seed.yaml", "--namespace", "foo", "--labels", "novalue"}, ExitUsage, `"novalue"`},
		{"invalid label key", []string{"clusters", "-f", "testdata/seed.yaml", "--namespace", "foo", "--labels", "bad key=x"}, ExitError, `"bad key"`},
		{"invalid namespace", []string{"clusters", "-f", "testdata/seed.yaml", "--namespace", "Foo_"}, ExitError, `"Foo_"`},
		{"missing file", []string{"clusters", "-f", "testdata/nope.yaml", "--namespace", "foo"}, ExitError, "nope.yaml"},
		{"unknown pod", []string{"clusters", "-f", "testdata/seed.yaml", "--pod", "foo/ghost"}, ExitError, `"foo/ghost"`},
		{"bad version", []string{"clusters", "-f", "testdata/seed.yaml", "--namespace", "foo", "--istio-version", "2.0"}, ExitUsage, `"2.0"`},
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
