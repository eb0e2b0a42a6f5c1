package validators

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// DefaultEndpoint checks that a string attribute is a Sidecar ingress
// defaultEndpoint: `127.0.0.1:PORT`, `0.0.0.0:PORT`, `[::1]:PORT`, `[::]:PORT`
// or `unix:///path/to/socket`.
func DefaultEndpoint() validator.String {
	return stringValidator{
		description: "value must be `127.0.0.1:PORT`, `0.0.0.0:PORT`, `[::1]:PORT`, `[::]:PORT` or `unix:///path`",
		validate: rejectIf(checkEndpoint,
			"Invalid Default Endpoint",
			"The default endpoint %q is not one Istio accepts. Use 127.0.0.1:PORT or 0.0.0.0:PORT "+
				"(or [::1]:PORT, [::]:PORT) with the port the application listens on, or unix:///path for a Unix socket.\n\n"+
				"Original Error: %s"),
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
