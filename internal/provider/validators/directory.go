package validators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = insideWorkingDirectoryValidator{}

// insideWorkingDirectoryValidator warns about a directory outside Terraform's working directory.
//
// Instances should be created via the InsideWorkingDirectory function.
type insideWorkingDirectoryValidator struct{ cwd func() (string, error) }

// InsideWorkingDirectory warns when a directory path leads outside the working directory
// ("/etc", "../../etc"): meshscope writes and deletes files there, so it should be a path the
// configuration means, not a slip.
func InsideWorkingDirectory() validator.String {
	return insideWorkingDirectoryValidator{cwd: os.Getwd}
}

func (v insideWorkingDirectoryValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v insideWorkingDirectoryValidator) MarkdownDescription(_ context.Context) string {
	return "warns when the directory is outside the working directory"
}

func (v insideWorkingDirectoryValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ValueString() == "" {
		return
	}
	p := req.ConfigValue.ValueString()
	cwd, err := v.cwd()
	if err != nil {
		return
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, p)
	}
	rel, err := filepath.Rel(cwd, filepath.Clean(abs))
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	resp.Diagnostics.AddAttributeWarning(
		req.Path,
		"Directory Outside The Working Directory",
		fmt.Sprintf("The directory %q is outside the working directory %q (it resolves to %q). meshscope writes its files "+
			"there and deletes them on destroy. If that is meant, ignore this warning; otherwise give a path inside the "+
			"repository, such as \"gitops/sidecars\".", p, cwd, filepath.Clean(abs)),
	)
}
