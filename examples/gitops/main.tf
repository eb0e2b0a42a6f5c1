# The seed's two scopes (see ../seed) written into a GitOps repository: a
# kustomize base with the compiled Sidecars, a dev and a prod overlay, and an
# Argo CD Application per environment. This directory plays the repository:
# the layout is in mesh/, committed as `terraform apply` writes it.
#
# The environment settings live in settings.yaml, which the command line reads
# as well, so CI can check the overlays without Terraform.

terraform {
  required_providers {
    meshscope = {
      source = "meshscope/meshscope"
    }
  }
}

variable "seed_manifests" {
  description = "The directory of the seed inventory. Defaults to ../seed/manifests."
  type        = string
  default     = null
}

variable "out" {
  description = "The directory to write the layout into. Defaults to mesh/ next to this file."
  type        = string
  default     = null
}

locals {
  manifests_dir = coalesce(var.seed_manifests, "${path.module}/../seed/manifests")
  settings      = yamldecode(file("${path.module}/settings.yaml"))
}

provider "meshscope" {
  manifests = [for f in fileset(local.manifests_dir, "*.yaml") : file("${local.manifests_dir}/${f}")]
}

# foo/test-app serves HTTP on 80 and calls nothing but the control plane.
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

# The Sidecars, as a base with a dev and a prod overlay and two Argo CD
# Applications. `terraform plan` lists the files that change, with their
# sha256; a file edited by hand shows up as drift and is written back.
resource "meshscope_kustomize_overlay" "mesh" {
  path         = coalesce(var.out, "${path.module}/mesh")
  sidecars     = [meshscope_workload_scope.foo.manifest, meshscope_workload_scope.bar.manifest]
  environments = local.settings.environments
  argocd       = local.settings.argocd
}

output "overlay_paths" {
  description = "The overlay directory of each environment, for `kubectl kustomize`."
  value       = meshscope_kustomize_overlay.mesh.overlay_paths
}

output "files" {
  description = "The files the overlay owns, with their sha256."
  value       = meshscope_kustomize_overlay.mesh.files
}
