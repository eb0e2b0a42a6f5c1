package census_test

import (
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

const namespaces = `
apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: v1
kind: Namespace
metadata: {name: inj, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: dis, labels: {istio-injection: disabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: amb, labels: {istio.io/dataplane-mode: ambient}}
---
apiVersion: v1
kind: Namespace
metadata: {name: canary, labels: {istio.io/rev: canary}}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: istio-system}
`

func deployment(ns, name string, extra string) string {
	return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  selector: {matchLabels: {app: ` + name + `}}
` + extra + `
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers: [{name: app, image: app}]
`
}

func take(t *testing.T, docs ...string) *census.Census {
	t.Helper()
	inv := mesh.New()
	if err := inv.AddYAML("test.yaml", []byte(strings.Join(docs, "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	return census.Take(inv)
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		docs     []string
		ns, wl   string
		proxy    census.Proxy
		reason   census.Reason
		replicas string
		why      string
	}{
		{"injected namespace", []string{deployment("inj", "web", "  replicas: 3")}, "inj", "web", census.Sidecar, census.Injected, "3", "namespace.sidecar-injector.istio.io"},
		{"no injection label", []string{deployment("plain", "web", "")}, "plain", "web", census.None, census.NotInjected, "1", "label namespace plain istio-injection=enabled"},
		{"injection disabled", []string{deployment("dis", "web", "")}, "dis", "web", census.None, census.InjectionDisabled, "1", "istio-injection=disabled"},
		{"ambient", []string{deployment("amb", "web", "")}, "amb", "web", census.Ztunnel, census.Ambient, "1", "ztunnel"},
		{"pod opts out by label", []string{strings.Replace(deployment("inj", "web", ""), "labels: {app: web}", "labels: {app: web, sidecar.istio.io/inject: \"false\"}", 1)}, "inj", "web", census.None, census.OptedOut, "1", "sidecar.istio.io/inject=false"},
		{"pod opts out by annotation", []string{strings.Replace(deployment("inj", "web", ""), "labels: {app: web}", "labels: {app: web}\n      annotations: {sidecar.istio.io/inject: \"false\"}", 1)}, "inj", "web", census.None, census.OptedOut, "1", "annotated"},
		{"pod opts in, plain namespace", []string{strings.Replace(deployment("plain", "web", ""), "labels: {app: web}", "labels: {app: web, sidecar.istio.io/inject: \"true\"}", 1)}, "plain", "web", census.Sidecar, census.Injected, "1", "object.sidecar-injector"},
		{"host network", []string{strings.Replace(deployment("inj", "web", ""), "containers:", "hostNetwork: true\n      containers:", 1)}, "inj", "web", census.None, census.HostNetwork, "1", "host network"},
		{"no replicas", []string{deployment("inj", "web", "  replicas: 0")}, "inj", "web", census.None, census.NoReplicas, "0", "0 replicas"},
		{"ignored namespace", []string{strings.Replace(deployment("kube-system", "dns", ""), "labels: {app: dns}", "labels: {app: dns, sidecar.istio.io/inject: \"true\"}", 1)}, "kube-system", "dns", census.None, census.IgnoredNamespace, "1", "never injects namespace kube-system"},
		{"namespace not in the inventory", []string{deployment("elsewhere", "web", "")}, "elsewhere", "web", census.Sidecar, census.AssumedInjected, "1", "not in the inventory"},
		{"revision label without istiod revision", []string{deployment("canary", "web", "")}, "canary", "web", census.None, census.NotInjected, "1", "no injection webhook"},
		{"revision label with istiod revision", []string{deployment("canary", "web", ""),
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: istiod-canary, namespace: istio-system, labels: {app: istiod, istio.io/rev: canary}}\nspec: {selector: {matchLabels: {app: istiod}}, template: {metadata: {labels: {app: istiod}}, spec: {containers: [{name: d}]}}}"},
			"canary", "web", census.Sidecar, census.Injected, "1", "istio-sidecar-injector-canary/rev.namespace"},
		{"ingress gateway chart", []string{`apiVersion: apps/v1
kind: Deployment
metadata: {name: istio-ingressgateway, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  template:
    metadata: {labels: {istio: ingressgateway}}
    spec:
      containers: [{name: istio-proxy, image: proxyv2, args: [proxy, router]}]`}, "istio-system", "istio-ingressgateway", census.Gateway, census.GatewayProxy, "1", "gateway"},
		{"gateway template", []string{strings.Replace(deployment("inj", "gw", ""), "labels: {app: gw}", "labels: {app: gw}\n      annotations: {inject.istio.io/templates: gateway}", 1)}, "inj", "gw", census.Gateway, census.GatewayProxy, "1", "gateway template"},
		{"gateway API deployment", []string{strings.Replace(deployment("inj", "gw", ""), "labels: {app: gw}", "labels: {app: gw, gateway.networking.k8s.io/gateway-name: gw}", 1)}, "inj", "gw", census.Gateway, census.GatewayProxy, "1", "Gateway gw"},
		{"proxyless gRPC", []string{strings.Replace(deployment("inj", "g", ""), "labels: {app: g}", "labels: {app: g}\n      annotations: {inject.istio.io/templates: grpc-agent}", 1)}, "inj", "g", census.Proxyless, census.ProxylessGRPC, "1", "proxyless"},
		{"autoscaler range", []string{deployment("inj", "web", "  replicas: 2"), "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: inj}\nspec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 10}"}, "inj", "web", census.Sidecar, census.Injected, "2-10", ""},
		{"daemonset", []string{strings.Replace(deployment("inj", "agent", ""), "kind: Deployment", "kind: DaemonSet", 1)}, "inj", "agent", census.Sidecar, census.Injected, "one per node", ""},
		{"never-inject selector", []string{deployment("inj", "web", ""), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector, namespace: istio-system}\ndata:\n  config: |\n    policy: enabled\n    neverInjectSelector:\n    - matchLabels: {app: web}\n"}, "inj", "web", census.None, census.NeverInject, "1", "neverInjectSelector"},
		{"policy disabled", []string{deployment("inj", "web", ""), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector, namespace: istio-system}\ndata:\n  config: |\n    policy: disabled\n"}, "inj", "web", census.None, census.PolicyDisabled, "1", "policy is disabled"},
		{"always-inject selector under a disabled policy", []string{deployment("inj", "web", ""), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio-sidecar-injector, namespace: istio-system}\ndata:\n  config: |\n    policy: disabled\n    alwaysInjectSelector:\n    - matchLabels: {app: web}\n"}, "inj", "web", census.Sidecar, census.Injected, "1", ""},
		{"webhooks from the inventory", []string{deployment("plain", "web", ""), `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: istio-sidecar-injector}
webhooks:
- name: auto.sidecar-injector.istio.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {service: {name: istiod, namespace: istio-system}}
  namespaceSelector:
    matchExpressions:
    - {key: istio-injection, operator: DoesNotExist}
    - {key: istio.io/rev, operator: DoesNotExist}
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}
  objectSelector:
    matchExpressions:
    - {key: sidecar.istio.io/inject, operator: DoesNotExist}`}, "plain", "web", census.Sidecar, census.Injected, "1", "istio-sidecar-injector/auto.sidecar-injector.istio.io"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := take(t, append([]string{namespaces}, tc.docs...)...)
			w := c.Lookup(tc.ns, tc.wl)
			if w == nil {
				t.Fatalf("no workload %s/%s in %v", tc.ns, tc.wl, keys(c))
			}
			if w.Proxy != tc.proxy || w.Reason != tc.reason || w.Replicas.String() != tc.replicas {
				t.Errorf("%s: got %s, %s, replicas %s (%s); want %s, %s, replicas %s", w.Key(), w.Proxy, w.Reason, w.Replicas, w.Why, tc.proxy, tc.reason, tc.replicas)
			}
			if !strings.Contains(w.Why, tc.why) {
				t.Errorf("why %q does not say %q", w.Why, tc.why)
			}
			if w.Rule == "" {
				t.Error("no rule")
			}
		})
	}
}

func keys(c *census.Census) []string {
	var out []string
	for _, w := range c.All() {
		out = append(out, w.Key())
	}
	return out
}

// A live listing: the Deployment, its ReplicaSet and its two Pods are one workload, named as
// Istio names it, whose Pods are its proxies.
func TestLiveListingIsOneWorkload(t *testing.T) {
	pod := func(name string, proxy bool) string {
		containers := "[{name: app, image: app}]"
		if proxy {
			containers = "[{name: app, image: app}, {name: istio-proxy, image: proxyv2}]"
		}
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  namespace: inj
  generateName: web-5d9f7c8b4-
  labels: {app: web, pod-template-hash: 5d9f7c8b4}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d9f7c8b4, uid: u1, controller: true}]
spec: {containers: ` + containers + `}
status: {phase: Running}`
	}
	rs := `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d9f7c8b4
  namespace: inj
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u0, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web, pod-template-hash: 5d9f7c8b4}}, spec: {containers: [{name: app}]}}`
	c := take(t, namespaces, deployment("inj", "web", "  replicas: 2"), rs, pod("web-5d9f7c8b4-aaaaa", true), pod("web-5d9f7c8b4-bbbbb", true))
	if got := keys(c); len(got) != 1 || got[0] != "inj/Deployment/web" {
		t.Fatalf("workloads %v, want [on/Deployment/web]", got)
	}
	w := c.Lookup("inj", "web-5d9f7c8b4-aaaaa")
	if w == nil || w.Key() != "inj/Deployment/web" || w.Proxy != census.Sidecar || w.Reason != census.RunsProxy || w.Replicas.String() != "2" || len(w.Objects) != 4 {
		t.Fatalf("got %+v", w)
	}
	// The Pods win over the template: none runs a proxy, though the namespace injects.
	c = take(t, namespaces, deployment("inj", "web", "  replicas: 2"), rs, pod("web-5d9f7c8b4-aaaaa", false), pod("web-5d9f7c8b4-bbbbb", false))
	w = c.Lookup("inj", "web")
	if w.Proxy != census.None || w.Reason != census.PodsWithoutProxy || !strings.Contains(w.Why, "restart them") {
		t.Fatalf("got %s %s %q", w.Proxy, w.Reason, w.Why)
	}
	// Pods with a proxy in a namespace the selectors would not inject are still proxies.
	c = take(t, namespaces, strings.ReplaceAll(strings.ReplaceAll(deployment("inj", "web", ""), "namespace: inj", "namespace: plain"), "", ""),
		strings.ReplaceAll(pod("web-5d9f7c8b4-aaaaa", true), "namespace: inj", "namespace: plain"))
	if w = c.Lookup("plain", "web"); w.Proxy != census.Sidecar || w.Replicas.String() != "1" {
		t.Fatalf("got %s %s %s", w.Proxy, w.Reason, w.Replicas)
	}
}

