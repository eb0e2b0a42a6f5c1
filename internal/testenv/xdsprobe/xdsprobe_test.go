package xdsprobe

import (
	"testing"
)

func TestNode(t *testing.T) {
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
