package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestUpsertIndex checks that a later document replaces an earlier one with the
// same kind, namespace and name, also after the lists were changed by other
// means than AddYAML (the index behind upsert is then rebuilt).
func TestUpsertIndex(t *testing.T) {
	svc := func(name, port string) string {
		return "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: a}\nspec: {ports: [{port: " + port + "}]}\n"
	}
	inv := New()
	if err := inv.AddYAML("one", []byte(svc("sx", "1")+svc("sy", "2")+svc("sx", "3"))); err != nil {
		t.Fatal(err)
	}
	if len(inv.Services) != 2 || inv.Service("a", "sx").Spec.Ports[0].Port != 3 {
		t.Fatalf("got %d services, x on %v", len(inv.Services), inv.Service("a", "sx").Spec.Ports)
	}
	created := inv.Service("a", "sx").Created

	// Changed from outside: an object appended, and one replaced in place.
	inv.Services = append(inv.Services, &Service{Meta: Meta{Kind: "Service", Name: "sz", Namespace: "a"}})
	inv.Services[1] = &Service{Meta: Meta{Kind: "Service", Name: "sw", Namespace: "a"}}
	if err := inv.AddYAML("two", []byte(svc("sz", "4")+svc("sw", "5")+svc("sx", "6"))); err != nil {
		t.Fatal(err)
	}
	if len(inv.Services) != 3 {
		t.Fatalf("got %d services, want x, w, z", len(inv.Services))
	}
	for name, port := range map[string]int32{"sx": 6, "sw": 5, "sz": 4} {
		if got := inv.Service("a", name).Spec.Ports[0].Port; got != port {
			t.Errorf("%s: port %d, want %d", name, got, port)
		}
	}
	if inv.Service("a", "sx").Created != created {
		t.Errorf("x lost its creation order")
	}

	// A clone loads on its own.
	c := inv.Clone()
	if err := c.AddYAML("three", []byte(svc("sv", "7")+svc("sx", "8"))); err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != 4 || c.Service("a", "sx").Spec.Ports[0].Port != 8 || inv.Service("a", "sx").Spec.Ports[0].Port != 6 || len(inv.Services) != 3 {
		t.Errorf("clone: %d services, x %d; original: %d services, x %d", len(c.Services), c.Service("a", "sx").Spec.Ports[0].Port,
			len(inv.Services), inv.Service("a", "sx").Spec.Ports[0].Port)
	}
}

// TestAddYAMLParallel checks a stream long enough to be decoded on several
// goroutines: objects keep the stream's order and creation order, a later
// document wins, and an error keeps exactly the documents before it.
func TestAddYAMLParallel(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: s%d, namespace: a}\nspec: {ports: [{port: %d}]}\n", i%200, i+1)
	}
	inv := New()
	if err := inv.AddYAML("many", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if len(inv.Services) != 200 {
		t.Fatalf("got %d services, want 200", len(inv.Services))
	}
	for i, s := range inv.Services {
		if s.Name != fmt.Sprintf("s%d", i) {
			t.Fatalf("service %d is %s", i, s.Name)
		}
		want := int32(i + 1)
		if i < 100 {
			want = int32(i + 201) // replaced by the later document
		}
		if s.Spec.Ports[0].Port != want {
			t.Errorf("%s: port %d, want %d", s.Name, s.Spec.Ports[0].Port, want)
		}
		if i > 0 && !inv.Services[i-1].Created.Before(s.Created) {
			t.Errorf("%s is not created after %s", s.Name, inv.Services[i-1].Name)
		}
	}

	b.WriteString("---\napiVersion: v1\nkind: Service\nmetadata: {name: [broken]}\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: late%d, namespace: a}\n", i)
	}
	inv = New()
	err := inv.AddYAML("broken", []byte(b.String()))
	var de *DocumentError
	if !errors.As(err, &de) || de.Index != 300 {
		t.Fatalf("got %v, want an error for document 300", err)
	}
	if len(inv.Services) != 200 {
		t.Errorf("got %d services, want the 200 before the broken document", len(inv.Services))
	}
}
