package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: https://a.example:6443}
- name: b
  cluster: {server: https://b.example:6443}
users:
- name: u
  user: {token: from-file}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := restConfig(Config{ConfigPaths: []string{path}})
	if err != nil || rc.Host != "https://a.example:6443" || rc.BearerToken != "from-file" {
		t.Fatalf("current context: host %q token %q err %v", rc.Host, rc.BearerToken, err)
	}
	rc, err = restConfig(Config{ConfigPaths: []string{path}, ConfigContext: "ctx-b", Token: "override"})
	if err != nil || rc.Host != "https://b.example:6443" || rc.BearerToken != "override" {
		t.Fatalf("context + token: host %q token %q err %v", rc.Host, rc.BearerToken, err)
	}
	t.Setenv("KUBECONFIG", path)
	rc, err = restConfig(Config{})
	if err != nil || rc.Host != "https://a.example:6443" {
		t.Fatalf("KUBECONFIG: %v %v", rc, err)
	}
	rc, err = restConfig(Config{Host: "https://c.example", Insecure: true, Exec: &ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "get-token"}})
	if err != nil || rc.Host != "https://c.example" || rc.ExecProvider == nil || rc.ExecProvider.Command != "get-token" {
		t.Fatalf("host + exec: %+v %v", rc, err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	if _, err := restConfig(Config{}); err == nil || !strings.Contains(err.Error(), "KUBECONFIG") {
		t.Errorf("no config: %v", err)
	}
}

func TestClassify(t *testing.T) {
	gvr := SidecarGVR
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: gvr.Group, Resource: gvr.Resource}, "x", errors.New("no"))
	var pe *PermissionError
	if err := classify(forbidden, "patch", gvr, "foo", "Sidecar foo/x"); !errors.As(err, &pe) ||
		!strings.Contains(err.Error(), `grant verb "patch" on resource "sidecars" of apiGroup networking.istio.io`) {
		t.Errorf("forbidden: %v", err)
	}
	conflict := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Message: `Apply failed with 1 conflict: conflict with "kubectl-edit" using networking.istio.io/v1: .spec.egress`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
			Message: `conflict with "kubectl-edit" using networking.istio.io/v1`, Field: ".spec.egress"}}}}}
	var ce *ConflictError
	if err := classify(conflict, "patch", gvr, "foo", "Sidecar foo/x"); !errors.As(err, &ce) || ce.Managers[0] != "kubectl-edit" || ce.Fields[0] != ".spec.egress" {
		t.Errorf("conflict: %#v", err)
	}
}

func TestLazyClientNeverDialsOnNew(t *testing.T) {
	c := New(Config{Host: "https://unreachable.invalid:1"})
	if c.FieldManager() != DefaultFieldManager {
		t.Errorf("field manager = %q", c.FieldManager())
	}
	if c.dyn != nil || c.rc != nil {
		t.Error("clients built before first use")
	}
}
