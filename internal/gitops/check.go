package gitops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// checkSettings checks the environments and the Argo CD settings.
func checkSettings(s Settings, probs *problems) {
	for _, env := range s.EnvNames() {
		checkEnvironment(env, s.Environments[env], probs)
	}
	if s.ArgoCD != nil {
		checkArgoCD(*s.ArgoCD, s.EnvNames(), probs)
	}
}

func checkEnvironment(env string, e Environment, probs *problems) {
	if errs := validation.IsDNS1123Label(env); len(errs) > 0 {
		probs.add(envAt(env, "", -1, ""), "Invalid Environment Name", "The environment name %q is not usable: it "+
			"names the directory overlays/%s and the Argo CD Application, so it must be a DNS label (at most 63 "+
			"lowercase letters, digits and '-', starting and ending with a letter or digit), for example \"prod\" "+
			"or \"eu-west-1\".\n\nOriginal Error: %s", env, env, strings.Join(errs, "; "))
	}
	for i, h := range e.ExtraSystemHosts {
		if err := CheckEgressHost(h); err != nil {
			probs.add(envAt(env, FieldExtraSystemHosts, i, ""), "Malformed Egress Host", "The extra system host %q "+
				"is not a Sidecar egress host. Write it as \"namespace/dnsName\", for example \"monitoring/*\" or "+
				"\"istio-system/istiod.istio-system.svc.cluster.local\".\n\nOriginal Error: %s", h, err)
		}
	}
	switch e.OutboundTrafficPolicy {
	case "", "ALLOW_ANY", "REGISTRY_ONLY":
	default:
		probs.add(envAt(env, FieldOutboundTrafficPolicy, -1, ""), "Invalid Outbound Traffic Policy",
			"The outbound_traffic_policy %q is not one of ALLOW_ANY, REGISTRY_ONLY.", e.OutboundTrafficPolicy)
	}
	for _, k := range sortedKeys(e.Labels) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			probs.add(envAt(env, FieldLabels, -1, k), "Invalid Label Key", "The label key %q is not a valid "+
				"Kubernetes label key, for example \"team\" or \"example.com/tier\".\n\nOriginal Error: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(e.Labels[k]); len(errs) > 0 {
			probs.add(envAt(env, FieldLabels, -1, k), "Invalid Label Value", "The value %q of label %q is not a valid "+
				"Kubernetes label value: at most 63 alphanumerics, '-', '_' or '.'.\n\nOriginal Error: %s", e.Labels[k], k, strings.Join(errs, "; "))
		}
	}
	for _, k := range sortedKeys(e.Annotations) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			probs.add(envAt(env, FieldAnnotations, -1, k), "Invalid Annotation Key", "The annotation key %q is not a "+
				"valid Kubernetes annotation key, for example \"example.com/owner\".\n\nOriginal Error: %s", k, strings.Join(errs, "; "))
		}
	}
	for i, p := range e.Patches {
		if err := checkPatch(p); err != nil {
			probs.add(envAt(env, FieldPatches, i, ""), "Invalid Patch", "Patch %d of environment %q is not a kustomize "+
				"patch. Give a strategic-merge patch (a YAML object with apiVersion, kind and metadata.name, or any "+
				"object with a target) or a JSON 6902 patch (a list of {op, path, value} operations, with a target)."+
				"\n\nOriginal Error: %s", i, env, err)
		}
	}
}

