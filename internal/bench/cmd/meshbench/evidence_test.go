package main

import "testing"

// TestProviderWarning: Terraform's dev_overrides warning is not the provider's; any other is.
func TestProviderWarning(t *testing.T) {
	overrides := "╷\n│ Warning: Provider development overrides are in effect\n│\n│ The following provider development overrides are set in the CLI configuration:\n╵\n"
	if got := providerWarning(overrides + "Plan: 100 to add, 0 to change, 0 to destroy.\n"); got != "" {
		t.Errorf("providerWarning of the dev_overrides warning = %q, want none", got)
	}
	cut := overrides + "╷\n│ Warning: Scope Cuts Observed Calls\n│\n│   with meshscope_workload_scope.svc-00001,\n╵\n"
	if got := providerWarning(cut); got != "Warning: Scope Cuts Observed Calls" {
		t.Errorf("providerWarning = %q, want the scope's warning", got)
	}
}
