package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/meshscope/terraform-provider-meshscope/internal/adopt"
)

// resourceType is the resource suggest writes.
const resourceType = "meshscope_workload_scope"

// suggestionWriter writes suggestions as they come, so that the output of a whole mesh is
// never held in memory; close ends the document.
type suggestionWriter interface {
	write(s adopt.Scope)
	close()
}

// headerLines open the output.
func headerLines(window string) []string {
	return []string{
		fmt.Sprintf("Suggested by `terraform-provider-meshscope suggest` from the calls observed over %s:", window),
		"one meshscope_workload_scope per calling workload. Calls rarer than the window (a monthly job)",
		"are not in it: review before applying.",
	}
}

// ---- HCL ----

// hclWriter writes HCL that `terraform fmt` leaves unchanged.
type hclWriter struct {
	w       io.Writer
	window  string
	started bool
}

func newHCLWriter(w io.Writer, window string) *hclWriter { return &hclWriter{w: w, window: window} }

func (h *hclWriter) printf(format string, a ...any) { _, _ = fmt.Fprintf(h.w, format, a...) }

// commentWidth is where comment lines wrap.
const commentWidth = 110

func (h *hclWriter) comment(indent, text string) {
	cont := ""
	if strings.HasPrefix(text, "- ") {
		cont = "  "
	}
	for i, line := range wrap(commentText(text), commentWidth-len(indent)-2, len(cont)) {
		if i > 0 {
			line = cont + line
		}
		h.printf("%s# %s\n", indent, line)
	}
}

// wrap breaks text at spaces into lines of at most width characters (continuation lines hang
// by hang more); a word longer than a line stays whole.
func wrap(text string, width, hang int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		limit := width
		if len(lines) > 0 {
			limit -= hang
		}
		if line != "" && len(line)+1+len(word) > limit {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

func (h *hclWriter) write(s adopt.Scope) {
	if !h.started {
		h.started = true
		for _, l := range headerLines(h.window) {
			h.comment("", l)
		}
	}
	h.printf("\n")
	for _, l := range s.Header {
		h.comment("", l)
	}
	h.printf("resource %q %q {\n", resourceType, s.Resource)
	// Consecutive one-line attributes align their "=", as terraform fmt does.
	single := [][2]string{{"namespace", hclString(s.Namespace)}}
	if s.Name != "" {
		single = append(single, [2]string{"name", hclString(s.Name)})
	}
	if s.OutboundTrafficPolicy != "" {
		single = append(single, [2]string{"outbound_traffic_policy", hclString(s.OutboundTrafficPolicy)})
	}
	h.aligned("  ", single)
	if len(s.Selector) > 0 {
		h.printf("  workload_selector = {\n")
		var kv [][2]string
		for _, k := range sortedKeysOf(s.Selector) {
			kv = append(kv, [2]string{hclString(k), hclString(s.Selector[k])})
		}
		h.aligned("    ", kv)
		h.printf("  }\n")
	}
	if len(s.Dependencies) > 0 {
		h.printf("  dependencies = [\n")
		for _, d := range s.Dependencies {
			h.comment("    ", d.Evidence)
			if len(d.Ports) > 0 {
				h.printf("    { service = %s, ports = [%s] },\n", hclString(d.Service), joinPorts(d.Ports))
			} else {
				h.printf("    { service = %s },\n", hclString(d.Service))
			}
		}
		h.printf("  ]\n")
	}
	if len(s.Ingress) > 0 {
		h.printf("  ingress = [\n")
		for _, in := range s.Ingress {
			if in.DefaultEndpoint != "" {
				h.printf("    { port = %d, protocol = %s, default_endpoint = %s },\n", in.Port, hclString(in.Protocol), hclString(in.DefaultEndpoint))
			} else {
				h.printf("    { port = %d, protocol = %s },\n", in.Port, hclString(in.Protocol))
			}
		}
		h.printf("  ]\n")
	}
	if len(s.Notes) > 0 {
		h.comment("  ", "Not suggested as dependencies:")
		for _, n := range s.Notes {
			h.comment("  ", "- "+n)
		}
	}
	h.printf("}\n")
	if s.Import {
		h.printf("\nimport {\n  to = %s.%s\n  id = %s\n}\n", resourceType, s.Resource, hclString(s.Adopts))
	}
}

func (h *hclWriter) close() {}

// aligned writes one-line attributes with their "=" aligned.
func (h *hclWriter) aligned(indent string, kv [][2]string) {
	width := 0
	for _, p := range kv {
		width = max(width, len(p[0]))
	}
	for _, p := range kv {
		h.printf("%s%s%s = %s\n", indent, p[0], strings.Repeat(" ", width-len(p[0])), p[1])
	}
}

// hclString quotes s as an HCL string literal: escapes, and no template sequences.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case !unicode.IsPrint(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		case (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r) // "${" and "%{" start templates: doubled, they are literal
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// commentText keeps a comment on its line: hosts come from Host headers, which may hold anything.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}

func joinPorts(ports []uint32) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.FormatUint(uint64(p), 10)
	}
	return strings.Join(s, ", ")
}

