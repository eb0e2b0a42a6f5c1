# The clusters istiod pushes to foo/test-app today...
data "meshscope_proxy_clusters" "foo_before" {
  namespace = "foo"
  labels    = { app = "test-app" }
}

# ...and once the Sidecar of a workload scope applies.
data "meshscope_proxy_clusters" "foo_after" {
  namespace = "foo"
  labels    = { app = "test-app" }
  sidecars  = [meshscope_workload_scope.foo.manifest]
}

output "foo_clusters" {
  value = {
    before   = data.meshscope_proxy_clusters.foo_before.cluster_count
    after    = data.meshscope_proxy_clusters.foo_after.cluster_count
    removed  = setsubtract(data.meshscope_proxy_clusters.foo_before.clusters, data.meshscope_proxy_clusters.foo_after.clusters)
    istioctl = data.meshscope_proxy_clusters.foo_after.istioctl_count
  }
}
