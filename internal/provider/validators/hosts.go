package validators

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DependencyHost checks that a string attribute is a well-formed dependency host:
// a service (`name`, `name.namespace`, `name.namespace.svc.cluster.local`), a
// ServiceEntry host such as `api.example.com` or `*.example.com`, or a whole
// namespace (`namespace/*`).
func DependencyHost() validator.String {
	return stringValidator{
		description: "value must be a service (`name`, `name.namespace`, an FQDN), a ServiceEntry host (`api.example.com`, `*.example.com`) or a whole namespace (`namespace/*`)",
		validate: rejectIf(checkDependencyHost,
			"Malformed Dependency Host",
			"The dependency %q is not a well-formed host. Write a service as \"name\", \"name.namespace\" "+
				"or \"name.namespace.svc.cluster.local\", a ServiceEntry host as \"api.example.com\" or \"*.example.com\", "+
				"or a whole namespace as \"namespace/*\". Leave out schemes, ports and paths: list ports in `ports`.\n\n"+
				"Original Error: %s"),
	}
}

func checkDependencyHost(h string) error {
	if ns, rest, ok := strings.Cut(h, "/"); ok {
		err := checkNamespacePart(ns, false)
		if err == nil && rest != "*" {
			err = fmt.Errorf("after the namespace %q only \"/*\" (the whole namespace) may follow, not %q", ns, "/"+rest)
		}
		return err
	}
	return checkHostPart(h)
}

// EgressHost checks that a string attribute is a Sidecar egress host in
// `namespace/dnsName` form, where namespace is a namespace name, `*`, `.` or `~`
// (or a `~` exclusion of a namespace, `~ns`) and dnsName is `*`, a host or a `*.`
// wildcard host.
func EgressHost() validator.String {
	return stringValidator{
		description: "value must be a Sidecar egress host `namespace/dnsName`, for example `istio-system/*`",
		validate: rejectIf(checkEgressHost,
			"Malformed Egress Host",
			"The egress host %q is not in the Sidecar form namespace/dnsName. "+
				"Use a namespace name, \"*\", \".\", \"~\" or \"~namespace\" before the slash and \"*\", a host or a \"*.\" wildcard host after it, "+
				"for example \"istio-system/*\".\n\n"+
				"Original Error: %s"),
	}
}

func checkEgressHost(h string) error {
	ns, host, ok := strings.Cut(h, "/")
	if !ok {
		return errors.New("no namespace part: write namespace/dnsName")
	}
	if err := checkNamespacePart(ns, true); err != nil {
		return err
	}
	return checkHostPart(host)
}

// checkNamespacePart checks the part of a host before '/'. The Sidecar syntax
// also allows "*" (every namespace), "." (the same namespace) and "~" (none).
func checkNamespacePart(ns string, sidecarSyntax bool) error {
	if ns == "" {
		return errors.New("the namespace before '/' is empty")
	}
	if sidecarSyntax {
		// "~" excludes: "~" and "~*" every namespace, "~ns" one namespace.
		// Whether the Istio release understands it is checked with istio_version.
		if rest, excluded := strings.CutPrefix(ns, "~"); excluded {
			if rest == "" || rest == "*" {
				return nil
			}
			ns = rest
		}
		if ns == "*" || ns == "." {
			return nil
		}
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// checkHostPart checks a DNS name, "*" or a "*." wildcard DNS name.
func checkHostPart(h string) error {
	switch {
	case h == "":
		return errors.New("the host is empty")
	case h == "*":
		return nil
	case strings.Contains(h, "/"):
		return fmt.Errorf("the host %q contains '/'", h)
	case strings.Contains(h, "://"):
		return errors.New("the host has a URL scheme")
	case strings.Contains(h, ":"):
		return fmt.Errorf("the host %q contains ':' (a port or scheme)", h)
	}
	name := strings.TrimPrefix(h, "*.")
	if len(name) > 253 {
		return fmt.Errorf("the host is %d characters long; at most 253 are allowed", len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if err := checkDNSLabel(label); err != nil {
			return fmt.Errorf("the host %q: %w", h, err)
		}
	}
	return nil
}

// checkDNSLabel checks one label of a DNS name, ignoring case as DNS does.
func checkDNSLabel(l string) error {
	if l == "" {
		return errors.New("it has an empty label (two dots in a row, or a leading or trailing dot)")
	}
	if errs := validation.IsDNS1123Label(strings.ToLower(l)); len(errs) > 0 {
		return fmt.Errorf("label %q: %s", l, strings.Join(errs, "; "))
	}
	return nil
}
