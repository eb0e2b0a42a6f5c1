# The seed scenario through Terraform: two namespaces, foo and bar, each with a
# test-app Deployment and a Service on port 80, plus istiod, the ingress gateway,
# kube-system add-ons and the kubernetes Service. `make demo` runs it offline.

terraform {
  required_providers {
    meshscope = {
      source = "meshscope/meshscope"
    }
  }
}

provider "meshscope" {
  manifests = [for f in fileset("${path.module}/manifests", "*.yaml") : file("${path.module}/manifests/${f}")]
}

locals {
  workloads = {
    "foo/test-app" = { namespace = "foo", labels = { app = "test-app" } }
    "bar/test-app" = { namespace = "bar", labels = { app = "test-app" } }
  }
}

# foo/test-app serves HTTP on 80 and calls nothing but the control plane, which
# the provider's system_hosts (istio-system/*) add to every scope.
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }

  ingress = [{
    port             = 80
    protocol         = "HTTP"
    default_endpoint = "127.0.0.1:80"
  }]
}

# bar/test-app serves HTTP on 80 and calls foo on port 80.
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

# Each workload as it is today, with no Sidecar...
data "meshscope_proxy_clusters" "before" {
  for_each = local.workloads

  namespace = each.value.namespace
  labels    = each.value.labels
}

# ...and with the compiled Sidecars applied.
data "meshscope_proxy_clusters" "after" {
  for_each = local.workloads

  namespace = each.value.namespace
  labels    = each.value.labels
  sidecars  = [meshscope_workload_scope.foo.manifest, meshscope_workload_scope.bar.manifest]
}

output "cluster_counts" {
  description = "Per workload: CDS clusters before and after the Sidecars, and istioctl proxy-config cluster rows."
  value = {
    for k, _ in local.workloads : k => {
      before          = data.meshscope_proxy_clusters.before[k].cluster_count
      after           = data.meshscope_proxy_clusters.after[k].cluster_count
      istioctl_before = data.meshscope_proxy_clusters.before[k].istioctl_count
      istioctl_after  = data.meshscope_proxy_clusters.after[k].istioctl_count
      sidecar         = data.meshscope_proxy_clusters.after[k].sidecar
    }
  }
}

output "expected_clusters" {
  description = "The cluster count each scope predicted at plan time."
  value = {
    "foo/test-app" = meshscope_workload_scope.foo.expected_clusters
    "bar/test-app" = meshscope_workload_scope.bar.expected_clusters
  }
}

output "clusters_before" {
  description = "Per workload, the CDS cluster names with no Sidecar."
  value       = { for k, d in data.meshscope_proxy_clusters.before : k => d.clusters }
}

output "clusters_after" {
  description = "Per workload, the CDS cluster names with the compiled Sidecars."
  value       = { for k, d in data.meshscope_proxy_clusters.after : k => d.clusters }
}

output "report" {
  description = "A readable report of the clusters before and after, per workload."
  value = join("\n", [
    for k, _ in local.workloads : join("\n", concat(
      [format("%s: %d CDS clusters before, %d after (istioctl rows %d -> %d); plan-time prediction %d",
        k,
        data.meshscope_proxy_clusters.before[k].cluster_count,
        data.meshscope_proxy_clusters.after[k].cluster_count,
        data.meshscope_proxy_clusters.before[k].istioctl_count,
        data.meshscope_proxy_clusters.after[k].istioctl_count,
      k == "foo/test-app" ? meshscope_workload_scope.foo.expected_clusters : meshscope_workload_scope.bar.expected_clusters)],
      [for c in data.meshscope_proxy_clusters.before[k].clusters :
      format("  %s %s", contains(data.meshscope_proxy_clusters.after[k].clusters, c) ? "  kept" : "- gone", c)],
      [for c in data.meshscope_proxy_clusters.after[k].clusters :
      format("  + new  %s", c) if !contains(data.meshscope_proxy_clusters.before[k].clusters, c)],
    ))
  ])
}

output "counts" {
  description = "One line per workload: name, clusters before, clusters after, plan-time expected_clusters."
  value = join("\n", [
    for k, _ in local.workloads : format("%s %d %d %d", k,
      data.meshscope_proxy_clusters.before[k].cluster_count,
      data.meshscope_proxy_clusters.after[k].cluster_count,
    k == "foo/test-app" ? meshscope_workload_scope.foo.expected_clusters : meshscope_workload_scope.bar.expected_clusters)
  ])
}

output "sidecars" {
  description = "The rendered Sidecar manifests."
  value       = join("---\n", [meshscope_workload_scope.foo.manifest, meshscope_workload_scope.bar.manifest])
}
