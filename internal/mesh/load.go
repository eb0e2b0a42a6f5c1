package mesh

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// DocumentError is a problem with one YAML document of a source.
type DocumentError struct {
	Source string // file name, "stdin" or "manifests[3]"
	Index  int    // 0-based document index within the source
	Kind   string
	Name   string
	Err    error
}

func (e *DocumentError) Error() string {
	where := fmt.Sprintf("%s: document %d", e.Source, e.Index)
	if e.Kind != "" {
		where += " (" + e.Kind
		if e.Name != "" {
			where += " " + e.Name
		}
		where += ")"
	}
	return where + ": " + e.Err.Error()
}

func (e *DocumentError) Unwrap() error { return e.Err }

// istioGroupVersions are the networking.istio.io versions meshscope reads.
var istioGroupVersions = map[string]bool{
	"networking.istio.io/v1":       true,
	"networking.istio.io/v1beta1":  true,
	"networking.istio.io/v1alpha3": true,
}

// LoadPaths reads files and directories (recursively, *.yaml and *.yml, in
// lexical order). The path "-" reads stdin.
func (inv *Inventory) LoadPaths(paths []string, stdin io.Reader) error {
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			if err := inv.AddYAML("stdin", data); err != nil {
				return err
			}
			continue
		}
		files, err := yamlFiles(p)
		if err != nil {
			return err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("reading %s: %w", f, err)
			}
			if err := inv.AddYAML(f, data); err != nil {
				return err
			}
		}
	}
	return nil
}

func yamlFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		ext := strings.ToLower(filepath.Ext(path))
		if ext == ".yaml" || ext == ".yml" {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", p, err)
	}
	sort.Strings(out)
	return out, nil
}

// AddYAML adds every document of a multi-document YAML stream. Unknown kinds are
// skipped. A broken document is a *DocumentError naming the source and index.
func (inv *Inventory) AddYAML(source string, data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for idx := 0; ; idx++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &DocumentError{Source: source, Index: idx, Err: err}
		}
		if err := inv.addDocument(source, idx, doc); err != nil {
			return err
		}
	}
}

type envelope struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Items           []json.RawMessage `json:"items"`
}

func (inv *Inventory) addDocument(source string, idx int, doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return &DocumentError{Source: source, Index: idx, Err: err}
	}
	js = bytes.TrimSpace(js)
	if bytes.Equal(js, []byte("null")) {
		return nil // a document holding only comments
	}
	if len(js) == 0 || js[0] != '{' {
		return &DocumentError{Source: source, Index: idx, Err: errors.New("document is not a YAML mapping (a Kubernetes object needs apiVersion, kind and metadata)")}
	}
	return inv.addJSON(source, idx, js)
}

