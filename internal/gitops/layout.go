package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// Paths of the layout, relative to its directory.
const (
	BaseDir     = "base"
	OverlaysDir = "overlays"
	ArgoCDDir   = "argocd"
	// KustomizationFile is the name of every kustomization.
	KustomizationFile = "kustomization.yaml"
)

// Layout is the set of files meshscope writes, by slash-separated path relative
// to the directory. It is a pure function of the Input.
type Layout struct {
	Files map[string][]byte
	// Overlays maps each environment to its overlay directory ("overlays/<env>").
	Overlays map[string]string
	// Sidecars are the parsed Sidecars, sorted by namespace and name.
	Sidecars []*Sidecar
}

// Hashes returns the sha256 (hex) of every file.
func (l *Layout) Hashes() map[string]string {
	out := make(map[string]string, len(l.Files))
	for p, b := range l.Files {
		out[p] = Hash(b)
	}
	return out
}

// Paths returns the file paths, sorted.
func (l *Layout) Paths() []string { return sortedKeys(l.Files) }

// Hash is the hex sha256 of b, as the `files` attribute and the ownership file hold it.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// OverlayDir is the overlay directory of an environment, relative to the layout.
func OverlayDir(env string) string { return OverlaysDir + "/" + env }

// Build lays the input out. It checks every input first and returns all the
// problems found; then it builds every overlay with kustomize in memory, so
// that a patch kustomize cannot apply is a problem too. With problems, the
// layout is nil.
func Build(in Input) (*Layout, []Problem) {
	var probs problems
	sidecars := parseInput(in.Sidecars, &probs)
	checkSettings(in.Settings, &probs)
	if len(probs) > 0 {
		return nil, probs
	}
	return build(sidecars, in.Settings)
}

// BuildSidecars lays out Sidecars read with ParseSidecars, as the command line
// reads them from files. A Sidecar given twice is a problem.
func BuildSidecars(sidecars []*Sidecar, s Settings) (*Layout, []Problem) {
	var probs problems
	seen := map[string]*Sidecar{}
	var unique []*Sidecar
	for _, sc := range sidecars {
		if first, dup := seen[sc.Key()]; dup {
			probs.add(Location{Attribute: AttrSidecars, Index: -1}, "Duplicate Sidecar", "The Sidecar %q of %s "+
				"is also in %s. A kustomize base holds each object once: remove one of the two.",
				sc.Key(), sc.Source, first.Source)
			continue
		}
		seen[sc.Key()] = sc
		unique = append(unique, sc)
	}
	sort.Slice(unique, func(a, b int) bool { return unique[a].Key() < unique[b].Key() })
	checkSettings(s, &probs)
	if len(probs) > 0 {
		return nil, probs
	}
	return build(unique, s)
}

