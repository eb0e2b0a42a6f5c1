terraform {
  required_providers {
    meshscope = {
      source = "meshscope/meshscope"
    }
  }
}

# The offline inventory: every Kubernetes and Istio YAML file under manifests/.
provider "meshscope" {
  manifests = [
    for f in fileset("${path.module}/manifests", "**/*.{yaml,yml}") : file("${path.module}/manifests/${f}")
  ]

  # All optional; these are the defaults.
  istio_version = "1.31"
  domain_suffix = "cluster.local"
  system_hosts  = ["istio-system/*"]
}
