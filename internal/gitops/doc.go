// Package gitops lays Sidecar manifests out as a kustomize base with one overlay
// per environment, plus Argo CD Applications, for a GitOps repository. It writes
// and owns the files of one directory.
//
// The layout, relative to the directory:
//
//	.meshscope-files.json              the files meshscope owns, with their sha256
//	base/kustomization.yaml            resources: every Sidecar file, sorted
//	base/<namespace>/<name>.yaml       one file per Sidecar
//	overlays/<env>/kustomization.yaml  resources: [../../base], that environment's changes
//	argocd/kustomization.yaml          resources: every Application (only with ArgoCD settings)
//	argocd/<env>.yaml                  the Argo CD Application <name_prefix>-<env>
//
// Sidecar files are nested by namespace, not flattened: a Sidecar name may hold
// '-' and '.', so "<namespace>-<name>" would not be unique ("a-b"/"c" and
// "a"/"b-c"), and per-namespace folders let CODEOWNERS give each team its own.
//
// Argo CD gets one plain Application per environment rather than an
// ApplicationSet: each environment's sync policy stays reviewable on its own,
// the Applications work without the ApplicationSet controller, and the
// argocd/ folder can be the source of an app-of-apps Application.
//
// An environment's changes are kustomize patches on the base, applied in this
// order: the outbound traffic policy (one JSON patch for every Sidecar), the
// extra system hosts (one JSON patch per Sidecar, adding the hosts to each
// egress listener, as the compiler does with the provider's system_hosts), the
// labels (kustomize `labels`, without selectors) and annotations
// (`commonAnnotations`), then the user's patches in their order.
//
// Everything here is a pure function of the input: the same Sidecars and
// settings give byte-identical files. Build runs kustomize (krusty) in memory
// on every overlay, so a bad patch is an error before anything is written.
package gitops