// build lays out checked Sidecars, sorted by namespace and name, and settings.
func build(sidecars []*Sidecar, in Settings) (*Layout, []Problem) {
	var probs problems
	l := &Layout{Files: map[string][]byte{}, Overlays: map[string]string{}, Sidecars: sidecars}
	if err := l.addBase(sidecars); err != nil {
		probs.add(Location{Index: -1}, "Layout Not Rendered", "The base could not be rendered. Please report this issue "+
			"to the provider developers.\n\nOriginal Error: %s", err)
		return nil, probs
	}
	for _, env := range in.EnvNames() {
		if err := l.addOverlay(env, in.Environments[env], sidecars, len(in.Environments[env].Patches)); err != nil {
			probs.add(envAt(env, "", -1, ""), "Overlay Not Rendered", "The overlay of environment %q could not be "+
				"rendered. Please report this issue to the provider developers.\n\nOriginal Error: %s", env, err)
			return nil, probs
		}
	}
	if in.ArgoCD != nil {
		if err := l.addArgoCD(*in.ArgoCD, in.EnvNames()); err != nil {
			probs.add(argoAt(""), "Argo CD Applications Not Rendered", "The Argo CD Applications could not be "+
				"rendered. Please report this issue to the provider developers.\n\nOriginal Error: %s", err)
			return nil, probs
		}
	}

	// Every overlay must build. A failure is pinned on the first user patch that
	// breaks the build, else on the environment.
	for _, env := range in.EnvNames() {
		if _, err := BuildOverlay(l.Files, env); err == nil {
			continue
		} else if loc, cause := l.blame(env, in.Environments[env], sidecars); loc.Field == FieldPatches {
			probs.add(loc, "Invalid Patch", "kustomize cannot apply patch %d of environment %q to the base. "+
				"Check its target and, for a JSON patch, that every path exists in the Sidecars it selects "+
				"(a strategic-merge patch without a target must name an object of the base by apiVersion, kind, "+
				"metadata.name and metadata.namespace).\n\nOriginal Error: %s", loc.Index, env, cause)
		} else {
			probs.add(envAt(env, "", -1, ""), "Overlay Does Not Build", "kustomize cannot build the overlay of "+
				"environment %q. Check its settings.\n\nOriginal Error: %s", env, err)
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return l, nil
}

// blame finds the first user patch of env whose addition breaks the build.
func (l *Layout) blame(env string, e Environment, sidecars []*Sidecar) (Location, error) {
	for n := 0; n <= len(e.Patches); n++ {
		trial := &Layout{Files: map[string][]byte{}, Overlays: map[string]string{}}
		for p, b := range l.Files {
			trial.Files[p] = b
		}
		if err := trial.addOverlay(env, e, sidecars, n); err != nil {
			return envAt(env, "", -1, ""), err
		}
		if _, err := BuildOverlay(trial.Files, env); err != nil {
			if n == 0 {
				return envAt(env, "", -1, ""), err
			}
			return envAt(env, FieldPatches, n-1, ""), err
		}
	}
	return envAt(env, "", -1, ""), nil
}

// parseInput parses every sidecars[i] strictly and rejects duplicates.
func parseInput(docs []string, probs *problems) []*Sidecar {
	var out []*Sidecar
	seen := map[string]int{}
	for i, doc := range docs {
		source := fmt.Sprintf("sidecars[%d]", i)
		scs, err := ParseSidecars(source, []byte(doc), true)
		if err != nil {
			probs.add(sidecarAt(i), "Invalid Sidecar Manifest", "%s cannot be used: it must hold networking.istio.io "+
				"Sidecar documents only, for example the manifest of a meshscope_workload_scope. Fix or remove it "+
				"(documents are separated by \"---\" lines and counted from 0).\n\nOriginal Error: %s", source, err)
			continue
		}
		if len(scs) == 0 {
			probs.add(sidecarAt(i), "Empty Sidecar Manifest", "%s holds no Sidecar document. Remove it, or give "+
				"the manifest of a meshscope_workload_scope.", source)
			continue
		}
		for _, sc := range scs {
			if j, dup := seen[sc.Key()]; dup {
				probs.add(sidecarAt(i), "Duplicate Sidecar", "The Sidecar %q in %s is also in sidecars[%d]. "+
					"A kustomize base holds each object once: remove one of the two.", sc.Key(), source, j)
				continue
			}
			seen[sc.Key()] = i
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key() < out[b].Key() })
	return out
}

// marshal renders an object as YAML with sorted keys.
func marshal(v any) ([]byte, error) {
	return yaml.Marshal(v)
}

func kustomization() types.Kustomization {
	return types.Kustomization{TypeMeta: types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind}}
}

func (l *Layout) addBase(sidecars []*Sidecar) error {
	k := kustomization()
	for _, sc := range sidecars {
		b, err := marshal(sc.Object)
		if err != nil {
			return err
		}
		l.Files[BaseDir+"/"+sc.File()] = b
		k.Resources = append(k.Resources, sc.File())
	}
	b, err := marshal(k)
	if err != nil {
		return err
	}
	l.Files[BaseDir+"/"+KustomizationFile] = b
	return nil
}

// addOverlay writes overlays/<env>/kustomization.yaml with the first userPatches
// of the environment's patches.
func (l *Layout) addOverlay(env string, e Environment, sidecars []*Sidecar, userPatches int) error {
	k := kustomization()
	k.Resources = []string{"../../" + BaseDir}
	if len(e.Labels) > 0 {
		k.Labels = []types.Label{{Pairs: e.Labels}}
	}
	if len(e.Annotations) > 0 {
		k.CommonAnnotations = e.Annotations
	}
	for _, sc := range sidecars {
		ops := sidecarOps(sc, e)
		if len(ops) == 0 {
			continue
		}
		b, err := marshal(ops)
		if err != nil {
			return err
		}
		k.Patches = append(k.Patches, types.Patch{Patch: string(b), Target: &types.Selector{ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: "networking.istio.io", Kind: "Sidecar"},
			Name:      regexp.QuoteMeta(sc.Name),
			Namespace: regexp.QuoteMeta(sc.Namespace),
		}}})
	}
	for _, p := range e.Patches[:userPatches] {
		k.Patches = append(k.Patches, types.Patch{Patch: p.Patch, Target: p.Target.selector()})
	}
	b, err := marshal(k)
	if err != nil {
		return err
	}
	dir := OverlayDir(env)
	l.Files[dir+"/"+KustomizationFile] = b
	l.Overlays[env] = dir
	return nil
}

