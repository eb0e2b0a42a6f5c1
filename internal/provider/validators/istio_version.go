package validators

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

// IstioVersion checks that a string attribute is an Istio release as MAJOR.MINOR
// (or MAJOR.MINOR.PATCH) that the predictor supports.
func IstioVersion() validator.String {
	return stringValidator{
		description: "value must be a supported Istio release as MAJOR.MINOR, for example `" + istioconfig.DefaultVersion + "`",
		validate:    validateIstioVersion,
	}
}

func validateIstioVersion(value string, p path.Path, diags *diag.Diagnostics) {
	ver, err := istioconfig.ParseVersion(value)
	switch {
	case err != nil:
		diags.AddAttributeError(
			p,
			"Unsupported Istio Version",
			fmt.Sprintf("The Istio version %q cannot be predicted. Set istio_version to the minor release istiod runs, "+
				"from %s to %s, for example \"%s\".\n\nOriginal Error: %s", value,
				istioconfig.Oldest, istioconfig.Newest, istioconfig.DefaultVersion, err),
		)
	case !ver.Modelled():
		diags.AddAttributeWarning(
			p,
			"Istio Version Newer Than Modelled",
			fmt.Sprintf("Istio %s is newer than the newest release meshscope models, %s: clusters are predicted with %s rules, "+
				"which may differ from what istiod %s pushes. Check the prediction against `istioctl proxy-config cluster` "+
				"after the first rollout, or use a meshscope release that models %s.", ver, istioconfig.Newest, istioconfig.Newest, ver, ver),
		)
	}
}
