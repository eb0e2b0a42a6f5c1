package scope

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	networking "istio.io/api/networking/v1alpha3"
)

// sidecarManifest is Marshal of a Sidecar that Compile made, byte for byte, written directly: a plan
// renders one manifest per scope, and Marshal's trip through the protobuf JSON, a map and the
// YAML encoder was a tenth of the provider's time in a plan of 1,000 scopes. writeSidecar
// writes only the fields Compile sets and the strings that YAML prints plain; anything else
// goes through Marshal.
func sidecarManifest(name, namespace string, labels map[string]string, spec *networking.Sidecar) (string, error) {
	if s, ok := writeSidecar(name, namespace, labels, spec); ok {
		return s, nil
	}
	return Marshal(name, namespace, labels, spec)
}

// writeSidecar writes the manifest as Marshal prints it (keys sorted as the YAML encoder sorts
// them, block sequences at their key's indent), or reports false when the Sidecar holds a
// field or a string it does not write.
func writeSidecar(name, namespace string, labels map[string]string, spec *networking.Sidecar) (string, bool) {
	if !compiledFields(spec) || len(labels) == 0 || !plain(name) || !plain(namespace) {
		return "", false
	}
	var b strings.Builder
	b.Grow(512)
	b.WriteString("apiVersion: networking.istio.io/v1\nkind: Sidecar\nmetadata:\n  labels:\n")
	if !writeMap(&b, "    ", labels) {
		return "", false
	}
	b.WriteString("  name: " + name + "\n  namespace: " + namespace + "\nspec:\n")
	if len(spec.Egress) > 0 {
		b.WriteString("  egress:\n")
		for _, l := range spec.Egress {
			if len(l.Hosts) == 0 {
				return "", false
			}
			b.WriteString("  - hosts:\n")
			for _, h := range l.Hosts {
				if !plain(h) {
					return "", false
				}
				b.WriteString("    - " + h + "\n")
			}
			if l.Port != nil {
				b.WriteString("    ")
				if !writePort(&b, "    ", l.Port) {
					return "", false
				}
			}
		}
	}
	if len(spec.Ingress) > 0 {
		b.WriteString("  ingress:\n")
		for _, l := range spec.Ingress {
			// A default endpoint (127.0.0.1:PORT, unix://...) is never plain: Marshal prints it.
			if l.Port == nil || l.DefaultEndpoint != "" {
				return "", false
			}
			b.WriteString("  - ")
			if !writePort(&b, "    ", l.Port) {
				return "", false
			}
		}
	}
	if p := spec.OutboundTrafficPolicy; p != nil {
		b.WriteString("  outboundTrafficPolicy:\n    mode: " + p.GetMode().String() + "\n")
	}
	if ws := spec.WorkloadSelector; ws != nil {
		b.WriteString("  workloadSelector:\n    labels:\n")
		if !writeMap(&b, "      ", ws.Labels) {
			return "", false
		}
	}
	return b.String(), true
}

// compiledFields reports whether spec sets only the fields Compile sets: the selector's labels,
// egress hosts and port, ingress port and default endpoint, the policy's mode, and the port's
// name, number and protocol. A field this API version adds, or one Compile never sets, makes it
// false.
func compiledFields(spec *networking.Sidecar) bool {
	if spec == nil || !only(spec, "workload_selector", "ingress", "egress", "outbound_traffic_policy") ||
		len(spec.Egress) == 0 && len(spec.Ingress) == 0 && spec.OutboundTrafficPolicy == nil && spec.WorkloadSelector == nil {
		return false
	}
	for _, l := range spec.Egress {
		if l == nil || !only(l, "hosts", "port") || l.Port != nil && !only(l.Port, "number", "protocol", "name") {
			return false
		}
	}
	for _, l := range spec.Ingress {
		if l == nil || !only(l, "port", "default_endpoint") || l.Port != nil && !only(l.Port, "number", "protocol", "name") {
			return false
		}
	}
	if p := spec.OutboundTrafficPolicy; p != nil && !only(p, "mode") {
		return false
	}
	return spec.WorkloadSelector == nil || only(spec.WorkloadSelector, "labels") && len(spec.WorkloadSelector.Labels) > 0
}

// only reports whether m sets no field but those named (protobuf names).
func only(m proto.Message, names ...protoreflect.Name) bool {
	ok := true
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		ok = slices.Contains(names, fd.Name())
		return ok
	})
	return ok
}

// writePort writes port's mapping under the key "port", the key at the writer's position and
// its fields at indent + 2 spaces.
func writePort(b *strings.Builder, indent string, p *networking.SidecarPort) bool {
	if p.Name == "" && p.Number == 0 && p.Protocol == "" {
		return false
	}
	b.WriteString("port:\n")
	if p.Name != "" {
		if !plain(p.Name) {
			return false
		}
		b.WriteString(indent + "  name: " + p.Name + "\n")
	}
	if p.Number != 0 {
		b.WriteString(indent + "  number: " + strconv.FormatUint(uint64(p.Number), 10) + "\n")
	}
	if p.Protocol != "" {
		if !plain(p.Protocol) {
			return false
		}
		b.WriteString(indent + "  protocol: " + p.Protocol + "\n")
	}
	return true
}

// writeMap writes a non-empty map of plain strings, one "key: value" line each at indent, in
// the YAML encoder's key order.
func writeMap(b *strings.Builder, indent string, m map[string]string) bool {
	if len(m) == 0 {
		return false
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if !plain(k) || !plain(v) {
			return false
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case yamlKeyLess(a, b):
			return -1
		case yamlKeyLess(b, a):
			return 1
		}
		return 0
	})
	for _, k := range keys {
		b.WriteString(indent + k + ": " + m[k] + "\n")
	}
	return true
}

// plain reports whether the YAML encoder prints s as it is, without quotes: a letter first,
// then letters, digits and "-._/*", and not a word YAML 1.1 reads as a boolean or null. Other
// strings may print plain too; those go through Marshal. TestPlain checks the rule against the
// encoder.
func plain(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isASCIILetter(c) && (c < '0' || c > '9') && c != '-' && c != '.' && c != '_' && c != '/' && c != '*' {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// yamlKeyLess is the order in which go.yaml.in/yaml/v2 prints the string keys of a map
// (keyList.Less): letter by letter, a non-letter before a letter, runs of digits by their
// value.
func yamlKeyLess(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(ar[i]), unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