// jsonOp is one JSON 6902 operation; its keys marshal in the order op, path, value.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// sidecarOps are the JSON patch operations that give one Sidecar an
// environment's outbound traffic policy and extra system hosts.
func sidecarOps(sc *Sidecar, e Environment) []jsonOp {
	var ops []jsonOp
	if e.OutboundTrafficPolicy != "" {
		if sc.OutboundTrafficPolicy && e.OutboundTrafficPolicy == "ALLOW_ANY" {
			// Keep an egressProxy, which Istio allows with ALLOW_ANY only.
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/outboundTrafficPolicy/mode", Value: e.OutboundTrafficPolicy})
		} else {
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/outboundTrafficPolicy", Value: map[string]any{"mode": e.OutboundTrafficPolicy}})
		}
	}
	extra := dedup(e.ExtraSystemHosts)
	if len(extra) == 0 || len(sc.Egress) == 0 {
		// A Sidecar without egress listeners already imports every host.
		return ops
	}
	catchAll := false
	for i, l := range sc.Egress {
		if l.Port == 0 {
			catchAll = true
		}
		hostsPath := "/spec/egress/" + strconv.Itoa(i) + "/hosts"
		if len(l.Hosts) == 1 && l.Hosts[0] == "~/*" {
			// "~/*" imports nothing: the extra hosts replace it.
			ops = append(ops, jsonOp{Op: "replace", Path: hostsPath, Value: extra})
			continue
		}
		for _, h := range extra {
			if !slices.Contains(l.Hosts, h) {
				ops = append(ops, jsonOp{Op: "add", Path: hostsPath + "/-", Value: h})
			}
		}
	}
	if !catchAll {
		// Port-level Sidecars without system hosts have no catch-all listener; it goes last.
		ops = append(ops, jsonOp{Op: "add", Path: "/spec/egress/-", Value: map[string]any{"hosts": extra}})
	}
	return ops
}

func dedup(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (t *Target) selector() *types.Selector {
	if t == nil {
		return nil
	}
	return &types.Selector{
		ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
			Name:      t.Name,
			Namespace: t.Namespace,
		},
		LabelSelector:      t.LabelSelector,
		AnnotationSelector: t.AnnotationSelector,
	}
}

// repoPath joins the repository path prefix and a layout path.
func repoPath(prefix, p string) string {
	if prefix == "" {
		return p
	}
	return path.Join(prefix, p)
}
