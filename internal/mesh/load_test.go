package mesh

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestLoadPathsTree(t *testing.T) {
	inv := New()
	stdin := strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {team: a}}\n")
	if err := inv.LoadPaths([]string{filepath.Join("testdata", "tree"), "-"}, stdin); err != nil {
		t.Fatal(err)
	}
	if len(inv.Services) != 1 || len(inv.Workloads) != 1 || len(inv.ServiceEntries) != 1 {
		t.Fatalf("got %d services, %d workloads, %d service entries; want 1 each", len(inv.Services), len(inv.Workloads), len(inv.ServiceEntries))
	}
	s := inv.Services[0]
	if p := s.Spec.Ports[0]; p.TargetPort != intstr.FromInt32(80) || p.Protocol != "TCP" {
		t.Errorf("apiserver defaults not applied: %+v", p)
	}
	if inv.Workloads[0].PodLabels["app"] != "a" || inv.Namespaces["x"].Labels["team"] != "a" {
		t.Errorf("workload labels %v, namespace %v", inv.Workloads[0].PodLabels, inv.Namespaces["x"])
	}
	if !strings.HasSuffix(inv.ServiceEntries[0].Source, "b.yml#1") {
		t.Errorf("source = %q, want .../b.yml#1", inv.ServiceEntries[0].Source)
	}
}

func TestAddYAMLErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
		index            int
	}{
		{"syntax error names the document", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: [oops\n", "f.yaml: document 1", 1},
		{"unsupported istio apiVersion", "apiVersion: networking.istio.io/v2\nkind: Sidecar\nmetadata: {name: s}\n", `unsupported apiVersion "networking.istio.io/v2"`, 0},
		{"unsupported apps apiVersion", "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: d}\n", `unsupported apiVersion "apps/v1beta1"`, 0},
		{"unsupported discovery apiVersion", "apiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata: {name: e}\n", `unsupported apiVersion "discovery.k8s.io/v1beta1" for EndpointSlice: use discovery.k8s.io/v1`, 0},
		{"nameless EndpointSlice", "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {namespace: x}\naddressType: IPv4\n", "metadata.name is empty", 0},
		{"not a mapping", "- a\n- b\n", "not a YAML mapping", 0},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", "no apiVersion or kind", 0},
		{"bad mesh config", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  mesh: |\n    outboundTrafficPolicy: {mode: SOMETIMES}\n", `"SOMETIMES"`, 0},
		{"bad field type", "apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata: {name: s, namespace: a}\nspec: {egress: {hosts: 3}}\n", "Sidecar s", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := New().AddYAML("f.yaml", []byte(tc.yaml))
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("error = %v, want a *DocumentError", err)
			}
			if de.Source != "f.yaml" || de.Index != tc.index || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q (index %d), want index %d and %q", err, de.Index, tc.index, tc.want)
			}
		})
	}
}

func TestMeshConfig(t *testing.T) {
	inv := New()
	err := inv.AddYAML("cm", []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data:
  mesh: |
    rootNamespace: mesh-root
    defaultServiceExportTo: ["."]
    outboundTrafficPolicy: {mode: REGISTRY_ONLY}
    discoverySelectors:
    - matchLabels: {mesh: "on"}
    defaultConfig:
      tracing:
        zipkin: {address: zipkin.istio-system:9411}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := inv.Mesh
	if m.RootNamespace != "mesh-root" || m.DefaultServiceExportTo[0] != "." || m.OutboundTrafficPolicy != "REGISTRY_ONLY" || m.Tracer != "zipkin" || !inv.HasMeshConfig() {
		t.Errorf("mesh settings = %+v", m)
	}
	if inv.NamespaceVisible("other") {
		t.Error("namespace without the selector label is visible")
	}
	_ = inv.AddYAML("ns", []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: meshed, labels: {mesh: \"on\"}}\n"))
	if !inv.NamespaceVisible("meshed") {
		t.Error("selected namespace is not visible")
	}
}

func TestLaterDocumentReplaces(t *testing.T) {
	inv := New()
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {ports: [{port: %s}]}\n"
	_ = inv.AddYAML("1", []byte(strings.Replace(doc, "%s", "80", 1)))
	_ = inv.AddYAML("2", []byte(strings.Replace(doc, "%s", "90", 1)))
	if len(inv.Services) != 1 || inv.Services[0].Spec.Ports[0].Port != 90 {
		t.Fatalf("services = %+v", inv.Services)
	}
}

// An EndpointSlice is read with the Service it names; a later one of the same name replaces it.
func TestLoadEndpointSlice(t *testing.T) {
	inv := New()
	doc := "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: db-1, namespace: x, labels: {kubernetes.io/service-name: db}}\n" +
		"addressType: IPv4\nports: [{name: tcp, port: %s}]\nendpoints: [{addresses: [10.0.0.1], conditions: {ready: false}}]\n"
	for i, port := range []string{"5432", "6432"} {
		if err := inv.AddYAML(fmt.Sprint(i), []byte(strings.Replace(doc, "%s", port, 1))); err != nil {
			t.Fatal(err)
		}
	}
	if len(inv.EndpointSlices) != 1 {
		t.Fatalf("slices = %d, want 1", len(inv.EndpointSlices))
	}
	es := inv.EndpointSlices[0]
	if es.Service != "db" || es.Namespace != "x" || *es.Ports[0].Port != 6432 || *es.Endpoints[0].Conditions.Ready {
		t.Errorf("slice = %+v", es)
	}
	if inv.Clone().EndpointSlices[0] != es {
		t.Error("Clone dropped the slices")
	}
}
