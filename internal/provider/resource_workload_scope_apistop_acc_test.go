package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshscope/terraform-provider-meshscope/internal/kube"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/testenv"
)

const (
	// stoppedScopes is how many scopes the interrupted apply creates.
	stoppedScopes = 50
	// stopAfter is how many of their Sidecars a poll must see before the API server is stopped.
	stopAfter = 5
	// stopPollInterval is how often the stopper lists the Sidecars during the apply.
	stopPollInterval = 50 * time.Millisecond
	// stopPollTimeout bounds the stopper's wait for the apply to create its first Sidecars.
	stopPollTimeout = 5 * time.Minute
)

// TestAccWorkloadScope_apiServerStopped: the API server is stopped in the middle of an apply of 50
// scopes (once a poll sees some of their Sidecars, not all), then started again. The apply fails
// with "Cluster Unreachable" naming the Sidecar and the refused connection. After the restart, the
// next plan keeps what the state recorded and creates only the rest, one of which the cluster
// already holds, unrecorded (see below); the re-apply converges (the plan after it is empty), and
// then the cluster holds exactly the 50 Sidecars, each once, each carrying meshscope's label and
// owned by its field manager alone, the Sidecars that existed before the re-apply are the same
// objects (same UID), and every scope's state equals the live Sidecar as the provider reads it.
// A refresh changes nothing, and destroy removes all 50.
//
// A create that the API server committed but could not answer before it died leaves a Sidecar
// the state does not record. A kill lands in that window only by chance, so after the restart
// the test writes one such Sidecar itself, as the interrupted apply would have: the planned
// manifest, server-side applied by the provider's identity and field manager.
//
// The API server is a private one (testenv.StartAPIServer): other tests use the shared one.
func TestAccWorkloadScope_apiServerStopped(t *testing.T) {
	shared := testenv.Connect(t)
	api := testenv.StartAPIServer(t, shared.Env)
	c := api.Cluster(t)
	token := leastPrivilegeToken(t, c)
	namespaces := []string{"stop-a", "stop-b"}
	for _, ns := range namespaces {
		if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := os.ReadFile(filepath.Join(api.Env.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	run := &stopRun{
		c:          c,
		namespaces: namespaces,
		want:       map[string]bool{},
		planned:    map[string]string{},
		before:     map[string]types.UID{},
		// What the provider's kubernetes block below configures.
		writer: kube.New(kube.Config{Host: api.URL, Token: token, ClusterCACertificate: string(ca)}),
		reader: kube.New(kube.Config{ConfigPaths: []string{api.Env.Kubeconfig}}),
	}
	for i := range stoppedScopes {
		run.want[fmt.Sprintf("%s/s%02d", namespaces[i%2], i)] = true
	}
	cfg := fmt.Sprintf(`
provider "meshscope" {
  kubernetes {
    host                   = %q
    token                  = %q
    cluster_ca_certificate = %s
    # Short enough that no request of the interrupted apply can hold it up for long.
    request_timeout        = "10s"
  }
}

resource "meshscope_workload_scope" "s" {
  count             = %d
  namespace         = count.index %% 2 == 0 ? %q : %q
  name              = format("s%%02d", count.index)
  workload_selector = { app = format("s%%02d", count.index) }
  dependencies      = [{ service = "kubernetes.default", ports = [443] }]
}
`, api.URL, token, heredoc(string(ca)), stoppedScopes, namespaces[0], namespaces[1])

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			live, err := liveSidecars(context.Background(), c, namespaces)
			if err != nil {
				return err
			}
			if len(live) != 0 {
				return fmt.Errorf("%d Sidecars are left after destroy: %v", len(live), sortedKeys(live))
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() { run.stopper = stopMidApply(t, api, c, namespaces) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedManifests{run: run},
				}},
				ExpectError: regexp.MustCompile(`(?s)Cluster Unreachable.*Applying\s+Sidecar\s+stop-[ab]/s\d\d\s+failed.*` +
					regexp.QuoteMeta(strings.TrimPrefix(api.URL, "https://")) + `.*connection\s+refused`),
			},
			{
				PreConfig: func() {
					seen := run.stopper.wait(t)
					t.Logf("the API server was stopped once a poll saw %d of the %d Sidecars; the apply had failed %s later",
						seen, stoppedScopes, time.Since(run.stopper.stoppedAt).Round(100*time.Millisecond))
					if err := api.Start(); err != nil {
						t.Fatal(err)
					}
					run.afterRestart(t, seen)
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					createsOnlyMissing{run: run, t: t},
				}},
				ConfigStateChecks: []statecheck.StateCheck{stateMatchesCluster{run: run}},
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{stateMatchesCluster{run: run}},
			},
			{
				RefreshState: true,
				RefreshPlanChecks: resource.RefreshPlanChecks{PostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// stopRun is what the steps of TestAccWorkloadScope_apiServerStopped learn and share.
type stopRun struct {
	c          *testenv.Cluster
	namespaces []string
	want       map[string]bool // the Sidecars the scopes compile to, as namespace/name
	writer     *kube.Client    // the provider's identity and field manager
	reader     *kube.Client    // an admin, reading as the provider reads (field manager meshscope)

	stopper *midApplyStopper
	planned map[string]string    // the interrupted apply's planned manifests, by namespace/name
	before  map[string]types.UID // the Sidecars the cluster held before the re-apply
	orphan  string               // the Sidecar the test wrote as a committed, unanswered create
}

// afterRestart checks what the interrupted apply left (some of the Sidecars, at least those a
// poll saw, none foreign), writes the orphan, and records every Sidecar's UID.
func (r *stopRun) afterRestart(t *testing.T, seen int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	live, err := liveSidecars(ctx, r.c, r.namespaces)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) < seen || len(live) >= stoppedScopes {
		t.Fatalf("after the restart the cluster holds %d Sidecars, want at least the %d a poll saw and fewer than %d: %v",
			len(live), seen, stoppedScopes, sortedKeys(live))
	}
	for id := range live {
		if !r.want[id] {
			t.Fatalf("after the restart the cluster holds Sidecar %s, which no scope declares", id)
		}
	}
	t.Logf("after the restart the cluster holds %d of the %d Sidecars", len(live), stoppedScopes)
	for _, id := range sortedKeys(r.want) {
		if live[id] == nil {
			r.orphan = id
			break
		}
	}
	manifest, ok := r.planned[r.orphan]
	if !ok {
		t.Fatalf("no planned manifest for Sidecar %q (planned: %d)", r.orphan, len(r.planned))
	}
	if err := r.writer.ApplySidecar(ctx, manifest); err != nil {
		t.Fatalf("writing Sidecar %s as the interrupted apply would have: %v", r.orphan, err)
	}
	live, err = liveSidecars(ctx, r.c, r.namespaces)
	if err != nil {
		t.Fatal(err)
	}
	for id, obj := range live {
		r.before[id] = obj.GetUID()
	}
}

// midApplyStopper stops the API server from a goroutine as soon as a poll of it sees at least
// stopAfter Sidecars, and fewer than stoppedScopes.
type midApplyStopper struct {
	done chan struct{}
	// Set before done is closed.
	seen      int
	stoppedAt time.Time
	err       error
}

func stopMidApply(t *testing.T, api *testenv.APIServer, c *testenv.Cluster, namespaces []string) *midApplyStopper {
	t.Helper()
	s := &midApplyStopper{done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), stopPollTimeout)
	go func() {
		defer close(s.done)
		last, lastErr := 0, error(nil)
		for {
			live, err := liveSidecars(ctx, c, namespaces)
			switch {
			case err != nil:
				lastErr = err
			case len(live) >= stoppedScopes:
				s.err = fmt.Errorf("a poll saw all %d Sidecars before it saw %d: the apply ran too fast to be interrupted", len(live), stopAfter)
				return
			case len(live) >= stopAfter:
				s.seen, s.stoppedAt = len(live), time.Now()
				s.err = api.Stop()
				return
			default:
				last = len(live)
			}
			select {
			case <-ctx.Done():
				s.err = fmt.Errorf("no poll saw %d Sidecars within %s (last count %d, last error %v)", stopAfter, stopPollTimeout, last, lastErr)
				return
			case <-time.After(stopPollInterval):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// wait returns how many Sidecars the poll saw when it stopped the API server. The apply has
// failed by now, so the stopper has finished or finishes within moments: the wait is bounded.
func (s *midApplyStopper) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the apply failed, but the API server was not stopped: it failed for another reason")
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.seen < stopAfter || s.seen >= stoppedScopes {
		t.Fatalf("the API server was stopped when a poll saw %d Sidecars, want some and not all of %d", s.seen, stoppedScopes)
	}
	return s.seen
}

// liveSidecars lists the Sidecars of the namespaces, by namespace/name.
func liveSidecars(ctx context.Context, c *testenv.Cluster, namespaces []string) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	for _, ns := range namespaces {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		list, err := c.Dynamic.Resource(kube.SidecarGVR).Namespace(ns).List(lctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			id := obj.GetNamespace() + "/" + obj.GetName()
			if _, dup := out[id]; dup {
				return nil, fmt.Errorf("the API server listed Sidecar %s twice", id)
			}
			out[id] = obj
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// plannedManifests records the manifest planned for each scope, by namespace/name.
type plannedManifests struct{ run *stopRun }

func (p plannedManifests) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Type != "meshscope_workload_scope" {
			continue
		}
		after, _ := rc.Change.After.(map[string]any)
		id, _ := after["id"].(string)
		manifest, _ := after["manifest"].(string)
		if id == "" || manifest == "" {
			resp.Error = fmt.Errorf("%s: the plan leaves id or manifest unknown", rc.Address)
			return
		}
		p.run.planned[id] = manifest
	}
	if len(p.run.planned) != stoppedScopes {
		resp.Error = fmt.Errorf("the plan has %d scopes, want %d", len(p.run.planned), stoppedScopes)
	}
}

// createsOnlyMissing is the plan after the interrupted apply: every scope the state recorded is
// left as it is (no update, no replacement, no delete), and the others are created, the orphan
// among them: a Sidecar the cluster holds but the state does not record is adopted, not a
// conflict. It logs how many such Sidecars the cluster held.
type createsOnlyMissing struct {
	run *stopRun
	t   *testing.T
}

func (c createsOnlyMissing) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	var creates, noops int
	var errs []error
	orphanCreated := false
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Type != "meshscope_workload_scope" {
			continue
		}
		after, _ := rc.Change.After.(map[string]any)
		switch {
		case rc.Change.Actions.NoOp():
			noops++
			if after["id"] == c.run.orphan {
				errs = append(errs, fmt.Errorf("%s: the state records %s, which the interrupted apply never wrote", rc.Address, c.run.orphan))
			}
		case rc.Change.Actions.Create():
			creates++
			orphanCreated = orphanCreated || after["id"] == c.run.orphan
		default:
			errs = append(errs, fmt.Errorf("%s: planned %v, want no-op or create", rc.Address, rc.Change.Actions))
		}
	}
	if creates+noops != stoppedScopes {
		errs = append(errs, fmt.Errorf("the plan has %d scopes (%d to create, %d unchanged), want %d", creates+noops, creates, noops, stoppedScopes))
	}
	if !orphanCreated {
		errs = append(errs, fmt.Errorf("the plan does not create the scope of Sidecar %s, which the state cannot record", c.run.orphan))
	}
	c.t.Logf("the state recorded %d scopes; the plan creates %d; the cluster held %d Sidecars the state did not record (%s written by the test)",
		noops, creates, len(c.run.before)-noops, c.run.orphan)
	resp.Error = errors.Join(errs...)
}

// stateMatchesCluster checks the state against the cluster: the cluster holds exactly the wanted
// Sidecars, each once, with meshscope's label and field manager (and no other manager); those
// that existed before the re-apply kept their UID; the state holds exactly one scope per wanted
// Sidecar, and each scope's manifest equals the live Sidecar, both the fields meshscope owns and
// the whole object, as the provider reads and normalizes them.
type stateMatchesCluster struct{ run *stopRun }

func (s stateMatchesCluster) CheckState(ctx context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = s.run.matchState(ctx, req.State)
}

func (s *stopRun) matchState(ctx context.Context, state *tfjson.State) error {
	var errs []error
	live, err := liveSidecars(ctx, s.c, s.namespaces)
	if err != nil {
		return err
	}
	if len(live) != len(s.want) {
		errs = append(errs, fmt.Errorf("the cluster holds %d Sidecars, want %d", len(live), len(s.want)))
	}
	for _, id := range sortedKeys(live) {
		obj := live[id]
		if !s.want[id] {
			errs = append(errs, fmt.Errorf("the cluster holds Sidecar %s, which no scope declares", id))
		}
		if got := obj.GetLabels()[mesh.ManagedByLabel]; got != mesh.ManagedByValue {
			errs = append(errs, fmt.Errorf("sidecar %s: label %s=%q, want %q", id, mesh.ManagedByLabel, got, mesh.ManagedByValue))
		}
		var managers []string
		for _, mf := range obj.GetManagedFields() {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
		if want := []string{kube.DefaultFieldManager + "/" + string(metav1.ManagedFieldsOperationApply)}; !slices.Equal(managers, want) {
			errs = append(errs, fmt.Errorf("sidecar %s: managed by %v, want %v", id, managers, want))
		}
		if uid, ok := s.before[id]; ok && obj.GetUID() != uid {
			errs = append(errs, fmt.Errorf("sidecar %s was replaced: UID %s, %s before the re-apply", id, obj.GetUID(), uid))
		}
	}
	for _, id := range sortedKeys(s.want) {
		if live[id] == nil {
			errs = append(errs, fmt.Errorf("sidecar %s is missing from the cluster", id))
		}
	}

	inState := map[string]bool{}
	if state == nil || state.Values == nil || state.Values.RootModule == nil {
		return errors.Join(append(errs, errors.New("the state is empty"))...)
	}
	for _, r := range state.Values.RootModule.Resources {
		if r.Type != "meshscope_workload_scope" {
			continue
		}
		id, _ := r.AttributeValues["id"].(string)
		manifest, _ := r.AttributeValues["manifest"].(string)
		if inState[id] {
			errs = append(errs, fmt.Errorf("%s: the state holds scope %s twice", r.Address, id))
			continue
		}
		inState[id] = true
		if !s.want[id] {
			errs = append(errs, fmt.Errorf("%s: the state holds scope %s, which the configuration does not declare", r.Address, id))
			continue
		}
		ns, name, _ := strings.Cut(id, "/")
		obs, err := s.reader.ReadSidecar(ctx, ns, name)
		if err != nil || obs == nil {
			errs = append(errs, fmt.Errorf("%s: reading Sidecar %s: %v (found: %t)", r.Address, id, err, obs != nil))
			continue
		}
		if !obs.OwnedByUs || !obs.ManagedByLabel {
			errs = append(errs, fmt.Errorf("%s: Sidecar %s is not meshscope's as the provider reads it (owned fields: %t, label: %t)", r.Address, id, obs.OwnedByUs, obs.ManagedByLabel))
		}
		for _, read := range []struct{ what, doc string }{{"the fields meshscope owns", obs.Owned}, {"the whole object", obs.Full}} {
			got, err := normalizeSidecar(read.doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: Sidecar %s (%s): %v", r.Address, id, read.what, err))
			} else if got != manifest {
				errs = append(errs, fmt.Errorf("%s: the state's manifest differs from %s of Sidecar %s:\nstate:\n%s\ncluster:\n%s", r.Address, read.what, id, manifest, got))
			}
		}
	}
	if len(inState) != len(s.want) {
		errs = append(errs, fmt.Errorf("the state holds %d scopes, want %d", len(inState), len(s.want)))
	}
	return errors.Join(errs...)
}
