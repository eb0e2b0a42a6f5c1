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
	// A token in the block replaces the kubeconfig user's client certificate, not joins it: the API
	// server would authenticate the certificate first.
	certConfig := filepath.Join(dir, "cert-config")
	if err := os.WriteFile(certConfig, []byte(strings.Replace(kubeconfig, "user: {token: from-file}",
		"user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", certConfig)
	rc, err = restConfig(Config{Host: "https://c.example", Token: "sa-token"})
	if err != nil || rc.BearerToken != "sa-token" || len(rc.CertData) != 0 || len(rc.KeyData) != 0 || rc.CertFile != "" {
		t.Fatalf("host + token over a kubeconfig with a client certificate: token %q cert %q key %q err %v", rc.BearerToken, rc.CertData, rc.KeyData, err)
	}
	rc, err = restConfig(Config{})
	if err != nil || string(rc.CertData) != "cert" {
		t.Fatalf("without credentials in the block, the kubeconfig's apply: %q %v", rc.CertData, err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	if _, err := restConfig(Config{}); err == nil || !strings.Contains(err.Error(), "KUBECONFIG") {
		t.Errorf("no config: %v", err)
	}
}

func TestClassify_ForbiddenAndConflictNameTheFix(t *testing.T) {
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

// TestClientLimitsRequestsAboveClientGoDefaults: the client sends up to DefaultQPS requests
// a second, in bursts of DefaultBurst, not client-go's 5 and 10, under which an apply of
// many scopes waits on the client; and it bounds each request with DefaultRequestTimeout.
func TestClientLimitsRequestsAboveClientGoDefaults(t *testing.T) {
	c := New(Config{Host: "https://unreachable.invalid:1"})
	if err := c.init(); err != nil {
		t.Fatal(err)
	}
	if c.rc.QPS != DefaultQPS || c.rc.Burst != DefaultBurst || c.rc.Timeout != DefaultRequestTimeout {
		t.Errorf("QPS %v, burst %d, timeout %v; want %v, %d, %v", c.rc.QPS, c.rc.Burst, c.rc.Timeout, float32(DefaultQPS), DefaultBurst, DefaultRequestTimeout)
	}
}

// TestRestConfig_KubeconfigProblems: a missing file, a file that does not parse and an unknown
// context are each named as such, not as an unreachable cluster or a missing configuration.
func TestRestConfig_KubeconfigProblems(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config")
	bad := filepath.Join(dir, "broken")
	if err := os.WriteFile(good, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nclusters: {not: [a list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	for _, tc := range []struct {
		name    string
		cfg     Config
		problem ConfigProblem
		want    string
	}{
		{"missing file", Config{ConfigPaths: []string{filepath.Join(dir, "nope")}}, ConfigFileMissing, "nope does not exist"},
		{"unparseable file", Config{ConfigPaths: []string{bad}}, ConfigFileInvalid, "broken cannot be parsed"},
		{"unknown context", Config{ConfigPaths: []string{good}, ConfigContext: "ctx-c"}, ConfigContextUnknown, `no context "ctx-c"; it has "ctx-a", "ctx-b"`},
	} {
		_, err := restConfig(tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Problem != tc.problem || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a ConfigError (%d) saying %q", tc.name, err, tc.problem, tc.want)
		}
	}
	t.Setenv("KUBECONFIG", bad)
	var ce *ConfigError
	if _, err := restConfig(Config{}); !errors.As(err, &ce) || ce.Problem != ConfigFileInvalid {
		t.Errorf("KUBECONFIG naming a broken file: err = %v, want ConfigFileInvalid", err)
	}
}
