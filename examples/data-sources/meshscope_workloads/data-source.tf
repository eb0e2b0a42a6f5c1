# Which workloads of the mesh run a sidecar, and why the others do not.
data "meshscope_workloads" "all" {}

output "no_sidecar" {
  value = {
    for w in data.meshscope_workloads.all.workloads : "${w.namespace}/${w.workload}" => w.why
    if w.proxy != "sidecar"
  }
}
