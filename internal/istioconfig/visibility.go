package istioconfig

import (
	"slices"
	"strings"
)

// ExportToAnnotation is the Kubernetes Service annotation that gives its exportTo.
const ExportToAnnotation = "networking.istio.io/exportTo"

// exportTo values with a meaning of their own; any other value is a namespace.
const (
	// ExportPublic exports to every namespace.
	ExportPublic = "*"
	// ExportPrivate exports to the config's own namespace.
	ExportPrivate = "."
	// ExportNone exports to no namespace.
	ExportNone = "~"
)

// AnnotationExportTo reads a Kubernetes Service's exportTo from its annotations: the
// comma-separated ExportToAnnotation, spaces trimmed, repeats dropped; nil without the
// annotation (rule R9). Istio: pilot/pkg/serviceregistry/kube.ConvertService.
func AnnotationExportTo(annotations map[string]string) []string {
	v := annotations[ExportToAnnotation]
	if v == "" {
		return nil
	}
	var out []string
	for _, e := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(e))
	}
	return ExportToSet(out)
}

// ExportToSet is an exportTo field as Istio holds it: a set, here in first-seen order.
func ExportToSet(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// DefaultExportTo is a mesh config default exportTo (defaultServiceExportTo,
// defaultVirtualServiceExportTo, defaultDestinationRuleExportTo): public when unset.
// Istio: pkg/config/mesh.DefaultMeshConfig.
func DefaultExportTo(meshDefault []string) []string {
	if meshDefault == nil {
		return []string{ExportPublic}
	}
	return meshDefault
}

// EffectiveExportTo is the exportTo a config is visible by: its own, or when it has none
// the mesh default (rule R9). Istio: pilot/pkg/model/push_context.go serviceExportTo.
func EffectiveExportTo(own, meshDefault []string) []string {
	if len(own) > 0 {
		return own
	}
	return DefaultExportTo(meshDefault)
}

// ExportedTo reports whether a config of namespace configNs with the effective exportTo exp
// is visible in namespace ns (rule R12). Istio: pilot/pkg/model/push_context.go
// IsServiceVisible.
func ExportedTo(exp []string, configNs, ns string) bool {
	return slices.Contains(exp, ExportPublic) || (slices.Contains(exp, ExportPrivate) && configNs == ns) || slices.Contains(exp, ns)
}