// ---- JSON ----

// jsonWriter writes Terraform's JSON configuration syntax (a .tf.json file). Comments go in
// "//" properties, which Terraform ignores in a block's body (not inside a dependency's object).
type jsonWriter struct {
	w       io.Writer
	window  string
	n       int
	imports []jsonImport
}

type jsonImport struct {
	To string `json:"to"`
	ID string `json:"id"`
}

type jsonScope struct {
	Comment               []string          `json:"//,omitempty"`
	Namespace             string            `json:"namespace"`
	Name                  string            `json:"name,omitempty"`
	WorkloadSelector      map[string]string `json:"workload_selector,omitempty"`
	Dependencies          []jsonDependency  `json:"dependencies,omitempty"`
	Ingress               []jsonIngress     `json:"ingress,omitempty"`
	OutboundTrafficPolicy string            `json:"outbound_traffic_policy,omitempty"`
}

type jsonDependency struct {
	Service string   `json:"service"`
	Ports   []uint32 `json:"ports,omitempty"`
}

type jsonIngress struct {
	Port            uint32 `json:"port"`
	Protocol        string `json:"protocol"`
	DefaultEndpoint string `json:"default_endpoint,omitempty"`
}

func newJSONWriter(w io.Writer, window string) *jsonWriter { return &jsonWriter{w: w, window: window} }

func (j *jsonWriter) write(s adopt.Scope) {
	if j.n == 0 {
		head, _ := json.Marshal(strings.Join(headerLines(j.window), " "))
		_, _ = fmt.Fprintf(j.w, "{\n  \"//\": %s,\n  \"resource\": {\n    %q: {", head, resourceType)
	}
	body := jsonScope{Namespace: s.Namespace, Name: s.Name, WorkloadSelector: s.Selector, OutboundTrafficPolicy: s.OutboundTrafficPolicy}
	body.Comment = append(body.Comment, s.Header...)
	for _, d := range s.Dependencies {
		body.Dependencies = append(body.Dependencies, jsonDependency{Service: d.Service, Ports: d.Ports})
		body.Comment = append(body.Comment, fmt.Sprintf("%s: %s", d.Service, d.Evidence))
	}
	for _, in := range s.Ingress {
		body.Ingress = append(body.Ingress, jsonIngress(in))
	}
	if len(s.Notes) > 0 {
		body.Comment = append(body.Comment, "Not suggested as dependencies:")
		for _, n := range s.Notes {
			body.Comment = append(body.Comment, "- "+n)
		}
	}
	b, _ := json.MarshalIndent(body, "      ", "  ") // plain strings, maps and slices: cannot fail
	sep := "\n"
	if j.n > 0 {
		sep = ",\n"
	}
	_, _ = fmt.Fprintf(j.w, "%s      %q: %s", sep, s.Resource, b)
	j.n++
	if s.Import {
		j.imports = append(j.imports, jsonImport{To: resourceType + "." + s.Resource, ID: s.Adopts})
	}
}

func (j *jsonWriter) close() {
	if j.n == 0 {
		return
	}
	_, _ = io.WriteString(j.w, "\n    }\n  }")
	if len(j.imports) > 0 {
		b, _ := json.MarshalIndent(j.imports, "  ", "  ")
		_, _ = fmt.Fprintf(j.w, ",\n  \"import\": %s", b)
	}
	_, _ = io.WriteString(j.w, "\n}\n")
}

// sortedKeysOf is the keys of m, sorted.
func sortedKeysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
