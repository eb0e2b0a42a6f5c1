package main

// While it serves Terraform, the provider collects garbage less often than Go's default,
// unless GOGC or GOMEMLIMIT says otherwise. A plan is a burst of calls, one per resource,
// each of which allocates values that are garbage as soon as the answer is sent; with
// GOGC=100 a plan of a thousand scopes spent about a fifth of the provider's CPU in the
// collector. At 400 the heap may grow to five times what is live between collections; the
// soft memory limit keeps that bounded on a large mesh, where the collector then runs as
// often as it needs to.
const (
	servingGCPercent   = 400
	servingMemoryLimit = 2 << 30 // bytes
)

// tuneGC sets the collector for serving, leaving alone what the environment sets.
func tuneGC(getenv func(string) string, setPercent func(int) int, setLimit func(int64) int64) {
	if getenv("GOGC") == "" {
		setPercent(servingGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		setLimit(servingMemoryLimit)
	}
}
