package problem

import (
	"fmt"
	"slices"
	"strings"
)

func sortDefinitions(ds []Definition) {
	slices.SortFunc(ds, func(a, b Definition) int { return strings.Compare(string(a.Code), string(b.Code)) })
}

// Catalogue renders CODES.md from the given definitions.
func Catalogue(ds []Definition) string {
	var b strings.Builder
	b.WriteString("# Problem codes\n\n")
	b.WriteString("Every problem meshscope reports carries one of these codes. The provider and the command line match\n")
	b.WriteString("the code, never the wording, and each words its own remedy: a fault of the evidence names\n")
	b.WriteString("`prometheus.ca_certificate` in Terraform and `--ca-certificate` on the command line. This file is rendered\n")
	b.WriteString("from the definitions in the code (`go test ./internal/problem -update`); a test fails when it is stale.\n\n")
	b.WriteString("| Code | Level | Summary | Package | Meaning |\n|---|---|---|---|---|\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s |\n", d.Code, d.Level, d.Summary, d.Package, strings.ReplaceAll(d.Meaning, "|", "\\|"))
	}
	return b.String()
}