// A CronJob's Jobs and their Pods are the CronJob's, as Istio names them.
func TestCronJobNaming(t *testing.T) {
	job := `apiVersion: batch/v1
kind: Job
metadata: {name: nightly-29000000, namespace: inj}
spec:
  template: {metadata: {labels: {app: nightly}}, spec: {restartPolicy: Never, containers: [{name: app}]}}`
	c := take(t, namespaces, job)
	if got := keys(c); len(got) != 1 || got[0] != "inj/CronJob/nightly" {
		t.Fatalf("workloads %v, want [on/CronJob/nightly]", got)
	}
	cron := `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: inj}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template: {metadata: {labels: {app: nightly}}, spec: {restartPolicy: Never, containers: [{name: app}]}}`
	c = take(t, namespaces, cron, job)
	w := c.Lookup("inj", "nightly-29000000")
	if got := keys(c); len(got) != 1 || w == nil || w.Key() != "inj/CronJob/nightly" || w.Objects[0].Kind != "CronJob" || w.Replicas.String() != "0-1" {
		t.Fatalf("workloads %v, %+v", got, w)
	}
	// A Job whose name does not end in 8 to 10 digits is its own workload.
	if got := keys(take(t, namespaces, strings.Replace(job, "nightly-29000000", "nightly-2900", 1))); got[0] != "inj/Job/nightly-2900" {
		t.Fatalf("workloads %v", got)
	}
}

