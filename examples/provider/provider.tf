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

  # Against a live cluster instead (the inventory is read from it, and scopes are
  # server-side applied); manifests then add to the live inventory:
  #
  # kubernetes {
  #   config_path    = "~/.kube/config"
  #   config_context = "prod"
  # }
  #
  # For wait_for_proxies on meshscope_workload_scope, istiod's debug endpoints,
  # for example through `kubectl -n istio-system port-forward deploy/istiod 8080`:
  #
  # istiod_debug_url   = "http://127.0.0.1:8080"
  # proxy_wait_timeout = "5m"

  # Observed traffic: every scope is checked against the calls its workloads made over the
  # window, from Istio's metrics in Prometheus (one query per run, shared by every scope).
  # The token defaults to the MESHSCOPE_PROMETHEUS_TOKEN environment variable.
  #
  # prometheus {
  #   url    = "http://127.0.0.1:9090" # kubectl -n istio-system port-forward svc/prometheus 9090
  #   window = "7d"
  # }
  # observed_traffic = "warn" # or "error" to fail the plan, "off" to skip
  #
  # Or from a saved answer of Prometheus (`terraform-provider-meshscope query` prints the command):
  #
  # observed_traffic_file = "${path.module}/observed.json"
}
