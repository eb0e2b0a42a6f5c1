# bar/test-app serves HTTP on port 80 and calls only foo.foo on port 80 (plus the
# control plane, which the provider's system_hosts add to every scope).
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

  # The plan fails if bar/test-app would hold more Envoy clusters than this.
  max_clusters = 20

  # With the provider's kubernetes block and istiod_debug_url, apply would end
  # only once bar's proxies have acknowledged the new scope:
  # wait_for_proxies = true
}

# The compiled Sidecar, known at plan time: commit it to a GitOps repository or
# apply it with the kubernetes provider.
output "bar_sidecar" {
  value = meshscope_workload_scope.bar.manifest
}

# The Envoy clusters bar/test-app gets once the Sidecar applies.
output "bar_expected_clusters" {
  value = meshscope_workload_scope.bar.expected_clusters
}

# Per selected workload: clusters before and after, hosts gained and lost, risks.
output "bar_review" {
  value = {
    for r in meshscope_workload_scope.bar.review : r.workload => "${r.before} -> ${r.after}, loses ${r.removed_host_count} hosts: ${join(", ", r.removed_hosts)}"
  }
}
