package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/census"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

// TestLoadInventory_CensusFromTheCluster: read from a live API server, a Deployment with its
// ReplicaSet and two Pods that run istio-proxy is one workload with 2 proxies; a Deployment whose
// Pod runs no proxy runs no sidecar, though its namespace is injected (the Pods win); the Pod of
// a CronJob's Job is the CronJob's (C1, C2, C9).
func TestLoadInventory_CensusFromTheCluster(t *testing.T) {
	c := testenv.Connect(t)
	ns := c.UniqueNamespace(t, "census", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctrl := func(kind, apiVersion, name string, uid string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: typesUID(uid), Controller: &yes}}
	}
	tpl := func(lbls map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "testenv.invalid/app:0"}}}}
	}
	two := int32(2)
	deploy := func(name string) *appsv1.Deployment {
		lbls := map[string]string{"app": name}
		d, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: lbls}, Template: tpl(lbls)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	pod := func(name, generate string, lbls map[string]string, owner []metav1.OwnerReference, proxy bool) {
		containers := []corev1.Container{{Name: "app", Image: "testenv.invalid/app:0"}}
		if proxy {
			containers = append(containers, corev1.Container{Name: "istio-proxy", Image: "testenv.invalid/proxyv2:0"})
		}
		p, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generate,
			Labels: lbls, OwnerReferences: owner}, Spec: corev1.PodSpec{Containers: containers}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		if _, err := c.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"web", "plain"} {
		d := deploy(name)
		hash := "5d9f7c8b4"
		lbls := map[string]string{"app": name, "pod-template-hash": hash}
		rs, err := c.Kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + hash,
			OwnerReferences: ctrl("Deployment", "apps/v1", name, string(d.UID))},
			Spec: appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: lbls}, Template: tpl(lbls)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner := ctrl("ReplicaSet", "apps/v1", rs.Name, string(rs.UID))
		pod(name+"-"+hash+"-aaaaa", name+"-"+hash+"-", lbls, owner, name == "web")
		pod(name+"-"+hash+"-bbbbb", name+"-"+hash+"-", lbls, owner, name == "web")
	}
	cj, err := c.Kube.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: withNever(tpl(map[string]string{"app": "nightly"}))}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000000",
		OwnerReferences: ctrl("CronJob", "batch/v1", "nightly", string(cj.UID))},
		Spec: batchv1.JobSpec{Template: withNever(tpl(map[string]string{"app": "nightly", "job": "x"}))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod("nightly-29000000-ccccc", "nightly-29000000-", map[string]string{"app": "nightly", "job": "x"}, ctrl("Job", "batch/v1", job.Name, string(job.UID)), true)

	inv := mesh.New()
	if err := New(Config{ConfigPaths: []string{c.Env.Kubeconfig}}).LoadInventory(ctx, inv, ""); err != nil {
		t.Fatalf("LoadInventory: %v", err)
	}
	cs := census.Take(inv)
	var keys []string
	for _, w := range cs.In(ns) {
		keys = append(keys, w.Key())
	}
	want := []string{ns + "/CronJob/nightly", ns + "/Deployment/plain", ns + "/Deployment/web"}
	if !slices.Equal(keys, want) {
		t.Fatalf("workloads %v, want %v", keys, want)
	}
	for _, tc := range []struct {
		name     string
		proxy    census.Proxy
		reason   census.Reason
		replicas string
	}{
		{"web", census.Sidecar, census.RunsProxy, "2"},
		{"plain", census.None, census.PodsWithoutProxy, "0"},
		{"nightly", census.Sidecar, census.RunsProxy, "1"},
	} {
		w := cs.Lookup(ns, tc.name)
		if w.Proxy != tc.proxy || w.Reason != tc.reason || w.Replicas.String() != tc.replicas {
			t.Errorf("%s: %s %s %s (%s), want %s %s %s", w.Key(), w.Proxy, w.Reason, w.Replicas, w.Why, tc.proxy, tc.reason, tc.replicas)
		}
	}
}

func withNever(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return t
}

func typesUID(s string) types.UID { return types.UID(s) }
