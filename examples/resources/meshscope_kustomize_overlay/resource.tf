# Two scopes, as in the seed example; a real configuration has one per workload.
resource "meshscope_workload_scope" "foo" {
  namespace         = "foo"
  workload_selector = { app = "test-app" }
  ingress           = [{ port = 80, protocol = "HTTP", default_endpoint = "127.0.0.1:80" }]
}

resource "meshscope_workload_scope" "bar" {
  namespace         = "bar"
  workload_selector = { app = "test-app" }
  dependencies      = [{ service = "foo.foo", ports = [80] }]
}

# Write every scope's Sidecar into the GitOps repository checked out next to
# this configuration: a kustomize base, a dev and a prod overlay, and an Argo CD
# Application per environment. `terraform plan` lists the files that change.
resource "meshscope_kustomize_overlay" "mesh" {
  path = "${path.module}/gitops/mesh"
  sidecars = [
    meshscope_workload_scope.foo.manifest,
    meshscope_workload_scope.bar.manifest,
  ]

  environments = {
    dev = {
      labels = { environment = "dev" }
    }
    prod = {
      labels                  = { environment = "prod" }
      outbound_traffic_policy = "REGISTRY_ONLY"
      extra_system_hosts      = ["monitoring/prometheus.monitoring.svc.cluster.local"]
      annotations             = { "example.com/change-ticket" = "required" }

      patches = [{
        # A JSON 6902 patch needs a target; a strategic-merge patch names its object.
        target = { kind = "Sidecar", namespace = "payments" }
        patch = yamlencode([
          { op = "replace", path = "/spec/ingress/0/defaultEndpoint", value = "127.0.0.1:8443" },
        ])
      }]
    }
  }

  argocd = {
    repo_url        = "https://github.com/example/platform-gitops.git"
    target_revision = "main"
    path_prefix     = "mesh"
    sync_policy     = { automated = true, prune = true, self_heal = true }
  }
}

# `kubectl kustomize` takes these directly.
output "overlays" {
  value = meshscope_kustomize_overlay.mesh.overlay_paths
}
