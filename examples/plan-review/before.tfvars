# foo/test-app before the change: it may call every namespace, which keeps the
# 19 Envoy clusters it has with no Sidecar at all.
foo_dependencies = [
  { service = "bar/*" },
  { service = "default/*" },
  { service = "foo/*" },
  { service = "kube-system/*" },
]