func TestLeftOutSummary(t *testing.T) {
	c := take(t, namespaces, deployment("plain", "a", ""), deployment("plain", "b", ""), deployment("amb", "c", ""), deployment("inj", "d", ""))
	if got, want := c.LeftOut().String(), "3 workloads run no sidecar (not injected: 2, ambient: 1)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := c.Sidecars(""); len(got) != 1 || got[0].Key() != "inj/Deployment/d" {
		t.Errorf("sidecars %v", got)
	}
	if got := c.AssumedSentence(); got != "" {
		t.Errorf("assumed %q, want none", got)
	}
	c = take(t, namespaces, deployment("gone", "a", ""), deployment("gone", "b", ""))
	if got := c.AssumedSentence(); !strings.HasPrefix(got, "2 workloads are counted as sidecars") || !strings.Contains(got, "(gone)") {
		t.Errorf("assumed %q", got)
	}
}

const istiods = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system, labels: {app: istiod}}
spec:
  selector: {matchLabels: {app: istiod}}
  template: {metadata: {labels: {app: istiod}}, spec: {containers: [{name: discovery, image: "docker.io/istio/pilot:1.31.0"}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod-canary, namespace: istio-system, labels: {app: istiod, istio.io/rev: canary}}
spec:
  selector: {matchLabels: {app: istiod, istio.io/rev: canary}}
  template: {metadata: {labels: {app: istiod, istio.io/rev: canary}}, spec: {containers: [{name: discovery, image: "gcr.io/istio-release/pilot:1.30.2-distroless"}]}}
`

// TestRevisions: a sidecar's revision is the one whose webhook injects it, or the one its Pod's
// sidecar.istio.io/status names; its release is that revision's istiod image tag (C12).
func TestRevisions(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: old-1
  namespace: inj
  labels: {app: old}
  annotations: {sidecar.istio.io/status: '{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"canary"}'}
spec: {containers: [{name: app, image: app}, {name: istio-proxy, image: proxyv2}]}
status: {phase: Running}`
	c := take(t, namespaces, istiods, deployment("inj", "web", ""), deployment("canary", "web", ""), pod)
	for _, tc := range []struct{ ns, name, rev, version string }{
		{"inj", "web", "default", "1.31"},
		{"canary", "web", "canary", "1.30"},
		{"inj", "old-1", "canary", "1.30"},
	} {
		w := c.Lookup(tc.ns, tc.name)
		if w == nil || !w.RunsSidecar() || w.Revision != tc.rev || w.Version != tc.version {
			t.Errorf("%s/%s: %+v; want revision %s at %s", tc.ns, tc.name, w, tc.rev, tc.version)
		}
	}
	if got := c.Versions(); len(got) != 2 || got[0] != "1.30" || got[1] != "1.31" {
		t.Errorf("versions %v", got)
	}
	if w := c.Lookup("plain", "web"); w != nil && (w.Revision != "" || w.Version != "") {
		t.Errorf("a workload without a sidecar has revision %q at %q", w.Revision, w.Version)
	}
}

// TestNotModelled: a pod that asks for HBONE listening (R44) or mounts a credential socket (R45)
// is flagged: istiod adds clusters for it that meshscope does not predict.
func TestNotModelled(t *testing.T) {
	hbone := strings.Replace(deployment("inj", "hb", ""), "labels: {app: hb}", "labels: {app: hb}\n      annotations: {proxy.istio.io/config: '{\"proxyMetadata\": {\"ISTIO_META_ENABLE_HBONE\": \"true\"}}'}", 1)
	socket := strings.Replace(deployment("inj", "sock", ""), "containers: [{name: app, image: app}]",
		"containers: [{name: app, image: app, volumeMounts: [{name: cred, mountPath: /var/run/secrets/credential-uds}]}]", 1)
	c := take(t, namespaces, hbone, socket, deployment("inj", "plain", ""))
	for name, want := range map[string]string{"hb": "R44:", "sock": "R45:", "plain": ""} {
		w := c.Lookup("inj", name)
		if got := strings.Join(w.NotModelled, " "); want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("%s: not modelled %q, want %q", name, got, want)
		}
	}
}
