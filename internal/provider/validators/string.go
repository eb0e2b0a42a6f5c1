package validators

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = stringValidator{}

// stringValidator is a validator.String made of a description and a check of the
// configured text. Like every validator of this package it skips null and unknown
// values.
type stringValidator struct {
	description string
	// validate judges a known value and adds its diagnostics at the attribute path p.
	validate func(value string, p path.Path, diags *diag.Diagnostics)
}

func (v stringValidator) Description(ctx context.Context) string {
	return v.MarkdownDescription(ctx)
}

func (v stringValidator) MarkdownDescription(_ context.Context) string {
	return v.description
}

func (v stringValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v.validate(req.ConfigValue.ValueString(), req.Path, &resp.Diagnostics)
}

// rejectIf returns a validate function that adds the error summary when check fails.
// detail is the error's message as a format of the value (%q) and check's error (%s).
func rejectIf(check func(value string) error, summary, detail string) func(string, path.Path, *diag.Diagnostics) {
	return func(value string, p path.Path, diags *diag.Diagnostics) {
		if err := check(value); err != nil {
			diags.AddAttributeError(p, summary, fmt.Sprintf(detail, value, err))
		}
	}
}

// joinErrors turns the messages of a k8s.io validation function into an error, or nil
// when there are none.
func joinErrors(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}
