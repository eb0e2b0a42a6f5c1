# What checkout really called over the provider's observed-traffic window (its prometheus
# block or observed_traffic_file), as dependencies of its scope.
data "meshscope_observed_dependencies" "checkout" {
  namespace         = "shop"
  workload_selector = { app = "checkout" }
}

resource "meshscope_workload_scope" "checkout" {
  namespace         = "shop"
  workload_selector = { app = "checkout" }
  dependencies      = data.meshscope_observed_dependencies.checkout.dependencies
}

# Calls that no dependency can let through: hosts outside the registry, reached through
# PassthroughCluster today. Each needs a ServiceEntry first.
output "checkout_outside_registry" {
  value = [for c in data.meshscope_observed_dependencies.checkout.calls : c.host if c.dependency == ""]
}
