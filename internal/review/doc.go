// Package review is the plan-time review of a change: what a scope, or a whole tree of
// manifests, does to every proxy it touches. The provider calls it once for each scope it
// plans (Reviewer.Scope) and the diff command once for each pair of trees (Tree); neither
// holds review decisions of its own, only their wording.
//
// A review says, per workload: its CDS clusters before and after, the hosts gained and lost,
// the risky tightenings the mesh configuration points out, and, with observed traffic, the
// calls the change would cut (each with the dependency that mends it, or the compiler's
// reason no scope of the namespace can), the declared dependencies nothing called, and the
// calls that leave the registry today. It imports nothing from Terraform.
package review
