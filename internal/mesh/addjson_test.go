package mesh

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// AddJSON adds what AddYAML adds from the same JSON, object for object, and fails alike.
func TestAddJSON_asAddYAML(t *testing.T) {
	docs, err := SplitDocuments("seed", []byte(fixture.Seed))
	if err != nil {
		t.Fatal(err)
	}
	viaYAML, viaJSON := New(), New()
	for _, d := range docs {
		js, err := yaml.YAMLToJSON(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		if string(js) == "null" {
			continue
		}
		if err := viaYAML.AddYAML("cluster:x", js); err != nil {
			t.Fatal(err)
		}
		if err := viaJSON.AddJSON("cluster:x", js); err != nil {
			t.Fatal(err)
		}
	}
	if viaJSON.ObjectCount() == 0 || viaJSON.ObjectCount() != viaYAML.ObjectCount() {
		t.Fatalf("objects: %d through AddJSON, %d through AddYAML", viaJSON.ObjectCount(), viaYAML.ObjectCount())
	}
	if !reflect.DeepEqual(viaJSON, viaYAML) {
		t.Fatal("AddJSON and AddYAML built different inventories from the same documents")
	}

	for _, bad := range []string{
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"y"},"spec":{"ports":[{"port":"eighty"}]}}`,
		`{"kind":"Service","metadata":{"name":"x"}}`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"Service","metadata":{"name":"x","namespace":"a"},"spec":{"ports":"none"}}]}`,
	} {
		a, b := New(), New()
		errYAML, errJSON := a.AddYAML("cluster:x", []byte(bad)), b.AddJSON("cluster:x", []byte(bad))
		if errJSON == nil || errYAML == nil || errJSON.Error() != errYAML.Error() {
			t.Errorf("%s:\nAddJSON: %v\nAddYAML: %v", bad, errJSON, errYAML)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the objects before the broken one differ", bad)
		}
	}
}
