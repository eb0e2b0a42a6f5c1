package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeName is the Node every Pod CreatePodRunning makes runs on. The node has no kubelet: it
// exists because Kubernetes' EndpointSlice controller leaves out a Pod whose Node it cannot find.
const NodeName = "testenv-node"

// ensureNode creates the Node NodeName unless it exists.
func (c *Cluster) ensureNode(ctx context.Context) error {
	c.nodeOnce.Do(func() {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName}}
		_, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.nodeErr = fmt.Errorf("creating node %s: %w", NodeName, err)
		}
	})
	return c.nodeErr
}

// StartEndpointSlices runs Kubernetes' own EndpointSlice controller (the endpointslices command
// that `make testenv` builds from the kube-apiserver's Kubernetes module) for the given
// namespaces until the test ends: the Services there get the slices a real cluster gives them,
// from the Pods' readiness, deletion and ports, rather than SyncEndpointSlices' own. A namespace
// it runs for must not also get SyncEndpointSlices.
func StartEndpointSlices(t testing.TB, env *Env, namespaces ...string) {
	t.Helper()
	if env.EndpointSlicesBin == "" {
		t.Fatalf("the test control plane names no EndpointSlice controller binary (MESHSCOPE_TESTENV_ENDPOINTSLICES_BIN " +
			"in its env file): restart it with `make testenv-down testenv`")
	}
	args := []string{"--kubeconfig=" + env.Kubeconfig}
	for _, ns := range namespaces {
		args = append(args, "--namespace="+ns)
	}
	log := filepath.Join(t.TempDir(), "endpointslices.log")
	logf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.EndpointSlicesBin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	exited := runForTest(t, "EndpointSlice controller", cmd, logf, log)
	// Started once it says so: the slices themselves are waited for by what reads them.
	awaitReady(t, "EndpointSlice controller", log, exited, PushTimeout, 100*time.Millisecond,
		func(context.Context) error {
			b, err := os.ReadFile(log)
			if err != nil || !strings.Contains(string(b), "endpointslices: running") {
				return fmt.Errorf("no start line in %s", log)
			}
			return nil
		},
		func(error) string { return fmt.Sprintf("did not start in %s", PushTimeout) })
}
