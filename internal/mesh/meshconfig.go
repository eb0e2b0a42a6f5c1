package mesh

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// meshConfigYAML is the subset of istio.io/api/mesh/v1alpha1.MeshConfig that
// decides which clusters a sidecar gets.
type meshConfigYAML struct {
	RootNamespace                  *string                `json:"rootNamespace"`
	DefaultServiceExportTo         []string               `json:"defaultServiceExportTo"`
	DefaultDestinationRuleExportTo []string               `json:"defaultDestinationRuleExportTo"`
	DefaultVirtualServiceExportTo  []string               `json:"defaultVirtualServiceExportTo"`
	DiscoverySelectors             []metav1.LabelSelector `json:"discoverySelectors"`
	OutboundTrafficPolicy          *struct {
		Mode *string `json:"mode"`
	} `json:"outboundTrafficPolicy"`
	DefaultConfig *struct {
		Tracing *struct {
			Zipkin    *struct{} `json:"zipkin"`
			Lightstep *struct{} `json:"lightstep"`
			Datadog   *struct{} `json:"datadog"`
		} `json:"tracing"`
	} `json:"defaultConfig"`
}

var outboundModes = map[string]bool{"ALLOW_ANY": true, "REGISTRY_ONLY": true, "ALLOW_ANY_DYNAMIC_DNS": true}

// ParseMeshConfig reads the `mesh` key of the `istio` ConfigMap over Istio's defaults.
func ParseMeshConfig(data string) (MeshSettings, error) {
	s := DefaultMeshSettings()
	if strings.TrimSpace(data) == "" {
		return s, nil
	}
	var m meshConfigYAML
	if err := yaml.Unmarshal([]byte(data), &m); err != nil {
		return s, err
	}
	if m.RootNamespace != nil && *m.RootNamespace != "" {
		s.RootNamespace = *m.RootNamespace
	}
	if m.DefaultServiceExportTo != nil {
		s.DefaultServiceExportTo = m.DefaultServiceExportTo
	}
	if m.DefaultDestinationRuleExportTo != nil {
		s.DefaultDestinationRuleExportTo = m.DefaultDestinationRuleExportTo
	}
	if m.DefaultVirtualServiceExportTo != nil {
		s.DefaultVirtualServiceExportTo = m.DefaultVirtualServiceExportTo
	}
	s.DiscoverySelectors = m.DiscoverySelectors
	for i := range s.DiscoverySelectors {
		if _, err := metav1.LabelSelectorAsSelector(&s.DiscoverySelectors[i]); err != nil {
			return s, fmt.Errorf("discoverySelectors[%d]: %w", i, err)
		}
	}
	if m.OutboundTrafficPolicy != nil {
		// The proto enum's zero value is REGISTRY_ONLY.
		s.OutboundTrafficPolicy = "REGISTRY_ONLY"
		if m.OutboundTrafficPolicy.Mode != nil {
			mode := *m.OutboundTrafficPolicy.Mode
			if !outboundModes[mode] {
				return s, fmt.Errorf("outboundTrafficPolicy.mode %q is not one of ALLOW_ANY, REGISTRY_ONLY, ALLOW_ANY_DYNAMIC_DNS", mode)
			}
			s.OutboundTrafficPolicy = mode
		}
	}
	if m.DefaultConfig != nil && m.DefaultConfig.Tracing != nil {
		t := m.DefaultConfig.Tracing
		switch {
		case t.Zipkin != nil:
			s.Tracer = "zipkin"
		case t.Lightstep != nil:
			s.Tracer = "lightstep"
		case t.Datadog != nil:
			s.Tracer = "datadog_agent"
		}
	}
	return s, nil
}
