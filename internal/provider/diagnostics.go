package provider

import (
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// manifestDiagnostic turns a load error of one YAML string into an attribute error
// that names the document.
func manifestDiagnostic(p path.Path, source string, err error) diag.Diagnostic {
	var de *mesh.DocumentError
	if errors.As(err, &de) {
		what := fmt.Sprintf("Document %d of %s", de.Index, source)
		if de.Kind != "" {
			what += fmt.Sprintf(" (%s %q)", de.Kind, de.Name)
		}
		return diag.NewAttributeErrorDiagnostic(p,
			"Invalid Manifest Document",
			what+" cannot be read. Fix the YAML of that document (documents are separated by \"---\" lines "+
				"and counted from 0).\n\n"+
				fmt.Sprintf("Original Error: %s", de.Err),
		)
	}
	return diag.NewAttributeErrorDiagnostic(p,
		"Invalid Manifest",
		fmt.Sprintf("%s cannot be read as Kubernetes YAML. Fix the YAML.\n\nOriginal Error: %s", source, err),
	)
}

// sidecarDiagnostic turns a Sidecar parse error into an attribute error.
func sidecarDiagnostic(p path.Path, source string, err error) diag.Diagnostic {
	var de *mesh.DocumentError
	if errors.As(err, &de) {
		return manifestDiagnostic(p, source, err)
	}
	return diag.NewAttributeErrorDiagnostic(p, "Invalid Sidecar Manifest",
		fmt.Sprintf("%s must hold exactly one networking.istio.io Sidecar, for example the manifest of a "+
			"meshscope_workload_scope.\n\nOriginal Error: %s", source, err))
}
