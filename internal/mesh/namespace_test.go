package mesh

import (
	"slices"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/fixture"
)

// TestHasNamespaceAgreesWithNamespaceNames: a namespace with a manifest, or only with objects
// in it, is had; any other is not.
func TestHasNamespaceAgreesWithNamespaceNames(t *testing.T) {
	inv := New()
	if err := inv.AddYAML("seed", []byte(fixture.Seed)); err != nil {
		t.Fatal(err)
	}
	// A Service in a namespace without a Namespace manifest.
	if err := inv.AddYAML("extra", []byte("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: orphan}\nspec: {ports: [{port: 80}]}\n")); err != nil {
		t.Fatal(err)
	}
	names := inv.NamespaceNames()
	if !slices.Contains(names, "orphan") || !slices.Contains(names, "foo") {
		t.Fatalf("NamespaceNames %v lacks orphan or foo", names)
	}
	for _, ns := range names {
		if !inv.HasNamespace(ns) {
			t.Errorf("HasNamespace(%q) = false, but NamespaceNames lists it", ns)
		}
	}
	for _, ns := range []string{"ghost", "", "fo"} {
		if inv.HasNamespace(ns) {
			t.Errorf("HasNamespace(%q) = true", ns)
		}
	}
}
