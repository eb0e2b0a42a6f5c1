package validators

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
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
	ver, err := istioconfig.ParseVersion(req.ConfigValue.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Unsupported Istio Version",
			fmt.Sprintf("The Istio version %q cannot be predicted. Set istio_version to the minor release istiod runs, "+
				"from %s to %s, for example \"%s\".\n\nOriginal Error: %s", req.ConfigValue.ValueString(),
				istioconfig.Oldest, istioconfig.Newest, istioconfig.DefaultVersion, err),
		)
	case !ver.Modelled():
		resp.Diagnostics.AddAttributeWarning(
			req.Path,
			"Istio Version Newer Than Modelled",
			fmt.Sprintf("Istio %s is newer than the newest release meshscope models, %s: clusters are predicted with %s rules, "+
				"which may differ from what istiod %s pushes. Check the prediction against `istioctl proxy-config cluster` "+
				"after the first rollout, or use a meshscope release that models %s.", ver, istioconfig.Newest, istioconfig.Newest, ver, ver),
		)
	}
}
