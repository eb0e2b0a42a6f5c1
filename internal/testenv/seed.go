package testenv

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplySeed applies the seed scenario's manifests (dir is examples/seed/manifests)
// with its namespaces foo and bar renamed to the given ones. The seed's
// default/kubernetes Service is skipped: the API server has its own. It then
// does what the Deployments' controllers and kubelets would: one Running
// test-app pod (port 80) in each namespace, and the EndpointSlices. It returns
// the pods by the seed's namespace name, "foo" and "bar".
func (c *Cluster) ApplySeed(t testing.TB, dir, foo, bar string) map[string]*corev1.Pod {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("seed manifests in %s: %v", dir, err)
	}
	rename := RenameNamespaces(map[string]string{"foo": foo, "bar": bar})
	skipKubernetes := Skip(func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "Service" && u.GetNamespace() == "default" && u.GetName() == "kubernetes"
	})
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyYAML(t, string(b), rename, skipKubernetes)
	}
	port80 := corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP}
	app := map[string]string{"app": "test-app"}
	pods := map[string]*corev1.Pod{
		"foo": c.CreatePodRunning(t, foo, "test-app-"+RandomSuffix(5), app, UniqueIP(), port80),
		"bar": c.CreatePodRunning(t, bar, "test-app-"+RandomSuffix(5), app, UniqueIP(), port80),
	}
	c.SyncEndpointSlices(t, foo, bar)
	return pods
}
