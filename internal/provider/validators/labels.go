package validators

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

var _ validator.Map = labelsValidator{}

// labelsValidator checks that every key of a map of strings is a Kubernetes label
// key and every value a Kubernetes label value.
//
// Instances should be created via the Labels function.
type labelsValidator struct{}

// Labels checks a map of strings attribute holding Kubernetes labels: each key must
// be a qualified name with an optional DNS subdomain prefix, each value at most 63
// characters of alphanumerics, '-', '_' and '.'.
func Labels() validator.Map {
	return labelsValidator{}
}

func (v labelsValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v labelsValidator) MarkdownDescription(_ context.Context) string {
	return "keys must be Kubernetes label keys (`[prefix/]name`) and values Kubernetes label values"
}

func (v labelsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	keys := make([]string, 0, len(elems))
	for k := range elems {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := req.Path.AtMapKey(k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(
				p,
				"Invalid Label Key",
				fmt.Sprintf("The label key %q is not a valid Kubernetes label key. "+
					"Use an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', "+
					"starting and ending with an alphanumeric, for example \"app\" or \"app.kubernetes.io/name\".\n\n"+
					"Original Error: %s", k, strings.Join(errs, "; ")),
			)
		}
		s, ok := elems[k].(types.String)
		if ok && s.IsNull() {
			resp.Diagnostics.AddAttributeError(
				p,
				"Null Label Value",
				fmt.Sprintf("The label %q is null. A label needs a value: give a string (\"\" is allowed), or remove the key.", k),
			)
			continue
		}
		if !ok || s.IsUnknown() {
			continue
		}
		if errs := validation.IsValidLabelValue(s.ValueString()); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(
				p,
				"Invalid Label Value",
				fmt.Sprintf("The value %q of label %q is not a valid Kubernetes label value. "+
					"Use at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric, or an empty string.\n\n"+
					"Original Error: %s", s.ValueString(), k, strings.Join(errs, "; ")),
			)
		}
	}
}
