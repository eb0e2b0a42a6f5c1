package testenv_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestAPIServerRestart: a private API server serves the Istio CRDs, is not the shared one, refuses
// connections while stopped (the shared one still answers), and comes back on the same URL with
// the same data.
func TestAPIServerRestart(t *testing.T) {
	shared := testenv.Connect(t)
	a := testenv.StartAPIServer(t, shared.Env)
	c := a.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	if _, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the private API server does not serve Sidecars: %v", err)
	}
	name := "marker-" + testenv.RandomSuffix(8)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	if _, err := c.Kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the shared API server has the private one's ConfigMap %s (err %v)", name, err)
	}

	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("stopping a stopped API server: %v", err)
	}
	_, err := c.Kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a stopped API server answered: err = %v, want connection refused", err)
	}
	if _, err := shared.Kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the shared API server stopped with the private one: %v", err)
	}

	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatalf("starting a running API server: %v", err)
	}
	got, err := c.Kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the restart on %s: %v", a.URL, err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("after the restart, ConfigMap %s holds %v, want k=v", name, got.Data)
	}
}
