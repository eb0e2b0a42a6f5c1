package gitops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

// exampleDir is examples/gitops, whose mesh/ is the committed layout of main.tf.
var exampleDir = filepath.Join("..", "..", "examples", "gitops")

// seedSidecars compiles the seed's two scopes as examples/gitops/main.tf
// declares them, with the provider's defaults.
func seedSidecars(t *testing.T) map[string]string {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("seed", []byte(fixture.Seed)); err != nil {
		t.Fatal(err)
	}
	http80 := []scope.Ingress{{Port: 80, Protocol: "HTTP", DefaultEndpoint: "127.0.0.1:80"}}
	decls := map[string]scope.Declaration{
		"foo/test-app": {Namespace: "foo", Selector: map[string]string{"app": "test-app"}, Ingress: http80},
		"bar/test-app": {Namespace: "bar", Selector: map[string]string{"app": "test-app"}, Ingress: http80,
			Dependencies: []scope.Dependency{{Service: "foo.foo", Ports: []uint32{80}}}},
	}
	out := map[string]string{}
	for key, d := range decls {
		res, probs := scope.Compile(inv, d, scope.Options{SystemHosts: []string{inv.Mesh.RootNamespace + "/*"}})
		for _, p := range probs {
			if !p.Warning {
				t.Fatalf("%s: %s: %s", key, p.Summary, p.Detail)
			}
		}
		out[key] = res.Manifest
	}
	return out
}

// objects parses a YAML stream into objects keyed by namespace/name.
func objects(t *testing.T, stream []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		meta := asMap(t, obj["metadata"])
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		out[ns+"/"+name] = obj
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", v)
	}
	return m
}

func asList(t *testing.T, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not a list", v)
	}
	return l
}

// member returns obj[key] as an object, adding an empty one when it is missing.
func member(t *testing.T, obj map[string]any, key string) map[string]any {
	t.Helper()
	if _, ok := obj[key]; !ok {
		obj[key] = map[string]any{}
	}
	return asMap(t, obj[key])
}

// expectedSidecars applies, by hand, what settings.yaml asks of each
// environment to the seed's Sidecars.
func expectedSidecars(t *testing.T, seed map[string]string, env string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for key, manifest := range seed {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
			t.Fatal(err)
		}
		meta, spec := member(t, obj, "metadata"), member(t, obj, "spec")
		member(t, meta, "labels")["environment"] = env
		switch env {
		case "dev":
			member(t, meta, "annotations")["example.com/owner"] = "platform-team"
			if key == "foo/test-app" {
				member(t, meta, "annotations")["example.com/debug"] = "true"
			}
		case "prod":
			spec["outboundTrafficPolicy"] = map[string]any{"mode": "REGISTRY_ONLY"}
			for _, l := range asList(t, spec["egress"]) {
				listener := asMap(t, l)
				listener["hosts"] = append(asList(t, listener["hosts"]), "kube-system/kube-dns.kube-system.svc.cluster.local")
			}
			if key == "bar/test-app" {
				asMap(t, asList(t, spec["ingress"])[0])["defaultEndpoint"] = "127.0.0.1:8080"
			}
		}
		out[key] = obj
	}
	return out
}

// The example's committed layout is what main.tf and settings.yaml render, and
// `kubectl kustomize overlays/dev` and `overlays/prod` output exactly the seed's
// Sidecars with each environment's changes. `go test -update` rewrites it.
func TestSeedExample(t *testing.T) {
	settingsYAML, err := os.ReadFile(filepath.Join(exampleDir, "settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := ParseSettings(settingsYAML)
	if err != nil {
		t.Fatal(err)
	}
	seed := seedSidecars(t)
	l, probs := Build(Input{Sidecars: []string{seed["foo/test-app"], seed["bar/test-app"]}, Settings: settings})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	dir := filepath.Join(exampleDir, "mesh")
	if *update {
		if _, err := Write(dir, l.Files, nil); err != nil {
			t.Fatal(err)
		}
	}
	changes, err := Diff(dir, l.Files, nil)
	if err != nil || len(changes) > 0 {
		t.Fatalf("examples/gitops/mesh is out of date (go test ./internal/gitops -update rewrites it): %v %v", changes, err)
	}

	for _, env := range []string{"dev", "prod"} {
		got := kubectlKustomize(t, filepath.Join(dir, "overlays", env))
		inMemory, err := BuildOverlay(l.Files, env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, inMemory) {
			t.Errorf("%s: kubectl kustomize differs from the in-memory build:\n%s\nin memory:\n%s", env, got, inMemory)
		}
		want := expectedSidecars(t, seed, env)
		if gotObjs := objects(t, got); !reflect.DeepEqual(gotObjs, want) {
			g, _ := json.MarshalIndent(gotObjs, "", "  ")
			w, _ := json.MarshalIndent(want, "", "  ")
			t.Errorf("%s: kubectl kustomize gives\n%s\nwant the seed's Sidecars with the %s changes:\n%s", env, g, env, w)
		}
	}

	v := applicationValidator(t)
	for _, env := range []string{"dev", "prod"} {
		if errs := v.validate(l.Files[ApplicationFile(env)]); len(errs) > 0 {
			t.Errorf("argocd/%s.yaml: %v", env, errs)
		}
	}
}
