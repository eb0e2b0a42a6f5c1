package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

// trace follows the calls bar's Sidecar names (foo.foo on port 80, through route 80 to its
// cluster), and calls named on the command line: one the proxy does not import goes to
// PassthroughCluster, and the exit status says a call is astray.
func TestTraceSeed(t *testing.T) {
	dir := fixture.Dir(t, map[string]string{"mesh.yaml": fixture.Seed + "\n---\n" + fixture.SidecarBar})
	code, out, errs := run(t, "", "trace", "-f", dir, "--pod", "bar/test-app", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Calls          []predict.Call `json:"calls"`
		UnreachedCount int            `json:"unreached_count"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := predict.Call{Host: "foo.foo.svc.cluster.local", Port: 80, Listener: "0.0.0.0_80", Route: "80",
		VirtualHost: "foo.foo.svc.cluster.local:80", Cluster: "outbound|80||foo.foo.svc.cluster.local", Reached: true}
	if len(doc.Calls) != 1 || doc.Calls[0] != want || doc.UnreachedCount != 0 {
		t.Errorf("calls %+v, want only %+v", doc.Calls, want)
	}
	code, out, _ = run(t, "", "trace", "-f", dir, "--pod", "bar/test-app", "--call", "foo.foo.svc.cluster.local:80", "--call", "api.example.com:443")
	if code != ExitChanged || !strings.Contains(out, "api.example.com:443") ||
		!strings.Contains(out, "astray at the import step: the proxy imports no service api.example.com; the call goes to PassthroughCluster") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	for _, bad := range [][]string{{"--call", "foo:http"}, {"--call", "ns/foo:80"}, {"-o", "names"}} {
		if code, _, errs := run(t, "", append([]string{"trace", "-f", dir, "--pod", "bar/test-app"}, bad...)...); code != ExitUsage || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errs)
		}
	}
	// foo's Sidecar names no exact host (istio-system/* only): the calls must be named.
	if code, _, errs := run(t, "", "trace", "-f", fixture.SeedFile(t), "-f", fixture.SidecarFooFile(t), "--pod", "foo/test-app"); code != ExitUsage || !strings.Contains(errs, "--call") {
		t.Errorf("no calls to follow: exit %d, stderr %q", code, errs)
	}
}
