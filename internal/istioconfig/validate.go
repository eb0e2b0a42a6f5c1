package istioconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

const (
	dns1123LabelMaxLength = 63
	dns1123LabelFmt       = "[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?"
)

var (
	dns1123Label   = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	wildcardPrefix = regexp.MustCompile(`^(\*|(\*|\*-)?` + dns1123LabelFmt + `)$`)
)

// ValidatePort is Istio's port check: a port number is 1..65535.
// Istio: pkg/config/validation/agent.ValidatePort.
func ValidatePort(port int) error {
	if 1 <= port && port <= 65535 {
		return nil
	}
	return fmt.Errorf("port number %d must be in the range 1..65535", port)
}

// ValidateWildcardDomain is Istio's check of a host in a ServiceEntry, DestinationRule or
// VirtualService: at most 255 characters, a first label that may be or start with "*", and
// DNS-1123 labels after it, the last of them not all digits (a trailing dot is allowed).
// Istio: pkg/config/validation/agent.ValidateWildcardDomain.
func ValidateWildcardDomain(domain string) error {
	if len(domain) > 255 {
		return fmt.Errorf("domain name %q too long (max 255)", domain)
	}
	if domain == "" {
		return fmt.Errorf("empty domain name not allowed")
	}
	first, rest, dotted := strings.Cut(domain, ".")
	if len(first) > dns1123LabelMaxLength || !wildcardPrefix.MatchString(first) {
		return fmt.Errorf("domain name %q invalid (label %q invalid)", domain, first)
	}
	if dotted {
		return validateDNS1123Labels(rest)
	}
	return nil
}

// validateDNS1123Labels is Istio's agent.ValidateDNS1123Labels.
func validateDNS1123Labels(domain string) error {
	parts := strings.Split(domain, ".")
	top := parts[len(parts)-1]
	if _, err := strconv.Atoi(top); err == nil {
		return fmt.Errorf("domain name %q invalid (top level domain %q cannot be all-numeric)", domain, top)
	}
	for i, label := range parts {
		if i == len(parts)-1 && label == "" {
			return nil // "istio.io."
		}
		if len(label) > dns1123LabelMaxLength || !dns1123Label.MatchString(label) {
			return fmt.Errorf("domain name %q invalid (label %q invalid)", domain, label)
		}
	}
	return nil
}

// ValidateDNSName checks a plain DNS name such as a cluster domain suffix ("cluster.local"):
// dot-separated DNS-1123 labels, in any case, at most 253 characters, no wildcard.
func ValidateDNSName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case strings.HasPrefix(name, "*"):
		return fmt.Errorf("a wildcard is not allowed here")
	case len(name) > 253:
		return fmt.Errorf("the name is %d characters long; at most 253 are allowed", len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return fmt.Errorf("the name %q has an empty label (two dots in a row, or a leading or trailing dot)", name)
		}
		if len(label) > dns1123LabelMaxLength || !dns1123Label.MatchString(label) {
			return fmt.Errorf("the name %q: label %q is not a DNS-1123 label (letters, digits and '-', at most 63, starting and ending with a letter or digit)", name, label)
		}
	}
	return nil
}
