// Package testenv gives acceptance tests the real control plane that `make testenv` starts: etcd,
// kube-apiserver and istiod on 127.0.0.1, built from source (see testenv.sh and README.md).
//
// There is no controller-manager, scheduler or kubelet. Tests create Pods and mark them Running
// themselves (CreatePodRunning), write the EndpointSlices the endpoint-slice controller would
// (SyncEndpointSlices) or run Kubernetes' own controller for their namespaces
// (StartEndpointSlices), and use unique namespaces (UniqueNamespace), because a deleted namespace
// stays Terminating for ever.
//
// Only tests import this package; the provider binary never does.
package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

const (
	// DirEnv names the state directory testenv.sh writes (pids, logs, kubeconfig, env).
	DirEnv = "MESHSCOPE_TESTENV_DIR"
	// DefaultDir is the state directory when DirEnv is unset.
	DefaultDir = "/tmp/meshscope-testenv"
)

// Env is a running test control plane, as described by the env file testenv.sh writes.
type Env struct {
	Dir            string // the state directory
	Kubeconfig     string // an admin kubeconfig (system:masters)
	XDSAddr        string // istiod's plaintext xDS address, 127.0.0.1:15010
	IstiodHTTPAddr string // istiod's HTTP address (/ready, /debug), 127.0.0.1:8080
	// ClusterID is istiod's CLUSTER_ID, unique to each `make testenv` start, so that a probe can
	// tell this istiod from any other on the machine.
	ClusterID string
	APIServer string // https://127.0.0.1:16443
	IstiodBin string // the pilot-discovery binary, for StartIstiod; empty on kind
	// EndpointSlicesBin is Kubernetes' EndpointSlice controller, for StartEndpointSlices; empty
	// on kind, whose controller-manager runs it for every namespace.
	EndpointSlicesBin string
	IstioCRDs         string // the Istio CRD manifest that was installed; empty on kind
	// EtcdBin and APIServerBin are the binaries the running etcd and kube-apiserver were started
	// from (testenv.sh records them in etcd.bin and kube-apiserver.bin), for StartAPIServer;
	// empty on kind.
	EtcdBin      string
	APIServerBin string
	Kind         bool // started by `make kind-up` rather than `make testenv`
	// InjectionURL is where istiod serves sidecar injection (https://localhost:<port>/inject,
	// under a certificate signed by the istiod CA that istio-ca-root-cert holds); empty on kind.
	InjectionURL string
}

// Dir is the state directory: $MESHSCOPE_TESTENV_DIR, else /tmp/meshscope-testenv.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return DefaultDir
}

// Load reads the env file of the running test control plane and checks that istiod is ready.
// It returns an error when the control plane is not up.
func Load(ctx context.Context) (*Env, error) {
	dir := Dir()
	path := filepath.Join(dir, "env")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("no test control plane: %w", err)
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	env := &Env{
		Dir:               dir,
		Kubeconfig:        vals["KUBECONFIG"],
		XDSAddr:           vals["MESHSCOPE_TESTENV_XDS_ADDR"],
		IstiodHTTPAddr:    vals["MESHSCOPE_TESTENV_ISTIOD_HTTP_ADDR"],
		ClusterID:         vals["MESHSCOPE_TESTENV_CLUSTER_ID"],
		APIServer:         vals["MESHSCOPE_TESTENV_APISERVER"],
		IstiodBin:         vals["MESHSCOPE_TESTENV_ISTIOD_BIN"],
		EndpointSlicesBin: vals["MESHSCOPE_TESTENV_ENDPOINTSLICES_BIN"],
		InjectionURL:      vals["MESHSCOPE_TESTENV_INJECTION_URL"],
		IstioCRDs:         vals["MESHSCOPE_TESTENV_ISTIO_CRDS"],
		Kind:              vals["MESHSCOPE_TESTENV_KIND"] == "kind",
		EtcdBin:           recordedBinary(dir, "etcd"),
		APIServerBin:      recordedBinary(dir, "kube-apiserver"),
	}
	if env.Kubeconfig == "" || env.XDSAddr == "" || env.IstiodHTTPAddr == "" || env.ClusterID == "" {
		return nil, fmt.Errorf("%s is incomplete (written by an older testenv.sh? run `make testenv-down testenv`)", path)
	}
	if _, err := os.Stat(env.Kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if err := ready(ctx, "http://"+env.IstiodHTTPAddr+"/ready"); err != nil {
		return nil, fmt.Errorf("istiod at %s is not ready: %w", env.IstiodHTTPAddr, err)
	}
	if err := env.ControlPlane().Verify(ctx); err != nil {
		return nil, err
	}
	return env, nil
}

// ControlPlane is the shared istiod, for the xDS probe.
func (e *Env) ControlPlane() xdsprobe.ControlPlane {
	return xdsprobe.ControlPlane{XDSAddr: e.XDSAddr, HTTPAddr: e.IstiodHTTPAddr, ClusterID: e.ClusterID}
}

// Require returns the running test control plane. Without TF_ACC the test is skipped; with TF_ACC
// set and no control plane up, the test fails: acceptance tests never pass by not running.
func Require(t testing.TB) *Env {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 and start the control plane with `make testenv`")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env, err := Load(ctx)
	if err != nil {
		t.Fatalf("TF_ACC is set but the test control plane is not up (state directory %s): %v\n"+
			"Start it with `make testenv` (or `make kind-up` where Docker is available).", Dir(), err)
	}
	return env
}

// Kubeconfig returns the admin kubeconfig path of the running test control plane, with the same
// skip and fail rules as Require.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	return Require(t).Kubeconfig
}

// recordedBinary is the binary testenv.sh recorded in dir/<name>.bin when it started name, or ""
// when it recorded none (kind, or a control plane that is down).
func recordedBinary(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name+".bin"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func ready(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}
