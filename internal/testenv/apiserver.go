package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIServerTimeout bounds how long a private etcd or kube-apiserver may take to become ready, at
// its first start and at every restart.
const APIServerTimeout = 2 * time.Minute

// stopTimeout bounds how long a stopped process may take to exit.
const stopTimeout = 15 * time.Second

// pkiFiles are the files of the shared test control plane's pki/ that a private API server
// reuses: its CA, the serving certificate (for 127.0.0.1), the admin client certificate and the
// service account key pair. The CA key stays where it is.
var pkiFiles = []string{"ca.crt", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key", "sa.key", "sa.pub"}

// APIServer is a private etcd and kube-apiserver started by StartAPIServer. Stop and Start stop
// and restart the kube-apiserver alone; etcd keeps running, with its data.
type APIServer struct {
	// Env describes the private control plane: Dir holds its pki/ (the CA in pki/ca.crt) and
	// logs/, Kubeconfig is an admin kubeconfig for it, APIServer its URL. It has no istiod.
	Env *Env
	// URL is https://127.0.0.1:<port>, the same across restarts.
	URL string
	// Log is the kube-apiserver's log, appended to across restarts.
	Log string

	args    []string
	etcdLog string

	mu  sync.Mutex
	cur *process // the running kube-apiserver; nil while stopped
}

// StartAPIServer starts an etcd and a kube-apiserver of the test's own, from the binaries the
// shared test control plane runs, on free loopback ports, with an etcd data directory in a
// temporary directory. It installs the Istio CRDs `make testenv` installs and the istio-system
// namespace, and stops both processes at the end of the test.
//
// A test that stops or restarts the API server (Stop, Start) uses one of these: other tests run
// against the shared API server at the same time and must not see it go away.
func StartAPIServer(t testing.TB, env *Env) *APIServer {
	t.Helper()
	if env.EtcdBin == "" || env.APIServerBin == "" || env.IstioCRDs == "" {
		t.Skip("a private API server needs the etcd and kube-apiserver binaries and the Istio CRDs of `make testenv` (not available with kind)")
	}
	dir := t.TempDir()
	pki, logs := filepath.Join(dir, "pki"), filepath.Join(dir, "logs")
	for _, d := range []string{pki, logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Copies, so that a restart of the shared control plane (which makes a new PKI) cannot
	// change what this API server serves or trusts between its restarts.
	for _, f := range pkiFiles {
		b, err := os.ReadFile(filepath.Join(env.Dir, "pki", f))
		if err != nil {
			t.Fatalf("the shared test control plane's PKI: %v", err)
		}
		if err := os.WriteFile(filepath.Join(pki, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcdPort, peerPort, port := freePort(t), freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	a := &APIServer{
		URL:     "https://127.0.0.1:" + strconv.Itoa(port),
		Log:     filepath.Join(logs, "kube-apiserver.log"),
		etcdLog: filepath.Join(logs, "etcd.log"),
	}
	a.Env = &Env{
		Dir:          dir,
		Kubeconfig:   filepath.Join(dir, "kubeconfig"),
		APIServer:    a.URL,
		IstioCRDs:    env.IstioCRDs,
		EtcdBin:      env.EtcdBin,
		APIServerBin: env.APIServerBin,
	}

	// The flags of testenv.sh's `up`, on this test's ports and directories.
	etcd, err := startProcess(env.EtcdBin, a.etcdLog, "--name", "private", "--data-dir", filepath.Join(dir, "etcd-data"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "private="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := etcd.stop(syscall.SIGTERM); err != nil {
			t.Errorf("private etcd: %v", err)
		}
		if t.Failed() {
			t.Logf("private etcd log (%s), last lines:\n%s", a.etcdLog, tail(a.etcdLog, 20))
		}
	})
	if err := etcd.waitReady(APIServerTimeout, func(ctx context.Context) error { return ready(ctx, etcdURL+"/health") }); err != nil {
		t.Fatalf("private etcd on %s: %v; log %s:\n%s", etcdURL, err, a.etcdLog, tail(a.etcdLog, 30))
	}

	a.args = []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--etcd-servers=" + etcdURL,
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"), "--cert-dir=" + pki,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16", "--allow-privileged=true",
		"--authorization-mode=RBAC", "--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount", "--enable-priority-and-fairness=false",
		"--profiling=false",
	}
	if err := writeKubeconfig(a.Env.Kubeconfig, a.URL, pki); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("private kube-apiserver: %v", err)
		}
		if t.Failed() {
			t.Logf("private kube-apiserver log (%s), last lines:\n%s", a.Log, tail(a.Log, 30))
		}
	})
	start := time.Now()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.installIstio(); err != nil {
		t.Fatalf("private kube-apiserver %s: %v", a.URL, err)
	}
	t.Logf("private kube-apiserver ready on %s (etcd %s) with the Istio CRDs after %s", a.URL, etcdURL,
		time.Since(start).Round(100*time.Millisecond))
	return a
}

// Cluster returns a Cluster for the private API server (its Env has no istiod).
func (a *APIServer) Cluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := NewCluster(a.Env)
	if err != nil {
		t.Fatalf("connecting to the private kube-apiserver %s: %v", a.URL, err)
	}
	return c
}

