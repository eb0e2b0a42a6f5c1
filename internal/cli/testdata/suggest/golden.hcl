# Suggested by `terraform-provider-meshscope suggest` from the calls observed over 7d:
# one meshscope_workload_scope per calling workload. Calls rarer than the window (a monthly job)
# are not in it: review before applying.

# legacy/Deployment/old.api: the calls observed over 7d.
resource "meshscope_workload_scope" "legacy_old_api" {
  namespace = "legacy"
  workload_selector = {
    "app" = "old-api"
  }
  dependencies = [
    # 1,000,000 requests over 7d
    { service = "payments.pay", ports = [9090] },
  ]
}

# pay/Deployment/payments: the calls observed over 7d.
# Adopts the existing Sidecar pay/payments (testdata/suggest/mesh.yaml#19): the import block takes it over,
# reading it from the cluster (the provider's kubernetes block) or, offline, from the provider's manifests.
# It imports today, and this scope drops (no calls over 7d; keep any that serve rarer calls, such as a monthly
# job): ledger.pay.
resource "meshscope_workload_scope" "pay_payments" {
  namespace = "pay"
  name      = "payments"
  workload_selector = {
    "app" = "payments"
  }
  dependencies = [
    # 500 connections over 7d
    { service = "redis.data", ports = [6379] },
  ]
  ingress = [
    { port = 8080, protocol = "HTTP", default_endpoint = "127.0.0.1:8080" },
  ]
  # Not suggested as dependencies:
  # - vault.data (30 requests over 7d, through PassthroughCluster today) is left out: Service Not Visible: The
  #   dependency "vault.data" resolves to vault.data.svc.cluster.local, which is not exported to namespace
  #   "pay" (annotation networking.istio.io/exportTo or meshConfig.defaultServiceExportTo). Export it to
  #   "pay", or remove the dependency.
}

import {
  to = meshscope_workload_scope.pay_payments
  id = "pay/payments"
}

# shop/Deployment/cart: the calls observed over 7d.
# Takes precedence over the namespace default Sidecar shop/default, which governs it today.
# No dependency lists ports, as the compiler would not scope "kube-dns.kube-system" by port: The dependency
# "kube-dns.kube-system" lists ports, but a port it lists is also a UDP port of the same number, which Istio's
# port listener would take instead, so it imports every port, while "redis.data" list theirs. A Sidecar
# narrows by port only when every dependency does, so this dependency makes the whole Sidecar import every
# port of every dependency. List its ports, or drop ports from the others to say so.
resource "meshscope_workload_scope" "shop_cart" {
  namespace = "shop"
  workload_selector = {
    "app" = "cart"
  }
  dependencies = [
    # 7 connections over 7d
    { service = "kube-dns.kube-system" },
    # 100 connections over 7d
    { service = "redis.data" },
  ]
}

# shop/Deployment/web: the calls observed over 7d.
# Takes precedence over the namespace default Sidecar shop/default, which governs it today.
resource "meshscope_workload_scope" "shop_web" {
  namespace = "shop"
  workload_selector = {
    "app"     = "web"
    "version" = "v1"
  }
  dependencies = [
    # 42 connections over 7d
    { service = "api.example.com", ports = [443] },
    # 310 requests over 7d
    { service = "cart.shop", ports = [80] },
    # 1,204 requests over 7d
    { service = "payments.pay", ports = [80] },
  ]
  # Not suggested as dependencies:
  # - 4 requests over 7d to blocked.example.org (http) were dropped (BlackHoleCluster): blocked.example.org is
  #   not in the registry; if the workload needs it, add a ServiceEntry for it.
  # - 1 request over 7d to ghost.shop.svc.cluster.local (http): the inventory does not hold
  #   ghost.shop.svc.cluster.local; give its manifests with -f and run suggest again.
  # - 9 requests over 7d to other.example.org (http) went through PassthroughCluster: other.example.org is not
  #   in the registry; add a ServiceEntry for it (mTLS origination, routing and telemetry; REGISTRY_ONLY would
  #   block it).
}

# shop/Deployment/web-canary: the calls observed over 7d.
# Takes precedence over the namespace default Sidecar shop/default, which governs it today.
resource "meshscope_workload_scope" "shop_web-canary" {
  namespace = "shop"
  workload_selector = {
    "app"     = "web"
    "version" = "v2"
  }
  dependencies = [
    # 12 requests over 7d
    { service = "payments.pay" },
  ]
}

# shop/Deployment/worker, shop/Deployment/worker-batch: the calls observed over 7d.
# One scope for these workloads: a selector that selects one of them selects the others too, and two scopes
# must never select one workload.
# Takes precedence over the namespace default Sidecar shop/default, which governs them today.
resource "meshscope_workload_scope" "shop_worker" {
  namespace = "shop"
  workload_selector = {
    "app" = "worker"
  }
  dependencies = [
    # 3 requests over 7d
    { service = "payments.pay", ports = [9090] },
    # 25 connections over 7d
    { service = "redis.data", ports = [6379] },
  ]
}
