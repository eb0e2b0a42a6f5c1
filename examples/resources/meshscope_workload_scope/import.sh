# A Sidecar of the cluster, by namespace/name; needs the provider's kubernetes block.
terraform import meshscope_workload_scope.payments payments/payments-api
