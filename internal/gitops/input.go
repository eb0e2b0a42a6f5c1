package gitops

import (
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// Attribute names, as the meshscope_kustomize_overlay resource and the render
// settings file spell them. Problems name them.
const (
	AttrSidecars     = "sidecars"
	AttrEnvironments = "environments"
	AttrArgoCD       = "argocd"

	FieldExtraSystemHosts      = "extra_system_hosts"
	FieldOutboundTrafficPolicy = "outbound_traffic_policy"
	FieldLabels                = "labels"
	FieldAnnotations           = "annotations"
	FieldPatches               = "patches"

	FieldRepoURL           = "repo_url"
	FieldTargetRevision    = "target_revision"
	FieldProject           = "project"
	FieldDestinationServer = "destination_server"
	FieldPathPrefix        = "path_prefix"
	FieldNamespace         = "namespace"
	FieldNamePrefix        = "name_prefix"
	FieldSyncPolicy        = "sync_policy"
)

// Defaults of the Argo CD settings.
const (
	DefaultTargetRevision    = "HEAD"
	DefaultProject           = "default"
	DefaultDestinationServer = "https://kubernetes.default.svc"
	DefaultArgoCDNamespace   = "argocd"
	DefaultNamePrefix        = "meshscope"
)

// Input is what a layout is built from.
type Input struct {
	// Sidecars are YAML strings, each holding Sidecar documents.
	Sidecars []string
	Settings
}

// Settings are the environments and the Argo CD wiring. The JSON names are the
// resource's attribute names, so a settings file for `render --settings` reads
// like the resource's configuration.
type Settings struct {
	Environments map[string]Environment `json:"environments,omitempty"`
	ArgoCD       *ArgoCD                `json:"argocd,omitempty"`
}

// Environment is one overlay's changes to the base.
type Environment struct {
	// ExtraSystemHosts are egress hosts ("namespace/dnsName") added to every
	// egress listener of every Sidecar.
	ExtraSystemHosts []string `json:"extra_system_hosts,omitempty"`
	// OutboundTrafficPolicy overrides every Sidecar's outboundTrafficPolicy.mode:
	// ALLOW_ANY or REGISTRY_ONLY, or "" for none.
	OutboundTrafficPolicy string `json:"outbound_traffic_policy,omitempty"`
	// Labels and Annotations are added to every object of the overlay.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Patches are kustomize patches, JSON 6902 or strategic merge, applied last.
	Patches []Patch `json:"patches,omitempty"`
}

// Patch is a kustomize patch: a strategic-merge patch (a YAML or JSON object) or
// a JSON 6902 patch (a YAML or JSON list of operations, which needs a target).
type Patch struct {
	Target *Target `json:"target,omitempty"`
	Patch  string  `json:"patch"`
}

// Target selects the objects a patch applies to. Empty fields match anything;
// name and namespace are anchored regular expressions, as in kustomize.
type Target struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"label_selector,omitempty"`
	AnnotationSelector string `json:"annotation_selector,omitempty"`
}

// ArgoCD wires each environment's overlay into an Argo CD Application.
type ArgoCD struct {
	RepoURL string `json:"repo_url"`
	// TargetRevision defaults to HEAD.
	TargetRevision string `json:"target_revision,omitempty"`
	// Project defaults to "default".
	Project string `json:"project,omitempty"`
	// DestinationServer defaults to the in-cluster API server.
	DestinationServer string `json:"destination_server,omitempty"`
	// PathPrefix is where the layout lives in the repository ("" for the root).
	PathPrefix string `json:"path_prefix,omitempty"`
	// Namespace is where the Applications live; defaults to "argocd".
	Namespace string `json:"namespace,omitempty"`
	// NamePrefix names the Applications <prefix>-<env>; defaults to "meshscope".
	NamePrefix string      `json:"name_prefix,omitempty"`
	SyncPolicy *SyncPolicy `json:"sync_policy,omitempty"`
}

// SyncPolicy is the Applications' syncPolicy.
type SyncPolicy struct {
	Automated bool `json:"automated,omitempty"`
	Prune     bool `json:"prune,omitempty"`
	SelfHeal  bool `json:"self_heal,omitempty"`
}

// Location says which input a problem is about, in the resource's terms.
type Location struct {
	// Attribute is AttrSidecars, AttrEnvironments, AttrArgoCD, or "" for the input as a whole.
	Attribute string
	// Env is the environment, for AttrEnvironments.
	Env string
	// Field is a Field* name within the environment or the argocd settings, or "".
	Field string
	// Index is the position in sidecars, extra_system_hosts or patches, or -1.
	Index int
	// Key is the labels or annotations key, or "".
	Key string
}

// Problem is a bad input. The Summary is in Title Case; the Detail quotes the
// offending value and says what to do.
type Problem struct {
	Location
	Summary string
	Detail  string
}

func (p Problem) Error() string {
	where := p.Attribute
	switch {
	case p.Attribute == AttrSidecars && p.Index >= 0:
		where = fmt.Sprintf("sidecars[%d]", p.Index)
	case p.Attribute == AttrEnvironments && p.Env != "":
		where = fmt.Sprintf("environments[%q]", p.Env)
		if p.Field != "" {
			where += "." + p.Field
		}
		if p.Index >= 0 {
			where += fmt.Sprintf("[%d]", p.Index)
		} else if p.Key != "" {
			where += fmt.Sprintf("[%q]", p.Key)
		}
	case p.Attribute == AttrArgoCD && p.Field != "":
		where += "." + p.Field
	}
	if where == "" {
		return p.Summary + ": " + p.Detail
	}
	return where + ": " + p.Summary + ": " + p.Detail
}

// problems collects problems.
type problems []Problem

func (ps *problems) add(loc Location, summary, format string, a ...any) {
	*ps = append(*ps, Problem{Location: loc, Summary: summary, Detail: fmt.Sprintf(format, a...)})
}

func sidecarAt(i int) Location { return Location{Attribute: AttrSidecars, Index: i} }

func envAt(env, field string, index int, key string) Location {
	return Location{Attribute: AttrEnvironments, Env: env, Field: field, Index: index, Key: key}
}

func argoAt(field string) Location { return Location{Attribute: AttrArgoCD, Field: field, Index: -1} }

// EnvNames returns the environment names, sorted.
func (s Settings) EnvNames() []string {
	return sortedKeys(s.Environments)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseSettings reads a settings file (YAML or JSON) with `environments` and
// `argocd`, named as the resource's attributes. Unknown fields are errors.
func ParseSettings(data []byte) (Settings, error) {
	var s Settings
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Settings{}, err
	}
	return s, nil
}
