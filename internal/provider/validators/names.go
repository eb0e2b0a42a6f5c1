package validators

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
)

var (
	_ validator.String = objectNameValidator{}
	_ validator.String = dnsNameValidator{}
)

// objectNameValidator checks that a string is a Kubernetes object name (an RFC 1123 DNS subdomain).
//
// Instances should be created via the ObjectName function.
type objectNameValidator struct{}

// ObjectName checks that a string attribute is a valid Kubernetes object name, as
// the metadata.name of an Istio Sidecar must be.
func ObjectName() validator.String {
	return objectNameValidator{}
}

func (v objectNameValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v objectNameValidator) MarkdownDescription(_ context.Context) string {
	return "value must be a Kubernetes object name (an RFC 1123 DNS subdomain)"
}

func (v objectNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	name := req.ConfigValue.ValueString()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Invalid Object Name",
			fmt.Sprintf("The name %q is not a valid Kubernetes object name. Use at most 253 lowercase letters, "+
				"digits, '-' and '.', starting and ending with a letter or digit.\n\nOriginal Error: %s",
				name, strings.Join(errs, "; ")),
		)
	}
}

// dnsNameValidator checks that a string is a DNS name such as a cluster domain suffix.
//
// Instances should be created via the DNSName function.
type dnsNameValidator struct{}

// DNSName checks that a string attribute is a DNS name, for example `cluster.local`.
func DNSName() validator.String {
	return dnsNameValidator{}
}

func (v dnsNameValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v dnsNameValidator) MarkdownDescription(_ context.Context) string {
	return "value must be a DNS name, for example `cluster.local`"
}

func (v dnsNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	name := req.ConfigValue.ValueString()
	if err := istioconfig.ValidateDNSName(name); err != nil {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Invalid DNS Name",
			fmt.Sprintf("The value %q is not a DNS name. Use dot-separated labels of letters, digits and '-', "+
				"for example \"cluster.local\".\n\nOriginal Error: %s", name, err),
		)
	}
}
