package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// proxy-config cluster prints exactly what clusters prints; listener prints the listeners, with
// the VIPs the seed's manifests do not carry named and noted.
func TestProxyConfigSeed(t *testing.T) {
	seed := fixture.SeedFile(t)
	args := []string{"-f", seed, "--namespace", "foo", "--labels", "app=test-app", "-o", "names"}
	_, want, _ := run(t, "", append([]string{"clusters"}, args...)...)
	code, got, errs := run(t, "", append([]string{"proxy-config", "cluster"}, args...)...)
	if code != ExitOK || got != want || want == "" {
		t.Errorf("proxy-config cluster: exit %d, stderr %s; output differs from clusters':\n%s\nvs\n%s", code, errs, got, want)
	}
	code, got, errs = run(t, "", append([]string{"proxy-config", "listeners"}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	for _, w := range []string{"0.0.0.0_80", "<istiod.istio-system VIP>_15012", "virtualInbound", "virtualOutbound"} {
		if !strings.Contains("\n"+got, "\n"+w+"\n") {
			t.Errorf("listener names lack %q:\n%s", w, got)
		}
	}
	if !strings.Contains(errs, "bound to an address the manifests do not carry") {
		t.Errorf("no note on the unknown VIPs: %q", errs)
	}
	// The table names a listener's first services only: 0.0.0.0_80 takes the seed's 4 HTTP services.
	_, table, _ := run(t, "", "proxy-config", "listener", "-f", seed, "--namespace", "foo", "--labels", "app=test-app")
	if !strings.Contains(table, "bar.bar.svc.cluster.local,foo.foo.svc.cluster.local,istio-ingressgateway.istio-system.svc.cluster.local (+1 more)") {
		t.Errorf("the table does not cap the services of 0.0.0.0_80:\n%s", table)
	}
	code, got, _ = run(t, "", "proxy-config", "listener", "-f", seed, "--namespace", "foo", "--labels", "app=test-app", "-o", "json")
	var doc struct {
		Listeners []struct {
			Name         string `json:"name"`
			AddressKnown bool   `json:"address_known"`
		} `json:"listeners"`
		LDSCount int `json:"lds_count"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil || code != ExitOK {
		t.Fatalf("exit %d, json: %v\n%s", code, err, got)
	}
	if doc.LDSCount != len(lines) || len(doc.Listeners) != len(lines) {
		t.Errorf("json lds_count %d, %d listeners; -o names printed %d", doc.LDSCount, len(doc.Listeners), len(lines))
	}
	// Endpoints: the seed's manifests hold Deployments, not Pods, so the replicas are named.
	code, got, errs = run(t, "", append([]string{"proxy-config", "endpoints"}, args...)...)
	if code != ExitOK || got != "outbound|80||bar.bar.svc.cluster.local\t<test-app.bar pod 1 IP>:80\n"+
		"outbound|80||foo.foo.svc.cluster.local\t<test-app.foo pod 1 IP>:80\n" || !strings.Contains(errs, "2 endpoints are replicas") {
		t.Errorf("proxy-config endpoint: exit %d, stdout %q, stderr %q", code, got, errs)
	}
	// Routes: one line per virtual host; foo's own service has its short name and its VIP's
	// placeholder among its domains.
	code, got, errs = run(t, "", append([]string{"proxy-config", "routes"}, args...)...)
	routeLines := strings.Split(strings.TrimSpace(got), "\n")
	for _, w := range []string{"80\tfoo.foo.svc.cluster.local:80", "80\tallow_any"} {
		if code != ExitOK || !strings.Contains("\n"+got, "\n"+w+"\n") {
			t.Errorf("proxy-config route -o names: exit %d, stderr %q; no line %q:\n%s", code, errs, w, got)
		}
	}
	if !strings.Contains(errs, "virtual hosts match a service address the manifests do not carry") {
		t.Errorf("no note on the unknown VIPs among the domains: %q", errs)
	}
	code, got, _ = run(t, "", "proxy-config", "route", "-f", seed, "--namespace", "foo", "--labels", "app=test-app", "-o", "json")
	var rdoc struct {
		Routes []struct {
			Name         string `json:"name"`
			VirtualHosts []struct {
				Name    string   `json:"name"`
				Domains []string `json:"domains"`
			} `json:"virtual_hosts"`
		} `json:"routes"`
		VirtualHostCount int `json:"virtual_host_count"`
	}
	if err := json.Unmarshal([]byte(got), &rdoc); err != nil || code != ExitOK {
		t.Fatalf("exit %d, json: %v\n%s", code, err, got)
	}
	if rdoc.VirtualHostCount != len(routeLines) {
		t.Errorf("json virtual_host_count %d; -o names printed %d lines", rdoc.VirtualHostCount, len(routeLines))
	}
	var fooDomains []string
	for _, r := range rdoc.Routes {
		for _, vh := range r.VirtualHosts {
			if r.Name == "80" && vh.Name == "foo.foo.svc.cluster.local:80" {
				fooDomains = vh.Domains
			}
		}
	}
	if strings.Join(fooDomains, ",") != "foo.foo.svc.cluster.local,foo.foo.svc.cluster.local.,foo,foo.foo.svc,foo.foo,<foo.foo VIP>" {
		t.Errorf("domains of foo.foo.svc.cluster.local:80 on route 80: %q", fooDomains)
	}
	code, got, _ = run(t, "", append([]string{"proxy-config", "all"}, args...)...)
	if code != ExitOK || strings.Count(got, "listener\t") != len(lines) || strings.Count(got, "cluster\t") != strings.Count(want, "\n") ||
		strings.Count(got, "endpoint\t") != 2 || strings.Count(got, "route\t") != len(routeLines) {
		t.Errorf("proxy-config all: exit %d:\n%s", code, got)
	}
}

func TestProxyConfigUsage(t *testing.T) {
	seed := fixture.SeedFile(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, ExitUsage, "name what to print first"},
		{[]string{"-f", seed}, ExitUsage, "name what to print first"},
		{[]string{"secrets", "-f", seed, "--namespace", "foo"}, ExitUsage, `unknown kind "secrets"`},
		{[]string{"listener", "--namespace", "foo"}, ExitUsage, "give at least one manifest"},
		{[]string{"listener", "-f", seed}, ExitUsage, "missing --namespace"},
		{[]string{"listener", "-f", seed, "--namespace", "fooo"}, ExitError, `namespace "fooo" is not in the inventory`},
		{[]string{"listener", "-f", seed, "--namespace", "foo", "-o", "yaml"}, ExitUsage, "yaml"},
	} {
		code, _, errs := run(t, "", append([]string{"proxy-config"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("proxy-config %q: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// An EnvoyFilter that adds a listener is named on stderr: the prediction leaves it out.
func TestProxyConfigNamesListenerPatches(t *testing.T) {
	seed := fixture.SeedFile(t)
	code, _, errs := run(t, `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: extra, namespace: foo}
spec:
  configPatches:
  - applyTo: LISTENER
    patch: {operation: ADD, value: {name: extra_8443}}
`, "proxy-config", "listener", "-f", seed, "-f", "-", "--namespace", "foo", "--labels", "app=test-app", "-o", "names")
	if code != ExitOK || !strings.Contains(errs, "foo/extra (ADD)") || !strings.Contains(errs, "R56") {
		t.Errorf("exit %d, stderr %q: the listener patch is not named", code, errs)
	}
}
