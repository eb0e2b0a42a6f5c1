package adopt

import (
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// TestChooseSelector: the selector names the application first, then the fewest labels that
// select what the full labels select, never a volatile label while another will do.
func TestChooseSelector(t *testing.T) {
	w := func(name string, labels map[string]string) *mesh.Workload {
		return &mesh.Workload{Meta: mesh.Meta{Kind: "Deployment", Name: name, Namespace: "ns"}, PodLabels: labels}
	}
	list := []*mesh.Workload{
		w("web", map[string]string{"app": "web", "version": "v1", "team": "a"}),
		w("web-v2", map[string]string{"app": "web", "version": "v2", "team": "a"}),
		w("api", map[string]string{"app.kubernetes.io/name": "api", "pod-template-hash": "x1", "tier": "be"}),
		w("api-old", map[string]string{"app.kubernetes.io/name": "api", "pod-template-hash": "x2", "tier": "legacy"}),
		w("noname", map[string]string{"tier": "be", "zone": "z1"}),
		w("noname2", map[string]string{"tier": "fe", "zone": "z1"}),
		w("sup", map[string]string{"app": "sup"}),
		w("sup-more", map[string]string{"app": "sup", "extra": "1"}),
	}
	ix := newNSWorkloads(list)
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "app=web,version=v1"},                 // the name, then the version tells it apart
		{2, "app.kubernetes.io/name=api,tier=be"}, // a stable label before the volatile hash
		{4, "tier=be,zone=z1"},                    // no name label: the fewest labels
		{6, "app=sup"},                            // cannot leave sup-more out: selects both
	} {
		want := len(ix.selected(list[tc.i].PodLabels))
		sel := ix.chooseSelector(list[tc.i].PodLabels, want)
		var got []string
		for _, k := range sortedKeysOf(sel) {
			got = append(got, k+"="+sel[k])
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: selector %v, want %s", list[tc.i].Name, got, tc.want)
		}
		if n := len(ix.selected(sel)); n != want {
			t.Errorf("%s: the selector selects %d workloads, want %d", list[tc.i].Name, n, want)
		}
	}
}