// CheckEgressHost checks the "namespace/dnsName" form of a Sidecar egress host:
// namespace is a namespace name, "*", "." or "~"; dnsName is "*", a host or a
// "*." wildcard host.
func CheckEgressHost(h string) error {
	ns, host, ok := strings.Cut(h, "/")
	if !ok {
		return fmt.Errorf("%q has no \"/\": the namespace part is missing", h)
	}
	switch ns {
	case "*", ".", "~":
	default:
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	if host == "*" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(strings.TrimPrefix(host, "*.")); len(errs) > 0 {
		return fmt.Errorf("host %q: %s", host, strings.Join(errs, "; "))
	}
	return nil
}

var scpLikeURL = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$`)

// validRepoURL accepts scheme URLs with a host, and scp-like git@host:path.
func validRepoURL(s string) bool {
	if scpLikeURL.MatchString(s) {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != "" && !strings.ContainsAny(s, " \t\n")
}

var jsonPatchOps = map[string]bool{"add": true, "remove": true, "replace": true, "move": true, "copy": true, "test": true}

// checkPatch checks a patch's syntax the way kustomize tells the two kinds apart.
func checkPatch(p Patch) error {
	if p.Target != nil {
		if p.Target.LabelSelector != "" {
			if _, err := labels.Parse(p.Target.LabelSelector); err != nil {
				return fmt.Errorf("target label_selector %q: %w", p.Target.LabelSelector, err)
			}
		}
		if p.Target.AnnotationSelector != "" {
			if _, err := labels.Parse(p.Target.AnnotationSelector); err != nil {
				return fmt.Errorf("target annotation_selector %q: %w", p.Target.AnnotationSelector, err)
			}
		}
	}
	docs, err := splitYAML([]byte(p.Patch))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return errors.New("the patch is empty")
	}
	if docs[0][0] == '[' {
		if len(docs) > 1 {
			return errors.New("a JSON patch is one list of operations, not several YAML documents")
		}
		if p.Target == nil {
			return errors.New("a JSON patch needs a target (kind, name, namespace, ...)")
		}
		var ops []map[string]any
		if err := json.Unmarshal(docs[0], &ops); err != nil {
			return fmt.Errorf("JSON patch: %w", err)
		}
		for i, op := range ops {
			name, _ := op["op"].(string)
			if !jsonPatchOps[name] {
				return fmt.Errorf("operation %d: op %q is not one of add, remove, replace, move, copy, test", i, op["op"])
			}
			if ptr, ok := op["path"].(string); !ok || ptr != "" && !strings.HasPrefix(ptr, "/") {
				return fmt.Errorf("operation %d: path %v is not a JSON pointer such as \"/spec/egress/0/hosts/-\"", i, op["path"])
			}
			if _, ok := op["value"]; !ok && (name == "add" || name == "replace" || name == "test") {
				return fmt.Errorf("operation %d: %s needs a value", i, name)
			}
			if from, ok := op["from"].(string); (name == "move" || name == "copy") && (!ok || !strings.HasPrefix(from, "/")) {
				return fmt.Errorf("operation %d: %s needs a from JSON pointer", i, name)
			}
		}
		return nil
	}
	if len(docs) > 1 && p.Target != nil {
		return errors.New("a patch with a target holds one strategic-merge document, not several")
	}
	for i, d := range docs {
		if d[0] != '{' {
			return fmt.Errorf("document %d is neither an object (strategic merge) nor a list (JSON patch)", i)
		}
		if p.Target != nil {
			continue
		}
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(d, &obj); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if obj.APIVersion == "" || obj.Kind == "" || obj.Metadata.Name == "" {
			return fmt.Errorf("document %d: a strategic-merge patch without a target needs apiVersion, kind and metadata.name", i)
		}
	}
	return nil
}

// splitYAML returns each non-empty document of a YAML (or JSON) stream as JSON.
func splitYAML(data []byte) ([][]byte, error) {
	var out [][]byte
	i, err := eachDocument(data, func(_ int, doc []byte) error {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		if js = bytes.TrimSpace(js); len(js) > 0 && !bytes.Equal(js, []byte("null")) {
			out = append(out, js)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("document %d: %w", i, err)
	}
	return out, nil
}

func checkArgoCD(a ArgoCD, envs []string, probs *problems) {
	if a.RepoURL == "" {
		probs.add(argoAt(FieldRepoURL), "Missing Repository URL", "The argocd repo_url is empty. Give the URL Argo CD "+
			"clones the GitOps repository from, for example \"https://github.com/example/platform.git\".")
	} else if !validRepoURL(a.RepoURL) {
		probs.add(argoAt(FieldRepoURL), "Invalid Repository URL", "The argocd repo_url %q is not a repository URL. "+
			"Use an https://, ssh:// or git@host:path URL.", a.RepoURL)
	}
	if p := a.PathPrefix; p != "" && (path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == "..") {
		probs.add(argoAt(FieldPathPrefix), "Invalid Path Prefix", "The argocd path_prefix %q is not a clean path "+
			"relative to the repository root. Write it like \"clusters/prod/mesh\": no leading or trailing \"/\", "+
			"no \".\" or \"..\" parts.", p)
	}
	if a.Namespace != "" {
		if errs := validation.IsDNS1123Label(a.Namespace); len(errs) > 0 {
			probs.add(argoAt(FieldNamespace), "Invalid Namespace", "The argocd namespace %q is not a valid namespace "+
				"name.\n\nOriginal Error: %s", a.Namespace, strings.Join(errs, "; "))
		}
	}
	if a.Project != "" {
		if errs := validation.IsDNS1123Subdomain(a.Project); len(errs) > 0 {
			probs.add(argoAt(FieldProject), "Invalid Project", "The argocd project %q is not a valid AppProject "+
				"name.\n\nOriginal Error: %s", a.Project, strings.Join(errs, "; "))
		}
	}
	for _, env := range envs {
		name := a.appName(env)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			probs.add(argoAt(FieldNamePrefix), "Invalid Application Name", "The Argo CD Application name %q "+
				"(name_prefix-environment) is not a DNS label of at most 63 characters. Shorten name_prefix or the "+
				"environment name.\n\nOriginal Error: %s", name, strings.Join(errs, "; "))
			break
		}
	}
	if sp := a.SyncPolicy; sp != nil && !sp.Automated && (sp.Prune || sp.SelfHeal) {
		probs.add(argoAt(FieldSyncPolicy), "Sync Options Without Automated Sync", "The argocd sync_policy sets prune "+
			"or self_heal without automated = true. Argo CD only prunes and self-heals during automated syncs: set "+
			"automated = true, or leave prune and self_heal out.")
	}
}
