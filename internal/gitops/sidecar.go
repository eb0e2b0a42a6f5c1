package gitops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	networking "istio.io/api/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// Sidecar is one Sidecar document, ready for the base.
type Sidecar struct {
	// Source names where the document came from: "<source> document <index>".
	Source    string
	Name      string
	Namespace string
	// APIVersion is the document's networking.istio.io version.
	APIVersion string
	// Object is the document without the fields a server sets (status, uid,
	// resourceVersion, managedFields, ...), as decoded JSON.
	Object map[string]any
	// Egress are the egress listeners, in order.
	Egress []Listener
	// OutboundTrafficPolicy reports whether spec.outboundTrafficPolicy is set.
	OutboundTrafficPolicy bool
}

// Listener is one egress listener of a Sidecar.
type Listener struct {
	// Port is 0 for the catch-all listener.
	Port  uint32
	Hosts []string
}

// Key is "namespace/name".
func (s *Sidecar) Key() string { return s.Namespace + "/" + s.Name }

// File is the Sidecar's path relative to base/: "<namespace>/<name>.yaml".
func (s *Sidecar) File() string { return s.Namespace + "/" + s.Name + ".yaml" }

// sidecarVersions are the networking.istio.io versions of a Sidecar.
var sidecarVersions = map[string]bool{
	"networking.istio.io/v1":       true,
	"networking.istio.io/v1beta1":  true,
	"networking.istio.io/v1alpha3": true,
}

// ParseSidecars reads every document of a YAML stream. With strict, a document
// that is not a Sidecar is an error; otherwise it is skipped. Errors are
// *mesh.DocumentError values naming the source and the document's index.
func ParseSidecars(source string, data []byte, strict bool) ([]*Sidecar, error) {
	var out []*Sidecar
	idx, err := eachDocument(data, func(idx int, doc []byte) error {
		sc, err := parseDocument(doc, strict)
		if err != nil {
			return err
		}
		if sc != nil {
			sc.Source = fmt.Sprintf("%s document %d", source, idx)
			out = append(out, sc)
		}
		return nil
	})
	if err != nil {
		var de *mesh.DocumentError
		if errors.As(err, &de) {
			de.Source, de.Index = source, idx
			return nil, de
		}
		return nil, &mesh.DocumentError{Source: source, Index: idx, Err: err}
	}
	return out, nil
}

// eachDocument calls fn with the index and the text of each document of a YAML (or JSON)
// stream, as Kubernetes' YAML reader splits it. It stops at the first document that cannot be
// read or that fn returns an error for, and returns that document's index with the error.
func eachDocument(data []byte, fn func(i int, doc []byte) error) (int, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return i, nil
		}
		if err == nil {
			err = fn(i, doc)
		}
		if err != nil {
			return i, err
		}
	}
}

// parseDocument returns nil, nil for an empty or skipped document.
func parseDocument(doc []byte, strict bool) (*Sidecar, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if bytes.Equal(js, []byte("null")) {
		return nil, nil // only comments
	}
	if len(js) == 0 || js[0] != '{' {
		return nil, errors.New("document is not a YAML mapping (a Sidecar needs apiVersion, kind, metadata and spec)")
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	docErr := func(format string, a ...any) error {
		return &mesh.DocumentError{Kind: kind, Name: name, Err: fmt.Errorf(format, a...)}
	}
	if kind != "Sidecar" || !strings.HasPrefix(apiVersion, "networking.istio.io/") {
		if !strict {
			return nil, nil
		}
		if kind == "" || apiVersion == "" {
			return nil, docErr("the document has no apiVersion or kind; expected a networking.istio.io Sidecar")
		}
		return nil, docErr("%s %s is not a Sidecar: only networking.istio.io Sidecars go into the overlay", apiVersion, kind)
	}
	if !sidecarVersions[apiVersion] {
		return nil, docErr("unsupported apiVersion %q for Sidecar: use networking.istio.io/v1, v1beta1 or v1alpha3", apiVersion)
	}
	// The spec is read as Istio reads it, so that a misspelt field is an error
	// here rather than a rejected object in the cluster.
	spec := &networking.Sidecar{}
	if raw, ok := obj["spec"]; ok {
		specJSON, err := json.Marshal(raw)
		if err != nil {
			return nil, docErr("spec: %v", err)
		}
		if err := protojson.Unmarshal(specJSON, spec); err != nil {
			return nil, docErr("spec: %v", err)
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, docErr("metadata.name %q is not a valid object name: %s", name, strings.Join(errs, "; "))
	}
	if namespace == "" {
		return nil, docErr("metadata.namespace is not set: a Sidecar in the base must name its namespace")
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, docErr("metadata.namespace %q is not a valid namespace name: %s", namespace, strings.Join(errs, "; "))
	}
	clean(obj)
	sc := &Sidecar{Name: name, Namespace: namespace, APIVersion: apiVersion, Object: obj,
		OutboundTrafficPolicy: spec.GetOutboundTrafficPolicy() != nil}
	for _, l := range spec.GetEgress() {
		sc.Egress = append(sc.Egress, Listener{Port: l.GetPort().GetNumber(), Hosts: append([]string{}, l.GetHosts()...)})
	}
	return sc, nil
}

// clean drops what a server sets, so that `kubectl get -o yaml` output can seed a base.
func clean(obj map[string]any) {
	delete(obj, "status")
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		delete(meta, k)
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
}
