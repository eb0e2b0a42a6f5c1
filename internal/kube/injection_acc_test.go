package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestCensus_MatchesIstiosInjectionLive: the test control plane's istiod serves sidecar
// injection, and the API server calls it through the webhooks of Istio's default install
// (limited to this test's namespaces). One Pod is created per case; the census of the same
// manifests, as submitted, says a sidecar exactly when the API server stored an istio-proxy.
func TestCensus_MatchesIstiosInjectionLive(t *testing.T) {
	c := testenv.Connect(t)
	if c.Env.Kind {
		t.Skip("kind runs a real install with its own injection webhooks; this test drives the testenv istiod's")
	}
	if c.Env.InjectionURL == "" {
		t.Fatal("the test control plane serves no sidecar injection: restart it (make testenv-down testenv)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := testenv.RandomSuffix(6)
	const testLabel = "meshscope-census-test"

	namespaces := map[string]map[string]string{
		"plain":       {},
		"injected":    {"istio-injection": "enabled"},
		"disabled":    {"istio-injection": "disabled"},
		"rev-default": {"istio.io/rev": "default"},
	}
	nsName := func(short string) string { return "census-" + short + "-" + id }
	var manifests []string
	for short, lbls := range namespaces {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: nsName(short), Labels: map[string]string{testLabel: id}}}
		for k, v := range lbls {
			ns.Labels[k] = v
		}
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = c.EmptyNamespace(ctx, ns.Name)
			_ = c.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		})
		b, _ := yaml.Marshal(ns)
		manifests = append(manifests, string(b))
	}

	// The istiod CA that signs the webhook's certificate, as istiod publishes it in each namespace.
	var ca []byte
	deadline := time.Now().Add(testenv.PushTimeout)
	for ca == nil {
		cm, err := c.Kube.CoreV1().ConfigMaps(nsName("injected")).Get(ctx, "istio-ca-root-cert", metav1.GetOptions{})
		switch {
		case err == nil:
			ca = []byte(cm.Data["root-cert.pem"])
		case !apierrors.IsNotFound(err):
			t.Fatal(err)
		case time.Now().After(deadline):
			t.Fatalf("istiod did not publish istio-ca-root-cert in %s within %v", nsName("injected"), testenv.PushTimeout)
		default:
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The default install's webhooks, each limited to this test's namespaces.
	url := c.Env.InjectionURL
	fail, none, never := admissionregv1.Fail, admissionregv1.SideEffectClassNone, admissionregv1.NeverReinvocationPolicy
	mwc := &admissionregv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "istio-sidecar-injector-census-" + id, Labels: map[string]string{"istio.io/rev": "default"}},
	}
	for _, w := range census.DefaultWebhooks("") {
		nsSel := w.NamespaceSelector.DeepCopy()
		nsSel.MatchExpressions = append(nsSel.MatchExpressions, metav1.LabelSelectorRequirement{Key: testLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{id}})
		mwc.Webhooks = append(mwc.Webhooks, admissionregv1.MutatingWebhook{
			Name: w.Name, ClientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Create},
				Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: nsSel, ObjectSelector: w.ObjectSelector, FailurePolicy: &fail, SideEffects: &none,
			ReinvocationPolicy: &never, AdmissionReviewVersions: []string{"v1"},
		})
	}
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), mwc.Name, metav1.DeleteOptions{})
	})
	b, _ := yaml.Marshal(mwc)
	manifests = append(manifests, string(b))

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
		{name: "rev-default", labels: map[string]string{"app": "a", "istio.io/rev": "default"}},
		{name: "host-network", labels: map[string]string{"app": "a"}, hostNetwork: true},
	}
	podOf := func(ns string, pc podCase) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: pc.name, Namespace: ns, Labels: pc.labels, Annotations: pc.annotations},
			// The test API server runs without the ServiceAccount admission plugin, which would set it.
			Spec: corev1.PodSpec{ServiceAccountName: "default", HostNetwork: pc.hostNetwork,
				Containers: []corev1.Container{{Name: "app", Image: "testenv.invalid/app:0"}}}}
	}
	// The API server reads webhook configurations through an informer: wait, with a bounded
	// poll, until a probe pod of the injected namespace comes back injected.
	deadline = time.Now().Add(testenv.PushTimeout)
	for i := 0; ; i++ {
		probe := podOf(nsName("injected"), podCase{name: fmt.Sprintf("probe-%d", i), labels: map[string]string{"app": "probe"}})
		got, err := c.Kube.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a probe pod: %v", err)
		}
		if runsProxy(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server did not call istiod's injection webhook within %v", testenv.PushTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}

	stored := map[string]bool{}
	for short := range namespaces {
		for _, pc := range pods {
			p := podOf(nsName(short), pc)
			got, err := c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating %s/%s: %v", p.Namespace, p.Name, err)
			}
			stored[p.Namespace+"/"+p.Name] = runsProxy(got)
			b, _ := yaml.Marshal(p)
			manifests = append(manifests, string(b))
		}
	}

	inv := mesh.New()
	if err := inv.AddYAML("submitted.yaml", []byte(strings.Join(manifests, "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	cs := census.Take(inv)
	injected := 0
	for key, want := range stored {
		ns, name, _ := strings.Cut(key, "/")
		w := cs.Lookup(ns, name)
		if w == nil {
			t.Fatal(errors.New("the census lacks " + key))
		}
		if want {
			injected++
		}
		if w.RunsSidecar() != want {
			t.Errorf("%s: the API server stored an istio-proxy: %v; the census says a sidecar: %v (%s: %s)", key, want, w.RunsSidecar(), w.Reason, w.Why)
		}
	}
	if injected == 0 || injected == len(stored) {
		t.Fatalf("the cases do not exercise both answers: %d of %d injected", injected, len(stored))
	}
	t.Logf("%d pods created through istiod's injection webhook, %d injected; the census agrees on each", len(stored), injected)
}

func runsProxy(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == mesh.ProxyContainerName {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == mesh.ProxyContainerName && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}
