package gitops

import "github.com/meshscope/terraform-provider-meshscope/internal/mesh"

// Argo CD's Application API.
const (
	ApplicationAPIVersion = "argoproj.io/v1alpha1"
	ApplicationKind       = "Application"
)

func (a ArgoCD) withDefaults() ArgoCD {
	if a.TargetRevision == "" {
		a.TargetRevision = DefaultTargetRevision
	}
	if a.Project == "" {
		a.Project = DefaultProject
	}
	if a.DestinationServer == "" {
		a.DestinationServer = DefaultDestinationServer
	}
	if a.Namespace == "" {
		a.Namespace = DefaultArgoCDNamespace
	}
	if a.NamePrefix == "" {
		a.NamePrefix = DefaultNamePrefix
	}
	return a
}

// appName is the Application of an environment: <name_prefix>-<env>.
func (a ArgoCD) appName(env string) string {
	return a.withDefaults().NamePrefix + "-" + env
}

// ApplicationFile is the path of an environment's Application in the layout.
func ApplicationFile(env string) string { return ArgoCDDir + "/" + env + ".yaml" }

// Application returns the Argo CD Application that syncs one environment's overlay.
// The Sidecars carry their namespaces, so the destination names none.
func (a ArgoCD) Application(env string) map[string]any {
	a = a.withDefaults()
	spec := map[string]any{
		"project": a.Project,
		"source": map[string]any{
			"repoURL":        a.RepoURL,
			"targetRevision": a.TargetRevision,
			"path":           repoPath(a.PathPrefix, OverlayDir(env)),
		},
		"destination": map[string]any{"server": a.DestinationServer},
	}
	if sp := a.SyncPolicy; sp != nil && sp.Automated {
		automated := map[string]any{}
		if sp.Prune {
			automated["prune"] = true
		}
		if sp.SelfHeal {
			automated["selfHeal"] = true
		}
		spec["syncPolicy"] = map[string]any{"automated": automated}
	}
	return map[string]any{
		"apiVersion": ApplicationAPIVersion,
		"kind":       ApplicationKind,
		"metadata": map[string]any{
			"name":      a.appName(env),
			"namespace": a.Namespace,
			"labels": map[string]any{
				mesh.ManagedByLabel:        mesh.ManagedByValue,
				"meshscope.io/environment": env,
			},
		},
		"spec": spec,
	}
}

// addArgoCD writes one Application per environment and a kustomization listing
// them, so that `kubectl apply -k argocd` or an app-of-apps can install them.
func (l *Layout) addArgoCD(a ArgoCD, envs []string) error {
	k := kustomization()
	for _, env := range envs {
		b, err := marshal(a.Application(env))
		if err != nil {
			return err
		}
		l.Files[ApplicationFile(env)] = b
		k.Resources = append(k.Resources, env+".yaml")
	}
	b, err := marshal(k)
	if err != nil {
		return err
	}
	l.Files[ArgoCDDir+"/"+KustomizationFile] = b
	return nil
}
