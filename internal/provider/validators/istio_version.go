package validators

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
)

var _ validator.String = istioVersionValidator{}

// istioVersionValidator checks that a string is an Istio release the predictor knows.
//
// Instances should be created via the IstioVersion function.
type istioVersionValidator struct{}

// IstioVersion checks that a string attribute is an Istio release as MAJOR.MINOR
// (or MAJOR.MINOR.PATCH) that the predictor supports.
func IstioVersion() validator.String {
	return istioVersionValidator{}
}

func (v istioVersionValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v istioVersionValidator) MarkdownDescription(_ context.Context) string {
	return "value must be a supported Istio release as MAJOR.MINOR, for example `1.31`"
}

func (v istioVersionValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := predict.ParseVersion(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Unsupported Istio Version",
			fmt.Sprintf("The Istio version %q cannot be predicted. Set istio_version to the minor release istiod runs, "+
				"for example \"1.31\".\n\nOriginal Error: %s", req.ConfigValue.ValueString(), err),
		)
	}
}
