package validators

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

var _ validator.String = namespaceNameValidator{}

// namespaceNameValidator checks that a string is a Kubernetes namespace name
// (an RFC 1123 DNS label).
//
// Instances should be created via the NamespaceName function.
type namespaceNameValidator struct{}

// NamespaceName checks that a string attribute is a valid Kubernetes namespace name.
func NamespaceName() validator.String {
	return namespaceNameValidator{}
}

func (v namespaceNameValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v namespaceNameValidator) MarkdownDescription(_ context.Context) string {
	return "value must be a Kubernetes namespace name (an RFC 1123 DNS label: at most 63 lowercase letters, digits and '-')"
}

func (v namespaceNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	ns := req.ConfigValue.ValueString()
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Invalid Namespace Name",
			fmt.Sprintf("The namespace %q is not a valid Kubernetes namespace name. "+
				"Use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit.\n\n"+
				"Original Error: %s", ns, strings.Join(errs, "; ")),
		)
	}
}