// Stop kills the kube-apiserver (SIGKILL, as a crash would: requests in flight get no answer)
// and waits for it to exit. etcd keeps running. Stopping a stopped server does nothing. Stop may
// be called from any goroutine.
func (a *APIServer) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil {
		return nil
	}
	err := a.cur.stop(syscall.SIGKILL)
	a.cur = nil
	return err
}

// Start starts the kube-apiserver (again after Stop: on the same port, against the same etcd)
// and waits, at most APIServerTimeout, until it answers /readyz. Starting a running server does
// nothing.
func (a *APIServer) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur != nil && !a.cur.exited() {
		return nil
	}
	a.cur = nil
	rc, err := clientcmd.BuildConfigFromFlags("", a.Env.Kubeconfig)
	if err != nil {
		return err
	}
	rc.Timeout = 5 * time.Second
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	p, err := startProcess(a.Env.APIServerBin, a.Log, a.args...)
	if err != nil {
		return err
	}
	err = p.waitReady(APIServerTimeout, func(ctx context.Context) error {
		_, err := kc.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
	if err != nil {
		if serr := p.stop(syscall.SIGKILL); serr != nil {
			err = errors.Join(err, serr)
		}
		return fmt.Errorf("private kube-apiserver on %s: %w; log %s:\n%s", a.URL, err, a.Log, tail(a.Log, 30))
	}
	a.cur = p
	return nil
}

// installIstio installs the Istio CRDs, waits until they are established, and creates the
// istio-system namespace, as testenv.sh does for the shared API server.
func (a *APIServer) installIstio() error {
	crds, err := os.ReadFile(a.Env.IstioCRDs)
	if err != nil {
		return err
	}
	c, err := NewCluster(a.Env)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), APIServerTimeout)
	defer cancel()
	applied, err := c.Apply(ctx, string(crds))
	if err != nil {
		return fmt.Errorf("installing the Istio CRDs of %s: %w", a.Env.IstioCRDs, err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range applied {
		for {
			obj, err := c.Dynamic.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && established(obj) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established after %s (last error %v)", crd.GetName(), APIServerTimeout, err)
			case <-time.After(pollInterval):
			}
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "istio-system"}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// writeKubeconfig writes an admin kubeconfig for server, with the certificates of pki embedded.
func writeKubeconfig(path, server, pki string) error {
	read := func(f string) ([]byte, error) { return os.ReadFile(filepath.Join(pki, f)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read("admin.crt")
	if err != nil {
		return err
	}
	key, err := read("admin.key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["private"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["private-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["private"] = &clientcmdapi.Context{Cluster: "private", AuthInfo: "private-admin"}
	cfg.CurrentContext = "private"
	return clientcmd.WriteToFile(*cfg, path)
}

// process is one run of a binary, its output appended to a log file.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	err  error         // its exit status, once done is closed
}

func startProcess(bin, log string, args ...string) (*process, error) {
	logf, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls check until it succeeds, the process exits, or timeout passes.
func (p *process) waitReady(timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := check(ctx)
		cancel()
		if p.exited() {
			// The port was taken, or a flag is wrong. A ready answer came from someone else.
			return fmt.Errorf("%s exited during startup (%v)", filepath.Base(p.cmd.Path), p.err)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %w", filepath.Base(p.cmd.Path), timeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stop sends sig and waits for the exit, killing the process when it outlives stopTimeout.
func (p *process) stop(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %s after %v; killed", filepath.Base(p.cmd.Path), stopTimeout, sig)
	case <-time.After(stopTimeout):
		return fmt.Errorf("%s (pid %d) did not exit within %s of SIGKILL", filepath.Base(p.cmd.Path), p.cmd.Process.Pid, stopTimeout)
	}
}
