package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"istio.io/istio/operator/pkg/render"
	"istio.io/istio/operator/pkg/util/clog"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/kube/multicluster"
)

// An install is Istio's own rendering (istioctl manifest generate) of the injection webhooks
// and of the injector's ConfigMap, with Istio's injector serving them in process.
type install struct {
	webhooks []admissionregv1.MutatingWebhookConfiguration
	yaml     string // the webhook configurations and the injector ConfigMap, as manifests
	mux      *http.ServeMux
}

func renderInstall(t *testing.T, setFlags []string, patchConfig func(map[string]any)) *install {
	t.Helper()
	sets, _, err := render.GenerateManifest(nil, setFlags, false, nil, clog.NewDefaultLogger())
	if err != nil {
		t.Fatalf("istioctl manifest generate %v: %v", setFlags, err)
	}
	in := &install{mux: http.NewServeMux()}
	var docs []string
	var injector *corev1.ConfigMap
	for _, s := range sets {
		for _, m := range s.Manifests {
			switch {
			case m.GetKind() == "MutatingWebhookConfiguration":
				var w admissionregv1.MutatingWebhookConfiguration
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, &w); err != nil {
					t.Fatal(err)
				}
				in.webhooks = append(in.webhooks, w)
				docs = append(docs, m.Content)
			case m.GetKind() == "ConfigMap" && strings.HasPrefix(m.GetName(), "istio-sidecar-injector"):
				injector = &corev1.ConfigMap{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m.Object, injector); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if len(in.webhooks) == 0 || injector == nil {
		t.Fatalf("%v: no webhook configuration or injector ConfigMap rendered", setFlags)
	}
	if patchConfig != nil {
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(injector.Data["config"]), &cfg); err != nil {
			t.Fatal(err)
		}
		patchConfig(cfg)
		b, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		injector.Data["config"] = string(b)
	}
	injector.Name = "istio-sidecar-injector" // the name the census reads, whatever the revision
	cm, err := yaml.Marshal(injector)
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, string(cm))
	in.yaml = strings.Join(docs, "\n---\n")

	dir := t.TempDir()
	configFile, valuesFile := filepath.Join(dir, "config"), filepath.Join(dir, "values")
	if err := os.WriteFile(configFile, []byte(injector.Data["config"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(valuesFile, []byte(injector.Data["values"]), 0o644); err != nil {
		t.Fatal(err)
	}
	watcher, err := inject.NewFileWatcher(configFile, valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	m := mesh.DefaultMeshConfig()
	env := model.Environment{Watcher: meshwatcher.NewTestWatcher(m), ConfigStore: model.NewFakeStore()}
	env.SetPushContext(&model.PushContext{})
	if _, err := inject.NewWebhook(inject.WebhookParameters{Watcher: watcher, Env: &env, Mux: in.mux, MultiCluster: multicluster.NewFakeController()}); err != nil {
		t.Fatal(err)
	}
	return in
}

// selects is the API server's choice: some webhook whose namespaceSelector matches the
// namespace's labels and whose objectSelector matches the pod's, with Kubernetes' selectors.
func (in *install) selects(t *testing.T, ns *corev1.Namespace, pod *corev1.Pod) bool {
	nsLabels := labels.Set{"kubernetes.io/metadata.name": ns.Name}
	for k, v := range ns.Labels {
		nsLabels[k] = v
	}
	for _, c := range in.webhooks {
		for _, w := range c.Webhooks {
			nsSel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			objSel, err := metav1.LabelSelectorAsSelector(w.ObjectSelector)
			if err != nil {
				t.Fatal(err)
			}
			if nsSel.Matches(nsLabels) && objSel.Matches(labels.Set(pod.Labels)) {
				return true
			}
		}
	}
	return false
}

// injects asks Istio's injector, through its webhook handler, whether it injects the pod.
func (in *install) injects(t *testing.T, pod *corev1.Pod) bool {
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "census", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: pod.Namespace,
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/inject", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	in.mux.ServeHTTP(rec, req)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("injector answered %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	if out.Response.Result != nil && out.Response.Result.Message != "" {
		t.Fatalf("injector failed on %s/%s: %s", pod.Namespace, pod.Name, out.Response.Result.Message)
	}
	return len(out.Response.Patch) > 0
}

// TestCensusAgainstIstio: for every namespace and pod of the cases, under Istio's default
// install, a revision, enableNamespacesByDefault and an injector with a disabled policy and
// selectors, the CLI runs a sidecar exactly when the API server would call Istio's injector
// (the rendered webhooks, evaluated with Kubernetes' selectors) and Istio's injector, called
// through its webhook handler, injects the pod. With the rendered objects in the inventory,
// and, for the default install, without them (meshscope's assumed default install).
func TestCensusAgainstIstio(t *testing.T) {
	cli := requireCLI(t)
	namespaces := []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "injected", Labels: map[string]string{"istio-injection": "enabled"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "disabled", Labels: map[string]string{"istio-injection": "disabled"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rev-default", Labels: map[string]string{"istio.io/rev": "default"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rev-canary", Labels: map[string]string{"istio.io/rev": "canary"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "both", Labels: map[string]string{"istio-injection": "enabled", "istio.io/rev": "canary"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"istio-injection": "enabled"}}},
	}
	type podCase struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		hostNetwork bool
	}
	pods := []podCase{
		{name: "app", labels: map[string]string{"app": "a"}},
		{name: "label-true", labels: map[string]string{"app": "a", "sidecar.istio.io/inject": "true"}},
		{name: "label-false", labels: map[string]string{"app": "a", "sidecar.istio.io/inject": "false"}},
		{name: "annotation-false", labels: map[string]string{"app": "a"}, annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
		{name: "annotation-true", labels: map[string]string{"app": "a"}, annotations: map[string]string{"sidecar.istio.io/inject": "true"}},
		{name: "label-wins", labels: map[string]string{"app": "a", "sidecar.istio.io/inject": "true"}, annotations: map[string]string{"sidecar.istio.io/inject": "false"}},
		{name: "bad-value", labels: map[string]string{"app": "a", "sidecar.istio.io/inject": "yes"}},
		{name: "rev-canary", labels: map[string]string{"app": "a", "istio.io/rev": "canary"}},
		{name: "rev-default", labels: map[string]string{"app": "a", "istio.io/rev": "default"}},
		{name: "host-network", labels: map[string]string{"app": "a"}, hostNetwork: true},
		{name: "never", labels: map[string]string{"app": "a", "tier": "batch"}},
		{name: "always", labels: map[string]string{"app": "a", "tier": "critical"}},
	}
	selectors := func(policy string) func(map[string]any) {
		return func(cfg map[string]any) {
			cfg["policy"] = policy
			cfg["neverInjectSelector"] = []any{map[string]any{"matchLabels": map[string]any{"tier": "batch"}}}
			cfg["alwaysInjectSelector"] = []any{map[string]any{"matchLabels": map[string]any{"tier": "critical"}}}
		}
	}
	installs := []struct {
		name     string
		flags    []string
		patch    func(map[string]any)
		assumed  bool // also without the rendered objects in the inventory
		revision string
	}{
		{name: "default", assumed: true},
		{name: "enableNamespacesByDefault", flags: []string{"values.sidecarInjectorWebhook.enableNamespacesByDefault=true"}},
		{name: "revision canary", flags: []string{"revision=canary"}, revision: "canary"},
		{name: "selectors, policy enabled", patch: selectors("enabled")},
		{name: "selectors, policy disabled", patch: selectors("disabled")},
	}
	compared, injected := 0, 0
	for _, ic := range installs {
		in := renderInstall(t, ic.flags, ic.patch)
		var objs []string
		want := map[string]bool{}
		for _, ns := range namespaces {
			b, _ := yaml.Marshal(ns)
			objs = append(objs, "apiVersion: v1\nkind: Namespace\n"+string(b))
			for _, pc := range pods {
				pod := &corev1.Pod{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Name: pc.name, Namespace: ns.Name, Labels: pc.labels, Annotations: pc.annotations},
					Spec:       corev1.PodSpec{HostNetwork: pc.hostNetwork, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
				}
				b, _ := yaml.Marshal(pod)
				objs = append(objs, string(b))
				want[ns.Name+"/"+pc.name] = in.selects(t, ns, pod) && in.injects(t, pod)
			}
		}
		inventories := map[string]string{"with the rendered objects": in.yaml + "\n---\n" + strings.Join(objs, "\n---\n")}
		if ic.assumed {
			inventories["assuming the default install"] = strings.Join(objs, "\n---\n")
		}
		if ic.revision != "" {
			// The istiod of the revision, as its chart deploys it: the census finds the revision by it.
			inventories["with the rendered objects"] += "\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: istiod-" + ic.revision +
				", namespace: istio-system, labels: {app: istiod, istio.io/rev: " + ic.revision + "}}\nspec: {selector: {matchLabels: {app: istiod}}, " +
				"template: {metadata: {labels: {app: istiod}}, spec: {containers: [{name: discovery, image: pilot}]}}}"
		}
		for which, inv := range inventories {
			file := filepath.Join(t.TempDir(), "inventory.yaml")
			if err := os.WriteFile(file, []byte(inv), 0o644); err != nil {
				t.Fatal(err)
			}
			for key, istio := range want {
				got, detail := cliRunsSidecar(t, cli.Bin, file, key)
				compared++
				if istio {
					injected++
				}
				if got != istio {
					t.Errorf("%s, %s: pod %s: Istio injects it: %v; meshscope runs a sidecar: %v (%s)", ic.name, which, key, istio, got, detail)
				}
			}
		}
	}
	if injected == 0 || injected == compared {
		t.Fatalf("the cases do not exercise both answers: %d of %d injected", injected, compared)
	}
	t.Logf("%d pods compared with Istio's webhooks and injector, %d injected", compared, injected)
}

// cliRunsSidecar runs `meshscope clusters --pod` and reports whether the pod runs a sidecar:
// exit 0, or exit 1 with "runs no sidecar".
func cliRunsSidecar(t *testing.T, bin, file, pod string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "clusters", "-f", file, "--pod", pod, "-o", "names")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	switch {
	case err == nil:
		return true, "predicted"
	case strings.Contains(stderr.String(), "runs no sidecar"):
		return false, strings.TrimSpace(stderr.String())
	default:
		t.Fatalf("meshscope clusters --pod %s: %v: %s", pod, err, stderr.String())
		return false, ""
	}
}
