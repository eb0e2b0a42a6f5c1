// Package istioconfig holds the Istio configuration semantics that several of meshscope's
// packages share, each answered by one function, as Istio keeps its own under pkg/config
// (host, labels, protocol, visibility). It imports only istio.io/api and the Kubernetes API
// types, never Terraform.
//
// It holds hosts (wildcards, subsets, Sidecar egress hosts), labels (selectors), protocols
// (one list, the Kubernetes port conversion), visibility (exportTo and its mesh defaults),
// the creation order istiod sorts configs by, releases (Version and its switches) and the
// validation Istio's webhook applies to hosts and ports.
package istioconfig
