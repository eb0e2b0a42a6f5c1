package xdsprobe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestNode_SidecarIDAndMetadata(t *testing.T) {
	p := Proxy{
		Namespace: "foo", Name: "test-app-1", IP: "10.1.2.3",
		Labels:   map[string]string{"app": "test-app"},
		PodPorts: []PodPort{{ContainerPort: 80, Protocol: "TCP"}},
		Metadata: map[string]string{"INTERCEPTION_MODE": "TPROXY"},
	}
	n, err := p.node()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.GetId(), "sidecar~10.1.2.3~test-app-1.foo~foo.svc.cluster.local"; got != want {
		t.Errorf("node id = %q, want %q", got, want)
	}
	m := n.GetMetadata().GetFields()
	for key, want := range map[string]string{
		"NAMESPACE":         "foo",
		"INSTANCE_IPS":      "10.1.2.3", // istiod's StringList: a comma-separated string
		"ISTIO_VERSION":     "1.31.0",
		"CLUSTER_ID":        "Kubernetes",
		"POD_PORTS":         `[{"containerPort":80,"protocol":"TCP"}]`, // a JSON document in a string
		"INTERCEPTION_MODE": "TPROXY",
	} {
		if got := m[key].GetStringValue(); got != want {
			t.Errorf("metadata %s = %q, want %q", key, got, want)
		}
	}
	if got := m["LABELS"].GetStructValue().GetFields()["app"].GetStringValue(); got != "test-app" {
		t.Errorf("metadata LABELS.app = %q, want test-app", got)
	}
	if _, err := (Proxy{Namespace: "foo"}).node(); err == nil {
		t.Error("a proxy without name and IP: no error")
	}
}

func TestVerify_RefusesAForeignIstiod(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/clusterz":
			_, _ = w.Write([]byte(`[{"id":"testenv-1a2b","syncStatus":"synced"},{"id":"remote","secretName":"s"}]`))
		case "/debug/adsz":
			_, _ = w.Write([]byte(`{"totalClients":1,"clients":[{"connectionId":"web-0.wait-x-17"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	if err := (ControlPlane{HTTPAddr: addr, ClusterID: "testenv-1a2b"}).Verify(ctx); err != nil {
		t.Errorf("our istiod: %v", err)
	}
	err := (ControlPlane{HTTPAddr: addr, ClusterID: "testenv-9z9z"}).Verify(ctx)
	if !errors.Is(err, ErrForeignIstiod) || !strings.Contains(err.Error(), "[testenv-1a2b remote]") {
		t.Errorf("a foreign istiod: err = %v, want ErrForeignIstiod naming its clusters", err)
	}
	cp := ControlPlane{XDSAddr: "127.0.0.1:1", HTTPAddr: addr, ClusterID: "testenv-1a2b"}
	if err := cp.holds(ctx, Proxy{Namespace: "wait-x", Name: "web-0"}); err != nil {
		t.Errorf("a connection istiod lists: %v", err)
	}
	if err := cp.holds(ctx, Proxy{Namespace: "wait-x", Name: "web-1"}); !errors.Is(err, ErrForeignIstiod) {
		t.Errorf("a connection istiod does not list: err = %v, want ErrForeignIstiod", err)
	}
	if err := (ControlPlane{HTTPAddr: addr}).Verify(ctx); err != nil {
		t.Errorf("no ClusterID to check: %v", err)
	}
}

// listenerName reads the name of an encoded Listener, whatever fields come before it.
func TestListenerName(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 2, protowire.BytesType) // address, a message
	b = protowire.AppendBytes(b, []byte{0x0a, 0x00})
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "10.96.0.10_5432")
	if got, err := listenerName(b); err != nil || got != "10.96.0.10_5432" {
		t.Errorf("listenerName = %q, %v", got, err)
	}
	if _, err := listenerName(b[:3]); err == nil {
		t.Error("a truncated listener decoded without error")
	}
	if _, err := listenerName(nil); err == nil {
		t.Error("a listener without a name decoded without error")
	}
}
