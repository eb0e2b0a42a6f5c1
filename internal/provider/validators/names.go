package validators

import (
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// ObjectName checks that a string attribute is a valid Kubernetes object name (an
// RFC 1123 DNS subdomain), as the metadata.name of an Istio Sidecar must be.
func ObjectName() validator.String {
	return stringValidator{
		description: "value must be a Kubernetes object name (an RFC 1123 DNS subdomain)",
		validate: rejectIf(func(name string) error { return joinErrors(validation.IsDNS1123Subdomain(name)) },
			"Invalid Object Name",
			"The name %q is not a valid Kubernetes object name. Use at most 253 lowercase letters, "+
				"digits, '-' and '.', starting and ending with a letter or digit.\n\nOriginal Error: %s"),
	}
}

// DNSName checks that a string attribute is a DNS name such as a cluster domain
// suffix, for example `cluster.local`.
func DNSName() validator.String {
	return stringValidator{
		description: "value must be a DNS name, for example `cluster.local`",
		validate: rejectIf(istioconfig.ValidateDNSName,
			"Invalid DNS Name",
			"The value %q is not a DNS name. Use dot-separated labels of letters, digits and '-', "+
				"for example \"cluster.local\".\n\nOriginal Error: %s"),
	}
}