func (inv *Inventory) addJSON(source string, idx int, js []byte) error {
	var env envelope
	if err := json.Unmarshal(js, &env); err != nil {
		return &DocumentError{Source: source, Index: idx, Err: err}
	}
	docErr := func(err error) error {
		return &DocumentError{Source: source, Index: idx, Kind: env.Kind, Name: env.Metadata.Name, Err: err}
	}
	if env.Kind == "" || env.APIVersion == "" {
		return docErr(errors.New("object has no apiVersion or kind"))
	}
	if env.Kind == "List" || strings.HasSuffix(env.Kind, "List") && env.Items != nil {
		for _, item := range env.Items {
			if err := inv.addJSON(source, idx, item); err != nil {
				return err
			}
		}
		return nil
	}
	src := fmt.Sprintf("%s#%d", source, idx)
	group := env.APIVersion
	if i := strings.Index(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	switch group {
	case "networking.istio.io":
		switch env.Kind {
		case "ServiceEntry", "DestinationRule", "VirtualService", "Sidecar":
		default:
			return nil
		}
		if !istioGroupVersions[env.APIVersion] {
			return docErr(fmt.Errorf("unsupported apiVersion %q for %s: use networking.istio.io/v1, v1beta1 or v1alpha3", env.APIVersion, env.Kind))
		}
		return inv.addIstio(env.Kind, js, src, docErr)
	case "", "apps", "batch":
	default:
		return nil
	}
	switch env.Kind {
	case "Namespace", "Service", "Pod", "ConfigMap":
		if env.APIVersion != "v1" {
			return docErr(fmt.Errorf("unsupported apiVersion %q for %s: use v1", env.APIVersion, env.Kind))
		}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		if env.APIVersion != "apps/v1" {
			return docErr(fmt.Errorf("unsupported apiVersion %q for %s: use apps/v1", env.APIVersion, env.Kind))
		}
	case "Job":
		if env.APIVersion != "batch/v1" {
			return docErr(fmt.Errorf("unsupported apiVersion %q for %s: use batch/v1", env.APIVersion, env.Kind))
		}
	default:
		return nil
	}
	return inv.addKube(env.Kind, js, src, docErr)
}

func meta(kind, apiVersion string, om metav1.ObjectMeta, src string) Meta {
	ns := om.Namespace
	if ns == "" && kind != "Namespace" {
		ns = "default"
	}
	return Meta{
		Kind: kind, APIVersion: apiVersion, Name: om.Name, Namespace: ns,
		Labels: om.Labels, Annotations: om.Annotations,
		Created: om.CreationTimestamp.UTC(), Source: src,
	}
}

// upsert appends obj, or replaces an earlier object with the same namespace and
// name (a later document wins, as with kubectl apply).
func upsert[T interface{ meta() *Meta }](list []T, obj T) []T {
	m := obj.meta()
	for i, old := range list {
		om := old.meta()
		if om.Namespace == m.Namespace && om.Name == m.Name && om.Kind == m.Kind {
			if m.Created.Year() >= 2200 {
				m.Created = om.Created
			}
			list[i] = obj
			return list
		}
	}
	return append(list, obj)
}

func (inv *Inventory) stamp(m *Meta) {
	if m.Created.IsZero() {
		m.Created = inv.nextCreated()
	}
}

func (inv *Inventory) addKube(kind string, js []byte, src string, docErr func(error) error) error {
	switch kind {
	case "Namespace":
		var o corev1.Namespace
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		m := meta(kind, "v1", o.ObjectMeta, src)
		m.Namespace = ""
		if o.Name == "" {
			return docErr(errors.New("metadata.name is empty"))
		}
		inv.Namespaces[o.Name] = &Namespace{Meta: m}
	case "Service":
		var o corev1.Service
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		if o.Name == "" {
			return docErr(errors.New("metadata.name is empty"))
		}
		DefaultService(&o.Spec)
		s := &Service{Meta: meta(kind, "v1", o.ObjectMeta, src), Spec: o.Spec}
		inv.stamp(&s.Meta)
		inv.Services = upsert(inv.Services, s)
	case "ConfigMap":
		var o corev1.ConfigMap
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		if o.Name != "istio" {
			return nil
		}
		settings, err := ParseMeshConfig(o.Data["mesh"])
		if err != nil {
			return docErr(fmt.Errorf("data.mesh: %w", err))
		}
		settings.Source = src
		inv.Mesh = settings
		inv.meshSet = true
	case "Pod":
		var o corev1.Pod
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		w := &Workload{Meta: meta(kind, "v1", o.ObjectMeta, src), PodLabels: o.Labels, Ports: containerPorts(o.Spec), PodIP: o.Status.PodIP}
		inv.stamp(&w.Meta)
		inv.Workloads = upsert(inv.Workloads, w)
	default:
		var (
			om       metav1.ObjectMeta
			tpl      corev1.PodTemplateSpec
			replicas *int32
			gv       = "apps/v1"
		)
		switch kind {
		case "Deployment":
			var o appsv1.Deployment
			if err := json.Unmarshal(js, &o); err != nil {
				return docErr(err)
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "StatefulSet":
			var o appsv1.StatefulSet
			if err := json.Unmarshal(js, &o); err != nil {
				return docErr(err)
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "DaemonSet":
			var o appsv1.DaemonSet
			if err := json.Unmarshal(js, &o); err != nil {
				return docErr(err)
			}
			om, tpl = o.ObjectMeta, o.Spec.Template
		case "ReplicaSet":
			var o appsv1.ReplicaSet
			if err := json.Unmarshal(js, &o); err != nil {
				return docErr(err)
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "Job":
			var o batchv1.Job
			if err := json.Unmarshal(js, &o); err != nil {
				return docErr(err)
			}
			om, tpl, gv = o.ObjectMeta, o.Spec.Template, "batch/v1"
		}
		w := &Workload{Meta: meta(kind, gv, om, src), PodLabels: tpl.Labels, Ports: containerPorts(tpl.Spec), Replicas: replicas}
		inv.stamp(&w.Meta)
		inv.Workloads = upsert(inv.Workloads, w)
	}
	return nil
}

func containerPorts(spec corev1.PodSpec) []ContainerPort {
	var out []ContainerPort
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			out = append(out, ContainerPort{Name: p.Name, Port: p.ContainerPort, Protocol: proto})
		}
	}
	return out
}

// DefaultService applies the defaults the kube-apiserver applies to a Service:
// protocol TCP, targetPort = port, type ClusterIP.
func DefaultService(spec *corev1.ServiceSpec) {
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 || p.TargetPort.Type == intstr.String && p.TargetPort.StrVal == "" {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
}

func (inv *Inventory) addIstio(kind string, js []byte, src string, docErr func(error) error) error {
	switch kind {
	case "ServiceEntry":
		var o networkingv1.ServiceEntry
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		x := &ServiceEntry{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}
		inv.stamp(&x.Meta)
		inv.ServiceEntries = upsert(inv.ServiceEntries, x)
	case "DestinationRule":
		var o networkingv1.DestinationRule
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		x := &DestinationRule{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}
		inv.stamp(&x.Meta)
		inv.DestinationRules = upsert(inv.DestinationRules, x)
	case "VirtualService":
		var o networkingv1.VirtualService
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		x := &VirtualService{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}
		inv.stamp(&x.Meta)
		inv.VirtualServices = upsert(inv.VirtualServices, x)
	case "Sidecar":
		var o networkingv1.Sidecar
		if err := json.Unmarshal(js, &o); err != nil {
			return docErr(err)
		}
		x := &Sidecar{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}
		inv.stamp(&x.Meta)
		inv.Sidecars = upsert(inv.Sidecars, x)
	}
	return nil
}

// ParseSidecar parses one Sidecar manifest (YAML).
func ParseSidecar(source string, data []byte) (*Sidecar, error) {
	tmp := New()
	if err := tmp.AddYAML(source, data); err != nil {
		return nil, err
	}
	if len(tmp.Sidecars) != 1 {
		return nil, fmt.Errorf("%s: expected exactly one networking.istio.io Sidecar, found %d", source, len(tmp.Sidecars))
	}
	sc := tmp.Sidecars[0]
	if sc.Created.Year() == 2200 {
		sc.Created = sc.Created.AddDate(0, 0, 0) // keep; callers may replace
	}
	return sc, nil
}
