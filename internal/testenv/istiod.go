package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshscope/terraform-provider-meshscope/internal/testenv/xdsprobe"
)

// IstiodOptions configures a private istiod.
type IstiodOptions struct {
	// MeshConfig is the MeshConfig YAML istiod reads from a file instead of the `istio` ConfigMap,
	// for example discoverySelectors that limit it to the test's namespaces.
	MeshConfig string
	// Env adds environment variables (feature flags such as PILOT_ENABLE_AMBIENT=true).
	Env map[string]string
}

// Istiod is a private istiod started by StartIstiod.
type Istiod struct {
	XDSAddr   string // plaintext xDS, 127.0.0.1:<port>
	HTTPAddr  string // /ready and /debug, 127.0.0.1:<port>
	ClusterID string // its CLUSTER_ID, of its own
	Log       string // its log file
}

// ControlPlane is this istiod, for the xDS probe.
func (ist *Istiod) ControlPlane() xdsprobe.ControlPlane {
	return xdsprobe.ControlPlane{XDSAddr: ist.XDSAddr, HTTPAddr: ist.HTTPAddr, ClusterID: ist.ClusterID}
}

// StartIstiod starts a second istiod, private to the test, against the test control plane's API
// server, and waits until it is ready. It listens on two free loopback ports (plaintext xDS and
// HTTP; the webhook, secure xDS and monitoring listeners are off) and is stopped at the end of
// the test.
//
// The shared istiod of `make testenv` sees every namespace, so what it pushes depends on whatever
// other tests have created. A private istiod whose MeshConfig has discoverySelectors sees only the
// namespaces the test labels, which makes exact cluster counts safe to assert.
func StartIstiod(t testing.TB, env *Env, opts IstiodOptions) *Istiod {
	t.Helper()
	if env.IstiodBin == "" {
		t.Skip("a private istiod needs the pilot-discovery binary of `make testenv` (not available with kind)")
	}
	dir := t.TempDir()
	mesh := filepath.Join(dir, "mesh.yaml")
	if err := os.WriteFile(mesh, []byte(opts.MeshConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	httpPort, grpcPort := freePort(t), freePort(t)
	ist := &Istiod{
		XDSAddr:   fmt.Sprintf("127.0.0.1:%d", grpcPort),
		HTTPAddr:  fmt.Sprintf("127.0.0.1:%d", httpPort),
		ClusterID: "testenv-private-" + RandomSuffix(6),
		Log:       filepath.Join(dir, "istiod.log"),
	}
	logf, err := os.Create(ist.Log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.IstiodBin, "discovery",
		"--kubeconfig="+env.Kubeconfig,
		"--meshConfig="+mesh,
		"--networksConfig="+filepath.Join(dir, "no-mesh-networks"),
		"--httpAddr="+ist.HTTPAddr,
		"--grpcAddr="+ist.XDSAddr,
		"--httpsAddr=",
		"--secureGRPCAddr=",
		"--monitoringAddr=",
		"--ctrlz_port=0", // the ControlZ page, on 127.0.0.1: any free port, not the shared istiod's 9876
		"--domain=cluster.local",
		"--log_output_level=default:info",
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(),
		"POD_NAMESPACE=istio-system",
		"POD_NAME=istiod-"+RandomSuffix(6),
		"REVISION=default",
		"CLUSTER_ID="+ist.ClusterID,
		"KUBECONFIG="+env.Kubeconfig,
		"ENABLE_CA_SERVER=false",
		"PILOT_ENABLE_GATEWAY_API_STATUS=false",
		"PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER=false",
		"ISTIOD_CUSTOM_HOST=istiod.istio-system.svc",
	)
	for k, v := range opts.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	start := time.Now()
	exited := runForTest(t, "private istiod", cmd, logf, ist.Log)

	awaitReady(t, "private istiod", ist.Log, exited, PushTimeout, 250*time.Millisecond,
		func(ctx context.Context) error { return ready(ctx, "http://"+ist.HTTPAddr+"/ready") },
		func(error) string { return fmt.Sprintf("not ready after %s", PushTimeout) })
	// Two free ports were picked, then closed: make sure the istiod now on them is this one.
	vctx, vcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer vcancel()
	if err := ist.ControlPlane().Verify(vctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("private istiod ready on %s after %s", ist.XDSAddr, time.Since(start).Round(100*time.Millisecond))
	return ist
}

// runForTest starts cmd, whose output goes to logf (the file at log), and stops it when the
// test ends: an interrupt, then a kill after 15 s; a failed test gets the log's tail. The channel
// receives the process's end.
func runForTest(t testing.TB, name string, cmd *exec.Cmd, logf *os.File, log string) chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case werr := <-exited:
			t.Logf("%s stopped: %v", name, werr)
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Logf("%s killed after 15s: %v", name, <-exited)
		}
		if t.Failed() {
			t.Logf("%s log (%s), last lines:\n%s", name, log, tail(log, 40))
		}
	})
	return exited
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port
}

// awaitReady polls ready, every poll, until it answers nil. It fails t when the server exits
// first (its end, received from exited, is given back for the cleanup) or when timeout passes,
// with notReady of the last error; the messages name the server and end with its log's tail.
func awaitReady(t testing.TB, name, log string, exited chan error, timeout, poll time.Duration,
	ready func(context.Context) error, notReady func(err error) string,
) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("%s exited during startup (%v); log %s:\n%s", name, werr, log, tail(log, 40))
		case <-time.After(poll):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s; log %s:\n%s", name, notReady(err), log, tail(log, 40))
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
