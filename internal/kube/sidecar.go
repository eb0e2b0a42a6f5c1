package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// ErrNotOwned means an object exists but meshscope does not own it.
var ErrNotOwned = errors.New("not owned by meshscope")

// Observed is a Sidecar as read back from the cluster.
type Observed struct {
	// Owned is the object restricted to the fields this field manager owns
	// (apiVersion, kind, metadata.name/namespace always kept), as YAML.
	Owned string
	// Full is the whole object without managedFields and status, as YAML.
	Full string
	// Managers are the field managers of the object, sorted.
	Managers []string
	// ManagedByLabel reports the app.kubernetes.io/managed-by=meshscope label.
	ManagedByLabel bool
	// OwnedByUs reports that this field manager owns at least one field.
	OwnedByUs bool
}

// ApplySidecar server-side applies a Sidecar manifest (YAML) with the field manager.
// A conflict with another manager is a *ConflictError naming it.
func (c *Client) ApplySidecar(ctx context.Context, manifest string) error {
	if err := c.init(); err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		return fmt.Errorf("the Sidecar manifest is not valid YAML: %w", err)
	}
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(js); err != nil {
		return fmt.Errorf("the Sidecar manifest is not a Kubernetes object: %w", err)
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	force := c.cfg.ForceConflicts
	_, err = c.dyn.Resource(SidecarGVR).Namespace(ns).Patch(ctx, name, types.ApplyPatchType, js,
		metav1.PatchOptions{FieldManager: c.cfg.FieldManager, Force: &force})
	return c.classify(err, "patch", SidecarGVR, ns, "Sidecar "+ns+"/"+name)
}

// ReadSidecar reads a Sidecar back. It returns (nil, nil) when it does not exist.
func (c *Client) ReadSidecar(ctx context.Context, ns, name string) (*Observed, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	obj, err := c.dyn.Resource(SidecarGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, listErr := c.dyn.Resource(SidecarGVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(listErr) {
			return nil, &MissingCRDError{Resource: SidecarGVR, Err: listErr}
		}
		return nil, nil
	}
	if err != nil {
		return nil, c.classify(err, "get", SidecarGVR, ns, "Sidecar "+ns+"/"+name)
	}
	return c.observe(obj)
}

func (c *Client) observe(obj *unstructured.Unstructured) (*Observed, error) {
	o := &Observed{ManagedByLabel: obj.GetLabels()[mesh.ManagedByLabel] == mesh.ManagedByValue}
	owned := &fieldpath.Set{}
	for _, mf := range obj.GetManagedFields() {
		if !slices.Contains(o.Managers, mf.Manager) {
			o.Managers = append(o.Managers, mf.Manager)
		}
		if mf.Manager != c.cfg.FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("reading managedFields of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		owned = owned.Union(s)
		o.OwnedByUs = !owned.Empty()
	}
	slices.Sort(o.Managers)

	clean := obj.DeepCopy()
	clean.SetManagedFields(nil)
	unstructured.RemoveNestedField(clean.Object, "status")
	full, err := yaml.Marshal(clean.Object)
	if err != nil {
		return nil, err
	}
	o.Full = string(full)

	tv, err := typed.DeducedParseableType.FromUnstructured(clean.Object)
	if err != nil {
		return nil, err
	}
	extracted := tv.ExtractItems(owned.Leaves()).AsValue().Unstructured()
	m, _ := extracted.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["apiVersion"] = obj.GetAPIVersion()
	m["kind"] = obj.GetKind()
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = obj.GetName()
	md["namespace"] = obj.GetNamespace()
	m["metadata"] = md
	ownedYAML, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	o.Owned = string(ownedYAML)
	return o, nil
}

// DeleteSidecar deletes a Sidecar only when it carries meshscope's managed-by
// label and this field manager owns fields of it. A missing object is not an error.
func (c *Client) DeleteSidecar(ctx context.Context, ns, name string) error {
	o, err := c.ReadSidecar(ctx, ns, name)
	if err != nil || o == nil {
		return err
	}
	if !o.ManagedByLabel || !o.OwnedByUs {
		return fmt.Errorf("sidecar %s/%s: %w (label %s=%s: %v, field manager %q among %v)", ns, name, ErrNotOwned,
			mesh.ManagedByLabel, mesh.ManagedByValue, o.ManagedByLabel, c.cfg.FieldManager, o.Managers)
	}
	err = c.dyn.Resource(SidecarGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return c.classify(err, "delete", SidecarGVR, ns, "Sidecar "+ns+"/"+name)
}

// SidecarSpecJSON returns the spec of a Sidecar YAML as JSON, for the compiler's parser.
func SidecarSpecJSON(manifest string) ([]byte, error) {
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	return obj["spec"], nil
}
