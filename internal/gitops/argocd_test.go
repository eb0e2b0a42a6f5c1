package gitops

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"
)

// crdValidator checks objects against one version of a CRD the way the API
// server does on create: the OpenAPI schema (kube-openapi's validator, which
// k8s.io/apiextensions-apiserver wraps), metadata as ObjectMeta, and no field
// the schema does not know (what the server would prune, or reject with
// strict field validation).
type crdValidator struct {
	apiVersion, kind string
	schema           *spec.Schema
}

func loadCRD(t *testing.T, file, version string) *crdValidator {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		s := &spec.Schema{}
		if err := json.Unmarshal(v.Schema.OpenAPIV3Schema, s); err != nil {
			t.Fatal(err)
		}
		return &crdValidator{apiVersion: crd.Spec.Group + "/" + version, kind: crd.Spec.Names.Kind, schema: s}
	}
	t.Fatalf("%s has no version %s", file, version)
	return nil
}

// validate returns every problem with the YAML object, sorted.
func (v *crdValidator) validate(doc []byte) []string {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return []string{err.Error()}
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil { // integers as int64, like unstructured
		return []string{err.Error()}
	}
	var out []string
	if obj["apiVersion"] != v.apiVersion || obj["kind"] != v.kind {
		out = append(out, fmt.Sprintf("apiVersion/kind %v/%v, want %s %s", obj["apiVersion"], obj["kind"], v.apiVersion, v.kind))
	}
	res := validate.NewSchemaValidator(v.schema, nil, "", strfmt.Default).Validate(obj)
	for _, e := range res.Errors {
		out = append(out, e.Error())
	}
	metaJSON, _ := json.Marshal(obj["metadata"])
	var meta metav1.ObjectMeta
	if err := yaml.UnmarshalStrict(metaJSON, &meta); err != nil {
		out = append(out, "metadata: "+err.Error())
	}
	for _, e := range apivalidation.ValidateObjectMeta(&meta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata")) {
		out = append(out, e.Error())
	}
	for k, val := range obj {
		if k == "metadata" {
			continue
		}
		prop, ok := v.schema.Properties[k]
		if !ok {
			out = append(out, "unknown field "+k)
			continue
		}
		out = append(out, unknownFields(val, &prop, k)...)
	}
	sort.Strings(out)
	return out
}

// unknownFields lists the fields of obj that the structural schema s does not
// declare, as the API server's pruning would drop them.
func unknownFields(obj any, s *spec.Schema, at string) []string {
	if preserve, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields"); preserve {
		return nil
	}
	var out []string
	switch o := obj.(type) {
	case map[string]any:
		for k, val := range o {
			p := at + "." + k
			if prop, ok := s.Properties[k]; ok {
				out = append(out, unknownFields(val, &prop, p)...)
				continue
			}
			if ap := s.AdditionalProperties; ap != nil {
				if ap.Schema != nil {
					out = append(out, unknownFields(val, ap.Schema, p)...)
				} else if !ap.Allows {
					out = append(out, "unknown field "+p)
				}
				continue
			}
			out = append(out, "unknown field "+p)
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for i, val := range o {
				out = append(out, unknownFields(val, s.Items.Schema, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return out
}

func applicationValidator(t *testing.T) *crdValidator {
	return loadCRD(t, filepath.Join("testdata", "argocd", "application-crd.yaml"), "v1alpha1")
}

// Every Application meshscope writes is valid under Argo CD's own CRD schema.
func TestApplicationsMatchArgoCDSchema(t *testing.T) {
	v := applicationValidator(t)
	settings := []ArgoCD{
		{RepoURL: "https://git.example.com/platform/gitops.git"},
		{RepoURL: "git@github.com:example/gitops.git", TargetRevision: "v1.2.3", Project: "mesh",
			DestinationServer: "https://10.0.0.1:6443", PathPrefix: "clusters/eu/mesh", Namespace: "gitops",
			NamePrefix: "sidecars", SyncPolicy: &SyncPolicy{Automated: true}},
		{RepoURL: "https://x/y.git", SyncPolicy: &SyncPolicy{Automated: true, Prune: true, SelfHeal: true}},
	}
	for i, a := range settings {
		s := Settings{Environments: map[string]Environment{"dev": {}, "prod": {}}, ArgoCD: &a}
		l, probs := Build(Input{Sidecars: []string{seedFoo}, Settings: s})
		if len(probs) > 0 {
			t.Fatal(probs)
		}
		for _, env := range []string{"dev", "prod"} {
			doc := l.Files[ApplicationFile(env)]
			if errs := v.validate(doc); len(errs) > 0 {
				t.Errorf("settings %d, %s: the Application is invalid:\n%s\n%s", i, env, strings.Join(errs, "\n"), doc)
			}
		}
	}
	// The golden layouts too.
	for _, tc := range goldenCases {
		l, _ := Build(tc.in)
		for p, doc := range l.Files {
			if strings.HasPrefix(p, ArgoCDDir+"/") && p != ArgoCDDir+"/"+KustomizationFile {
				if errs := v.validate(doc); len(errs) > 0 {
					t.Errorf("%s %s: %s", tc.name, p, strings.Join(errs, "\n"))
				}
			}
		}
	}
}

// The validator is not a rubber stamp: it rejects what the API server rejects.
func TestApplicationValidatorRejects(t *testing.T) {
	v := applicationValidator(t)
	good := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: meshscope-dev
  namespace: argocd
spec:
  project: default
  source: {repoURL: "https://x/y.git", path: overlays/dev, targetRevision: HEAD}
  destination: {server: "https://kubernetes.default.svc"}
`
	if errs := v.validate([]byte(good)); len(errs) > 0 {
		t.Fatalf("a valid Application is rejected: %v", errs)
	}
	cases := map[string]struct{ from, to, want string }{
		"misspelt field":    {"repoURL:", "repoUrl:", "unknown field spec.source.repoUrl"},
		"missing project":   {"  project: default\n", "", "spec.project in body is required"},
		"wrong type":        {"project: default", "project: [default]", "spec.project in body must be of type string"},
		"bad name":          {"name: meshscope-dev", "name: Meshscope_Dev", "metadata.name"},
		"unknown top field": {"kind: Application\n", "kind: Application\nstatus2: {}\n", "unknown field status2"},
		"bad sync option":   {"  destination:", "  syncPolicy: {automated: {prune: yes-please}}\n  destination:", "spec.syncPolicy.automated.prune in body must be of type boolean"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(good, tc.from, tc.to, 1)
			errs := v.validate([]byte(doc))
			if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
				t.Errorf("errors %q, want one containing %q", errs, tc.want)
			}
		})
	}
}
