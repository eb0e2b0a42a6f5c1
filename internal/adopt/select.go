package adopt

import (
	"maps"
	"slices"
	"strings"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// nsWorkloads indexes the workloads of one namespace by label, so that the workloads a
// selector selects are an intersection of short lists rather than a scan of the namespace.
type nsWorkloads struct {
	list     []*mesh.Workload
	postings map[string][]int // "key\x00value" -> indexes into list, ascending
}

func newNSWorkloads(list []*mesh.Workload) *nsWorkloads {
	ix := &nsWorkloads{list: list, postings: map[string][]int{}}
	for i, w := range list {
		for k, v := range w.PodLabels {
			ix.postings[k+"\x00"+v] = append(ix.postings[k+"\x00"+v], i)
		}
	}
	return ix
}

// selected returns the indexes of the workloads whose pod labels include sel, ascending.
// An empty selector selects every workload, as a Sidecar without workloadSelector does.
func (ix *nsWorkloads) selected(sel map[string]string) []int {
	if len(sel) == 0 {
		out := make([]int, len(ix.list))
		for i := range out {
			out[i] = i
		}
		return out
	}
	var lists [][]int
	for k, v := range sel {
		l := ix.postings[k+"\x00"+v]
		if len(l) == 0 {
			return nil
		}
		lists = append(lists, l)
	}
	slices.SortFunc(lists, func(a, b []int) int { return len(a) - len(b) })
	out := slices.Clone(lists[0])
	for _, l := range lists[1:] {
		kept := out[:0]
		for _, i := range out {
			if _, ok := slices.BinarySearch(l, i); ok {
				kept = append(kept, i)
			}
		}
		out = kept
	}
	return out
}

// identityKeys name an application, best first: a selector starts with the first of them a
// workload carries, so that it reads as the workload's name and does not select by accident.
var identityKeys = []string{
	"app", "app.kubernetes.io/name", "service.istio.io/canonical-name", "k8s-app", "name",
	"app.kubernetes.io/instance", "component", "app.kubernetes.io/component", "app.kubernetes.io/part-of",
}

// versionKeys tell versions of one application apart.
var versionKeys = []string{"version", "app.kubernetes.io/version", "service.istio.io/canonical-revision"}

// volatileKeys are set per pod or per rollout by controllers and injectors (a hash, a pod's
// own name, a job's uid): a selector uses them only when nothing else tells the workload apart,
// as the next rollout may change them.
var volatileKeys = []string{
	"pod-template-hash", "controller-revision-hash", "pod-template-generation",
	"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-uid",
	"batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name", "security.istio.io/tlsMode",
}

// keyRank orders label keys for a selector: identity, version, the others by name, volatile last.
func keyRank(k string) (int, string) {
	if i := slices.Index(identityKeys, k); i >= 0 {
		return i, ""
	}
	if i := slices.Index(versionKeys, k); i >= 0 {
		return 100 + i, ""
	}
	if slices.Contains(volatileKeys, k) {
		return 300, k
	}
	return 200, k
}

func rankedKeys(labels map[string]string) []string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ra, sa := keyRank(a)
		rb, sb := keyRank(b)
		if ra != rb {
			return ra - rb
		}
		return strings.Compare(sa, sb)
	})
	return keys
}

// chooseSelector picks, from a workload's pod labels, a selector that selects exactly the
// workloads its full labels select (want of them: no selector drawn from its labels can select
// fewer). It prefers a selector that names the application (app, app.kubernetes.io/name, ...),
// then the fewest labels, never a volatile one while another will do. Deterministic.
func (ix *nsWorkloads) chooseSelector(labels map[string]string, want int) map[string]string {
	keys := rankedKeys(labels)
	count := func(sel map[string]string) int { return len(ix.selected(sel)) }
	with := func(sel map[string]string, k string) map[string]string {
		out := make(map[string]string, len(sel)+1)
		for a, b := range sel {
			out[a] = b
		}
		out[k] = labels[k]
		return out
	}
	sel := map[string]string{}
	if len(keys) > 0 && slices.Contains(identityKeys, keys[0]) {
		sel = with(sel, keys[0])
		if count(sel) == want {
			return sel
		}
	}
	// One more label.
	for _, k := range keys {
		if _, ok := sel[k]; ok {
			continue
		}
		if s := with(sel, k); count(s) == want {
			return s
		}
	}
	// Without a name label: two labels.
	if len(sel) == 0 {
		for i, a := range keys {
			for _, b := range keys[i+1:] {
				if s := with(with(sel, a), b); count(s) == want {
					return s
				}
			}
		}
	}
	// Greedily: each label that narrows the selection, in order.
	n := count(sel)
	for _, k := range keys {
		if _, ok := sel[k]; ok {
			continue
		}
		s := with(sel, k)
		if m := count(s); m < n {
			sel, n = s, m
			if n == want {
				return sel
			}
		}
	}
	return maps.Clone(labels)
}
