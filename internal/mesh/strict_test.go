package mesh

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddYAML_Strict: input a cluster would refuse, or that meshscope would silently misread,
// is an error naming the source, the document, the line in the source and the fix.
func TestAddYAML_Strict(t *testing.T) {
	const ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
	svc := func(name, port string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: a}\nspec: {ports: [{port: " + port + "}]}\n"
	}
	se := func(host string, port string) string {
		return "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: ext, namespace: a}\n" +
			"spec: {hosts: [\"" + host + "\"], ports: [{number: " + port + ", name: http, protocol: HTTP}]}\n"
	}
	for _, tc := range []struct {
		name, yaml  string
		index, line int
		want        []string
	}{
		{"two manifests concatenated without ---", ns + "---\n" + svc("s", "80") + svc("t", "80"), 1, 9,
			[]string{`key "apiVersion" already set in map`, `line 10: key "kind"`, `concatenated without a "---"`}},
		{"a key given twice", ns + "---\napiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\nspec: {ports: [{port: 80}]}\nspec: {}\n", 1, 9,
			[]string{`key "spec" already set in map`, "remove one of them"}},
		{"a syntax error names the line of the file", ns + "---\n# a comment\n\n" + "kind: Service\nmetadata: {name: [oops\n", 1, 8,
			[]string{"did not find expected"}},
		{"a near-miss of Service", ns + "---\napiVersion: v1\nkind: Servic\nmetadata: {name: s, namespace: a}\n", 1, 5,
			[]string{`unknown kind "Servic": did you mean "Service"?`}},
		{"a near-miss of Sidecar", "apiVersion: networking.istio.io/v1\nkind: Sidecars\nmetadata: {name: s, namespace: a}\n", 0, 1,
			[]string{`did you mean "Sidecar"?`}},
		{"a kind in the wrong lower case", "apiVersion: apps/v1\nkind: deployment\nmetadata: {name: d, namespace: a}\n", 0, 1,
			[]string{`did you mean "Deployment"?`}},
		{"a Kubernetes kind in Istio's group", "apiVersion: networking.istio.io/v1\nkind: Service\nmetadata: {name: s, namespace: a}\n", 0, 1,
			[]string{`Service is not a kind of API group "networking.istio.io": use apiVersion v1`}},
		{"a Service name the API server refuses", svc("Bad_Name", "80"), 0, 1,
			[]string{`metadata.name "Bad_Name" is not a valid Service name`}},
		{"a port out of range", svc("s", "99999"), 0, 1,
			[]string{"spec.ports[0].port 99999", "between 1 and 65535"}},
		{"two unnamed ports", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\nspec: {ports: [{port: 80}, {port: 81}]}\n", 0, 1,
			[]string{"spec.ports[0].name: a Service with more than one port must name each"}},
		{"a ServiceEntry host Istio refuses", se("not a host!!", "80"), 0, 1,
			[]string{`spec.hosts[0]: domain name "not a host!!" invalid`}},
		{"a ServiceEntry with the full wildcard", se("*", "80"), 0, 1,
			[]string{`spec.hosts[0]: the full wildcard "*" is not allowed`}},
		{"a ServiceEntry port out of range", se("api.example.com", "99999"), 0, 1,
			[]string{"spec.ports[0].number: port number 99999 must be in the range 1..65535"}},
		{"two ports of one number and protocol", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\n" +
			"spec: {ports: [{name: a, port: 9000}, {name: b, port: 9000, protocol: TCP}, {name: c, port: 9000, protocol: SCTP}]}\n", 0, 1,
			[]string{"spec.ports[1]: duplicate port 9000/TCP", "the API server refuses"}},
		{"a ServiceEntry port number given twice", "apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata: {name: ext, namespace: a}\n" +
			"spec: {hosts: [d.example.com], ports: [{number: 443, name: tls, protocol: TLS}, {number: 443, name: https, protocol: HTTPS}]}\n", 0, 1,
			[]string{"spec.ports[1].number 443: port already defined"}},
		{"a container port out of range", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: a}\n" +
			"spec: {template: {spec: {containers: [{name: c, ports: [{containerPort: 70000}]}]}}}\n", 0, 1,
			[]string{"container port 0", "70000"}},
		{"a DestinationRule host", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: d, namespace: a}\nspec: {host: \"a..b\"}\n", 0, 1,
			[]string{"spec.host: domain name"}},
		{"a namespace name", "apiVersion: v1\nkind: Namespace\nmetadata: {name: Team_A}\n", 0, 1,
			[]string{`"Team_A" is not a valid Namespace name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := New().AddYAML("f.yaml", []byte(tc.yaml))
			var de *DocumentError
			if !errors.As(err, &de) {
				t.Fatalf("error = %v, want a *DocumentError", err)
			}
			if de.Source != "f.yaml" || de.Index != tc.index || de.Line != tc.line {
				t.Errorf("error names %s document %d line %d, want f.yaml document %d line %d: %v", de.Source, de.Index, de.Line, tc.index, tc.line, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestAddYAML_IgnoresKindsItDoesNotRead: other kinds, of the groups meshscope reads or not,
// stay ignored, even when they are one edit away from a kind it reads (Node and Pod).
func TestAddYAML_IgnoresKindsItDoesNotRead(t *testing.T) {
	docs := []string{
		"apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: a}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: a}\ndata: {k: v}\n",
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.example.com}\n",
		"apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g, namespace: a}\n",
		"apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: c, namespace: a}\n",
		"apiVersion: example.com/v1\nkind: Servic\nmetadata: {name: x, namespace: a}\n",
	}
	inv := New()
	if err := inv.AddYAML("f.yaml", []byte(strings.Join(docs, "---\n"))); err != nil {
		t.Fatal(err)
	}
	if inv.Empty() != true {
		t.Errorf("the inventory holds objects of kinds meshscope does not read")
	}
}

// TestAddYAML_SeedStillLoads: the strict loader reads every example of the repository.
func TestAddYAML_SeedStillLoads(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := New().AddYAML(f, b); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestSplitDocuments_Lines(t *testing.T) {
	docs, err := SplitDocuments("f", []byte("---\n# c\na: 1\n---\n---  # two separators\n\nb: 2\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Line != 2 || docs[1].Line != 6 || docs[1].Index != 1 {
		t.Fatalf("documents = %+v, want two, starting on lines 2 and 6", docs)
	}
}
