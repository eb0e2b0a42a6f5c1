# Plan-time review of a scope change on the seed mesh (../seed/manifests).
# generate.sh applies before.tfvars first (foo/test-app may call every
# namespace, as with no Sidecar at all), then plans this configuration as it
# stands: foo calls nothing but the control plane. `terraform plan` shows
# expected_clusters 19 -> 13 and the review, before anything reaches a cluster.

terraform {
  required_providers {
    meshscope = {
      source = "meshscope/meshscope"
    }
  }
}

provider "meshscope" {
  manifests = [for f in fileset("${path.module}/../seed/manifests", "*.yaml") : file("${path.module}/../seed/manifests/${f}")]
}

variable "foo_dependencies" {
  description = "What foo/test-app calls, besides the control plane that the provider's system_hosts add."
  type = list(object({
    service = string
    ports   = optional(list(number))
  }))
  default = []
}

locals {
  # No proxy of the mesh may hold more Envoy clusters than this.
  cluster_budget = 20
}

resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  dependencies      = var.foo_dependencies

  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]

  # The plan fails, naming the workload and its count, if foo/test-app would hold more.
  max_clusters = local.cluster_budget
}

resource "meshscope_workload_scope" "bar" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }

  dependencies = [
    { service = "foo.foo", ports = [80] },
  ]

  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}

# A budget across scopes: expected_clusters is known at plan time, so the check
# runs in `terraform plan` and warns before anything is applied.
check "cluster_budget" {
  assert {
    condition = alltrue([
      for s in [meshscope_workload_scope.foo, meshscope_workload_scope.bar] : s.expected_clusters <= local.cluster_budget
    ])
    error_message = format("A workload scope exceeds the budget of %d Envoy clusters: %s.", local.cluster_budget, join(", ", [
      for s in [meshscope_workload_scope.foo, meshscope_workload_scope.bar] : format("%s has %d", s.id, s.expected_clusters)
    ]))
  }
}

output "sidecars" {
  description = "The rendered Sidecars, as a GitOps repository would hold them."
  value       = join("---\n", [meshscope_workload_scope.foo.manifest, meshscope_workload_scope.bar.manifest])
}
