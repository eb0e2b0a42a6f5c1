package kube

import (
	"errors"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// decodeItem sets the listed apiVersion and kind on a list's item, over the item's own, and
// refuses an item that is not an object, naming the kind.
func TestDecodeItem(t *testing.T) {
	inv := mesh.New()
	d, err := decodeItem("v1", "Service", []byte(`{"metadata":{"name":"web","namespace":"shop"},"spec":{"ports":[{"name":"http","port":80}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	inv.Add(d)
	d, err = decodeItem("networking.istio.io/v1", "ServiceEntry",
		[]byte(`{"apiVersion":"networking.istio.io/v1beta1","kind":"Other","metadata":{"name":"api","namespace":"shop"},"spec":{"hosts":["api.example.com"],"ports":[{"number":443,"name":"tls","protocol":"TLS"}],"resolution":"DNS"}}`))
	if err != nil {
		t.Fatal(err)
	}
	inv.Add(d)
	if len(inv.Services) != 1 || inv.Services[0].Key() != "shop/web" || inv.Services[0].Source != "cluster:Service/shop/web#0" {
		t.Fatalf("services: %+v", inv.Services)
	}
	if len(inv.ServiceEntries) != 1 || inv.ServiceEntries[0].APIVersion != "networking.istio.io/v1" || inv.ServiceEntries[0].Kind != "ServiceEntry" {
		t.Fatalf("service entries: %+v", inv.ServiceEntries)
	}
	for _, item := range []string{`[1]`, `"x"`, `{`, ``} {
		if _, err := decodeItem("v1", "Service", []byte(item)); err == nil || !strings.Contains(err.Error(), "Service") {
			t.Errorf("item %q: error %v, want one naming the kind", item, err)
		}
	}
	// An object the inventory refuses names itself.
	_, err = decodeItem("networking.istio.io/v1", "ServiceEntry", []byte(`{"metadata":{"name":"bad","namespace":"shop"},"spec":{"hosts":["*"],"ports":[{"number":0}]}}`))
	var ie *InvalidObjectError
	if !errors.As(err, &ie) || ie.Namespace != "shop" || ie.Name != "bad" || ie.Kind != "ServiceEntry" {
		t.Errorf("a refused item: %v, want an *InvalidObjectError naming shop/bad", err)
	}
	// An object whose metadata does not decode still names itself, from what of it does; one
	// with no name at all is an item that is not an object.
	_, err = decodeItem("v1", "Service", []byte(`{"metadata":{"name":"odd","namespace":"shop","labels":{"app":1}}}`))
	if !errors.As(err, &ie) || ie.Namespace != "shop" || ie.Name != "odd" || ie.Kind != "Service" {
		t.Errorf("an item with broken labels: %v, want an *InvalidObjectError naming shop/odd", err)
	}
	_, err = decodeItem("v1", "Service", []byte(`{"metadata":{"name":7}}`))
	if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), "not an object") {
		t.Errorf("an item with a numeric name: %v, want one saying it is not an object", err)
	}
}
