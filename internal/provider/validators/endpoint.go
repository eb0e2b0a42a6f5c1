package validators

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = defaultEndpointValidator{}

// defaultEndpointValidator checks a Sidecar ingress defaultEndpoint.
//
// Instances should be created via the DefaultEndpoint function.
type defaultEndpointValidator struct{}

// DefaultEndpoint checks that a string attribute is a Sidecar ingress
// defaultEndpoint: `127.0.0.1:PORT`, `0.0.0.0:PORT`, `[::1]:PORT`, `[::]:PORT`
// or `unix:///path/to/socket`.
func DefaultEndpoint() validator.String {
	return defaultEndpointValidator{}
}

func (v defaultEndpointValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v defaultEndpointValidator) MarkdownDescription(_ context.Context) string {
	return "value must be `127.0.0.1:PORT`, `0.0.0.0:PORT`, `[::1]:PORT`, `[::]:PORT` or `unix:///path`"
}

func (v defaultEndpointValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	ep := req.ConfigValue.ValueString()
	if err := checkEndpoint(ep); err != nil {
		resp.Diagnostics.AddAttributeError(
			req.Path,
			"Invalid Default Endpoint",
			fmt.Sprintf("The default endpoint %q is not one Istio accepts. Use 127.0.0.1:PORT or 0.0.0.0:PORT "+
				"(or [::1]:PORT, [::]:PORT) with the port the application listens on, or unix:///path for a Unix socket.\n\n"+
				"Original Error: %s", ep, err),
		)
	}
}

func checkEndpoint(ep string) error {
	if strings.HasPrefix(ep, "unix://") {
		if len(ep) == len("unix://") || !strings.HasPrefix(ep, "unix:///") && !strings.HasPrefix(ep, "unix://@") {
			return fmt.Errorf("a unix endpoint needs an absolute path or an abstract name (unix:///path or unix://@name)")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return err
	}
	switch host {
	case "127.0.0.1", "0.0.0.0", "::1", "::":
	default:
		return fmt.Errorf("the address %q is not one of 127.0.0.1, 0.0.0.0, ::1 and :: (loopback or wildcard)", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("the port %q is not a number from 1 to 65535", port)
	}
	return nil
}
