package validators

import (
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NamespaceName checks that a string attribute is a valid Kubernetes namespace name
// (an RFC 1123 DNS label).
func NamespaceName() validator.String {
	return stringValidator{
		description: "value must be a Kubernetes namespace name (an RFC 1123 DNS label: at most 63 lowercase letters, digits and '-')",
		validate: rejectIf(func(ns string) error { return joinErrors(validation.IsDNS1123Label(ns)) },
			"Invalid Namespace Name",
			"The namespace %q is not a valid Kubernetes namespace name. "+
				"Use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit.\n\n"+
				"Original Error: %s"),
	}
}
