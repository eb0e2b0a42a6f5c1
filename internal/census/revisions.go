package census

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Revision is an istiod revision the inventory runs (C12): the Istio release of its image.
type Revision struct {
	// Name is the istio.io/rev of its Deployment, "default" when it has none.
	Name string
	// Version is "major.minor" of the image tag ("1.30" for pilot:1.30.2), "" when the tag
	// does not say.
	Version string
	// Image is the image of its discovery container; Deployment is namespace/name.
	Image, Deployment string
}

var imageVersion = regexp.MustCompile(`:v?(\d+\.\d+)(?:\.\d+)?(?:[-.@].*)?$`)

// revisionsOf reads the istiod revisions the inventory runs: Deployments labelled app=istiod (on
// the Deployment or its pods), the revision from the Deployment's istio.io/rev ("default" without).
func revisionsOf(inv *mesh.Inventory) map[string]Revision {
	out := map[string]Revision{}
	for _, w := range inv.Workloads {
		if w.Kind != "Deployment" || w.Labels["app"] != "istiod" && w.PodLabels["app"] != "istiod" {
			continue
		}
		r := Revision{Name: w.Labels[RevisionLabel], Image: w.Image, Deployment: w.Key()}
		if r.Name == "" {
			r.Name = defaultRevision
		}
		if m := imageVersion.FindStringSubmatch(w.Image); m != nil {
			r.Version = m[1]
		}
		out[r.Name] = r
	}
	return out
}

// Revisions are the istiod revisions of the inventory, by name.
func (c *Census) Revisions() map[string]Revision { return c.revisions }

// Versions are the distinct Istio releases of the inventory's revisions, sorted.
func (c *Census) Versions() []string {
	var out []string
	for _, r := range c.revisions {
		if r.Version != "" && !slices.Contains(out, r.Version) {
			out = append(out, r.Version)
		}
	}
	slices.Sort(out)
	return out
}

// injectedRevision is the revision a Pod's injector wrote in its sidecar.istio.io/status
// annotation, "" when there is none.
func injectedRevision(o *mesh.Workload) string {
	var st struct {
		Revision string `json:"revision"`
	}
	if s := o.PodAnnotations["sidecar.istio.io/status"]; s != "" && json.Unmarshal([]byte(s), &st) == nil {
		return st.Revision
	}
	return ""
}
