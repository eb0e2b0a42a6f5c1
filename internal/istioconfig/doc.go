// Package istioconfig holds the Istio configuration semantics that several of meshscope's
// packages share, each answered by one function, as Istio keeps its own under pkg/config
// (host, labels, protocol, visibility). It imports only istio.io/api and the Kubernetes API
// types, never Terraform.
//
// It starts with the validation Istio's webhook applies to hosts and ports; the rest of the
// shared semantics moves here from the compiler and the predictor over time.
package istioconfig
