package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	networkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DocumentError is a problem with one YAML document of a source.
type DocumentError struct {
	Source string // file name, "stdin" or "manifests[3]"
	Index  int    // 0-based document index within the source
	Line   int    // 1-based line within the source: of the problem when known, else where the document starts; 0 when unknown
	Kind   string
	Name   string
	// Namespace is the object's, when its metadata was read (not part of the message).
	Namespace string
	Err       error
}

func (e *DocumentError) Error() string {
	where := fmt.Sprintf("%s: document %d", e.Source, e.Index)
	if e.Line > 0 {
		where += fmt.Sprintf(", line %d", e.Line)
	}
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
// lexical order). The path "-" reads stdin. See ReadPaths for what is refused.
func (inv *Inventory) LoadPaths(paths []string, stdin io.Reader) error {
	return ReadPaths(paths, stdin, inv.AddYAML)
}

// ReadPaths calls add with the content of every file of paths: a file, a directory (its *.yaml
// and *.yml files, recursively, in lexical order) or "-" for stdin. An input that gives
// nothing is refused rather than read as an empty mesh: an empty stdin, an empty file, a
// directory without YAML files, and stdin named twice (it can be read once).
func ReadPaths(paths []string, stdin io.Reader, add func(source string, data []byte) error) error {
	if i := slices.Index(paths, "-"); i >= 0 && slices.Contains(paths[i+1:], "-") {
		return errors.New("stdin (\"-\") is given twice; it can be read only once")
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return fmt.Errorf("reading stdin: %w", err)
			}
			if len(bytes.TrimSpace(data)) == 0 {
				return errors.New("stdin is empty: pipe the manifests in (for example `kubectl get ... -o yaml |`), or give a file or directory instead of \"-\"")
			}
			if err := add("stdin", data); err != nil {
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
			if len(bytes.TrimSpace(data)) == 0 && f == p {
				return fmt.Errorf("%s is empty: give a file that holds manifests", f)
			}
			if err := add(f, data); err != nil {
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
	if len(out) == 0 {
		return nil, fmt.Errorf("directory %s holds no *.yaml or *.yml file", p)
	}
	sort.Strings(out)
	return out, nil
}

// AddYAML adds every document of a multi-document YAML stream. Unknown kinds are
// skipped. A broken document is a *DocumentError naming the source and index;
// the documents before it are added.
func (inv *Inventory) AddYAML(source string, data []byte) error {
	docs, splitErr := SplitDocuments(source, data)
	// Decoding is pure and runs on every CPU; adding is in document order, so
	// creation order and "a later document wins" are those of the stream.
	for _, d := range decodeDocuments(source, docs) {
		for _, o := range d.objects {
			inv.add(o)
		}
		if d.err != nil {
			return d.err
		}
	}
	return splitErr
}

// AddJSON adds the object (or List) of one JSON document, as AddYAML adds the same
// document, without the YAML parser: the live inventory reads JSON from the API server,
// and parsing it as YAML took most of the time of reading a large mesh. A broken object is
// a *DocumentError naming the source; the objects of a List before it are added.
func (inv *Inventory) AddJSON(source string, js []byte) error {
	d, err := DecodeJSON(source, js)
	inv.Add(d)
	return err
}

// Decoded is the objects of JSON documents, decoded but not yet in an inventory. Decoding is
// most of the cost of adding an object and needs no inventory, so a reader of many documents
// decodes them at once (DecodeJSON) and adds them in its own order (Add).
type Decoded struct{ objects []object }

// DecodeJSON decodes one JSON document as AddJSON reads it. On a broken object it returns the
// objects before it and the *DocumentError that AddJSON returns.
func DecodeJSON(source string, js []byte) (Decoded, error) {
	objs, err := decodeJSON(nil, source, 0, js)
	if de := (*DocumentError)(nil); errors.As(err, &de) && de.Line == 0 {
		de.Line = 1
	}
	return Decoded{objs}, err
}

// DecodeObjectJSON is DecodeJSON for one object that is not in a file: its source is
// source(namespace, name) of the object's own metadata (a cluster's object, say:
// "cluster:Kind/namespace/name"), read from the envelope the decoder parses anyway.
func DecodeObjectJSON(js []byte, source func(namespace, name string) string) (Decoded, error) {
	objs, err := decodeNamed(nil, source, 0, js)
	if de := (*DocumentError)(nil); errors.As(err, &de) && de.Line == 0 {
		de.Line = 1
	}
	return Decoded{objs}, err
}

// Append adds the objects of more to d, after its own.
func (d *Decoded) Append(more Decoded) { d.objects = append(d.objects, more.objects...) }

// Add adds the decoded objects, in order, as AddJSON adds them.
func (inv *Inventory) Add(d Decoded) {
	for _, o := range d.objects {
		inv.add(o)
	}
}

// object is one decoded object; exactly one field is set.
type object struct {
	namespace       *Namespace
	service         *Service
	workload        *Workload
	serviceEntry    *ServiceEntry
	destinationRule *DestinationRule
	virtualService  *VirtualService
	sidecar         *Sidecar
	autoscaler      *Autoscaler
	endpointSlice   *EndpointSlice
	vm              *VMProxy
	envoyFilter     *EnvoyFilter
	webhooks        *webhookSet
	injector        *InjectorConfig
	mesh            *MeshSettings
}

// webhookSet is the injection webhooks of one MutatingWebhookConfiguration.
type webhookSet struct {
	config   string
	webhooks []InjectionWebhook
}

// meta is the object's metadata (a mesh ConfigMap has only its kind and name).
func (o object) meta() *Meta {
	switch {
	case o.namespace != nil:
		return &o.namespace.Meta
	case o.service != nil:
		return &o.service.Meta
	case o.workload != nil:
		return &o.workload.Meta
	case o.serviceEntry != nil:
		return &o.serviceEntry.Meta
	case o.destinationRule != nil:
		return &o.destinationRule.Meta
	case o.virtualService != nil:
		return &o.virtualService.Meta
	case o.sidecar != nil:
		return &o.sidecar.Meta
	case o.autoscaler != nil:
		return &o.autoscaler.Meta
	case o.endpointSlice != nil:
		return &o.endpointSlice.Meta
	case o.vm != nil:
		return &o.vm.Meta
	case o.envoyFilter != nil:
		return &o.envoyFilter.Meta
	case o.webhooks != nil:
		return &Meta{Kind: "MutatingWebhookConfiguration", Name: o.webhooks.config}
	case o.injector != nil:
		return &Meta{Kind: "ConfigMap", Name: "istio-sidecar-injector"}
	default:
		return &Meta{Kind: "ConfigMap", Name: "istio"}
	}
}

// decoded is what one document holds: its objects, in order, up to the first
// error, if any.
type decoded struct {
	objects []object
	err     error
}

// parallelDocuments is the smallest stream decoded on several goroutines.
const parallelDocuments = 64

func decodeDocuments(source string, docs []Document) []decoded {
	out := make([]decoded, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs)/parallelDocuments)
	if workers < 2 {
		for i, doc := range docs {
			out[i].objects, out[i].err = decodeDocument(source, doc)
		}
		return out
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(docs) {
					return
				}
				out[i].objects, out[i].err = decodeDocument(source, docs[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// add puts a decoded object into the inventory.
func (inv *Inventory) add(o object) {
	switch {
	case o.namespace != nil:
		inv.Namespaces[o.namespace.Name] = o.namespace
	case o.service != nil:
		addObject(inv, &inv.Services, o.service, &inv.pos.services)
	case o.workload != nil:
		addObject(inv, &inv.Workloads, o.workload, &inv.pos.workloads)
		inv.resolveWorkloadRefs(o.workload)
	case o.serviceEntry != nil:
		addObject(inv, &inv.ServiceEntries, o.serviceEntry, &inv.pos.serviceEntries)
	case o.destinationRule != nil:
		addObject(inv, &inv.DestinationRules, o.destinationRule, &inv.pos.destinationRules)
	case o.virtualService != nil:
		addObject(inv, &inv.VirtualServices, o.virtualService, &inv.pos.virtualServices)
	case o.sidecar != nil:
		addObject(inv, &inv.Sidecars, o.sidecar, &inv.pos.sidecars)
	case o.autoscaler != nil:
		addObject(inv, &inv.Autoscalers, o.autoscaler, &inv.pos.autoscalers)
	case o.endpointSlice != nil:
		addObject(inv, &inv.EndpointSlices, o.endpointSlice, &inv.pos.endpointSlices)
	case o.vm != nil:
		addObject(inv, &inv.VMProxies, o.vm, &inv.pos.vms)
	case o.envoyFilter != nil:
		addObject(inv, &inv.EnvoyFilters, o.envoyFilter, &inv.pos.envoyFilters)
	case o.webhooks != nil:
		if inv.Webhooks == nil {
			inv.Webhooks = map[string][]InjectionWebhook{}
		}
		inv.Webhooks[o.webhooks.config] = o.webhooks.webhooks
	case o.injector != nil:
		inv.Injector = o.injector
	case o.mesh != nil:
		inv.Mesh = *o.mesh
		inv.meshSet = true
	}
}

// addObject stamps obj with its creation order and upserts it into *list.
func addObject[T interface{ meta() *Meta }](inv *Inventory, list *[]T, obj T, ix **listIndex) {
	inv.stamp(obj.meta())
	*list = upsert(*list, obj, ix)
}

type envelope struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Items           []json.RawMessage `json:"items"`
}

func decodeDocument(source string, doc Document) ([]object, error) {
	if len(bytes.TrimSpace(doc.Data)) == 0 {
		return nil, nil
	}
	js, err := doc.ToJSON(source)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if bytes.Equal(js, []byte("null")) {
		return nil, nil // a document holding only comments
	}
	if len(js) == 0 || js[0] != '{' {
		return nil, &DocumentError{Source: source, Index: doc.Index, Line: doc.Line, Err: errors.New("document is not a YAML mapping (a Kubernetes object needs apiVersion, kind and metadata)")}
	}
	objs, err := decodeJSON(nil, source, doc.Index, js)
	var de *DocumentError
	if errors.As(err, &de) && de.Line == 0 {
		de.Line = doc.Line
	}
	return objs, err
}

// decodeJSON appends the objects of one JSON object (a List holds several) to out.
func decodeJSON(out []object, source string, idx int, js []byte) ([]object, error) {
	return decodeNamed(out, func(string, string) string { return source }, idx, js)
}

// decodeNamed is decodeJSON with the source named from each object's namespace and name.
func decodeNamed(out []object, name func(namespace, name string) string, idx int, js []byte) ([]object, error) {
	var env envelope
	if err := json.Unmarshal(js, &env); err != nil {
		return out, &DocumentError{Source: name("", ""), Index: idx, Err: err}
	}
	source := name(env.Metadata.Namespace, env.Metadata.Name)
	docErr := func(err error) error {
		if err == nil {
			return nil
		}
		return &DocumentError{Source: source, Index: idx, Kind: env.Kind, Name: env.Metadata.Name, Namespace: env.Metadata.Namespace, Err: err}
	}
	if env.Kind == "" || env.APIVersion == "" {
		return out, docErr(errors.New("object has no apiVersion or kind"))
	}
	if env.Kind == "List" || strings.HasSuffix(env.Kind, "List") && env.Items != nil {
		for _, item := range env.Items {
			var err error
			if out, err = decodeNamed(out, name, idx, item); err != nil {
				return out, err
			}
		}
		return out, nil
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
		case "EnvoyFilter":
			var o networkingv1alpha3.EnvoyFilter
			if err := json.Unmarshal(js, &o); err != nil {
				return out, docErr(err)
			}
			return append(out, object{envoyFilter: &EnvoyFilter{Meta: meta(env.Kind, env.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}}), nil
		case "WorkloadEntry", "WorkloadGroup":
			// VM proxies: counted, so that what is not modelled is said (C11).
			var spec struct {
				Spec struct {
					Labels   map[string]string `json:"labels"`
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(js, &spec); err != nil {
				return out, docErr(err)
			}
			vm := &VMProxy{Meta: meta(env.Kind, env.APIVersion, env.Metadata, src), ProxyLabels: spec.Spec.Labels}
			if env.Kind == "WorkloadGroup" {
				vm.ProxyLabels = spec.Spec.Metadata.Labels
			}
			return append(out, object{vm: vm}), nil
		default:
			return out, docErr(checkKind(group, env.Kind))
		}
		if !istioGroupVersions[env.APIVersion] {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use networking.istio.io/v1, v1beta1 or v1alpha3", env.APIVersion, env.Kind))
		}
		o, err := decodeIstio(env.Kind, js, src)
		if err == nil {
			err = o.validate()
		}
		if err != nil {
			return out, docErr(err)
		}
		return append(out, o), nil
	case "argoproj.io":
		if env.Kind != "Rollout" {
			return out, nil
		}
		if env.APIVersion != "argoproj.io/v1alpha1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use argoproj.io/v1alpha1", env.APIVersion, env.Kind))
		}
		o, err := decodeRollout(js, src)
		if err != nil {
			return out, docErr(err)
		}
		return append(out, o), nil
	case "autoscaling":
		if env.Kind != "HorizontalPodAutoscaler" {
			return out, nil
		}
		if env.APIVersion != "autoscaling/v2" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use autoscaling/v2", env.APIVersion, env.Kind))
		}
		o, err := decodeAutoscaler(js, src)
		if err != nil {
			return out, docErr(err)
		}
		return append(out, o), nil
	case "admissionregistration.k8s.io":
		if env.Kind != "MutatingWebhookConfiguration" {
			return out, nil
		}
		if env.APIVersion != "admissionregistration.k8s.io/v1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use admissionregistration.k8s.io/v1", env.APIVersion, env.Kind))
		}
		o, ok, err := decodeWebhooks(js)
		if err != nil {
			return out, docErr(err)
		}
		if ok {
			out = append(out, o)
		}
		return out, nil
	case "discovery.k8s.io":
		if env.Kind != "EndpointSlice" {
			return out, nil
		}
		if env.APIVersion != "discovery.k8s.io/v1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use discovery.k8s.io/v1", env.APIVersion, env.Kind))
		}
		var o discoveryv1.EndpointSlice
		if err := json.Unmarshal(js, &o); err != nil {
			return out, docErr(err)
		}
		if o.Name == "" {
			return out, docErr(errors.New("metadata.name is empty"))
		}
		return append(out, object{endpointSlice: &EndpointSlice{Meta: meta(env.Kind, env.APIVersion, o.ObjectMeta, src),
			Service: o.Labels[discoveryv1.LabelServiceName], AddressType: o.AddressType, Endpoints: o.Endpoints, Ports: o.Ports}}), nil
	case "", "apps", "batch":
	default:
		return out, nil
	}
	switch env.Kind {
	case "Namespace", "Service", "Pod", "ConfigMap":
		if env.APIVersion != "v1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use v1", env.APIVersion, env.Kind))
		}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		if env.APIVersion != "apps/v1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use apps/v1", env.APIVersion, env.Kind))
		}
	case "Job", "CronJob":
		if env.APIVersion != "batch/v1" {
			return out, docErr(fmt.Errorf("unsupported apiVersion %q for %s: use batch/v1", env.APIVersion, env.Kind))
		}
	default:
		return out, docErr(checkKind(group, env.Kind))
	}
	o, ok, err := decodeKube(env.Kind, js, src)
	if err == nil && ok {
		err = o.validate()
	}
	if err != nil {
		return out, docErr(err)
	}
	if ok {
		out = append(out, o)
	}
	return out, nil
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
// name (a later document wins, as with kubectl apply). ix remembers where each
// object of the list is, so that loading n objects takes O(n), not O(n²).
func upsert[T interface{ meta() *Meta }](list []T, obj T, ix **listIndex) []T {
	m := obj.meta()
	k := objKey{m.Kind, m.Namespace, m.Name}
	if i, found := lookup(ix, list, k); found {
		if m.Created.Year() >= 2200 {
			m.Created = list[i].meta().Created
		}
		list[i] = obj
		return list
	}
	list = append(list, obj)
	(*ix).pos[k] = len(list) - 1
	(*ix).n, (*ix).first = identity(list)
	return list
}

type objKey struct{ kind, ns, name string }

func keyOf(m *Meta) objKey { return objKey{m.Kind, m.Namespace, m.Name} }

// listIndex maps kind, namespace and name to the position of the first such
// object in one of the inventory's lists. It holds for the list it was built or
// last updated for: the same length and the same backing array.
type listIndex struct {
	n     int
	first any
	pos   map[objKey]int
}

// lookup finds k in list through *ix. The index is built again when the list
// was changed by other means than upsert.
func lookup[T interface{ meta() *Meta }](ix **listIndex, list []T, k objKey) (int, bool) {
	if idx := *ix; idx != nil {
		if n, first := identity(list); n == idx.n && first == idx.first {
			i, ok := idx.pos[k]
			if !ok {
				return 0, false
			}
			if keyOf(list[i].meta()) == k {
				return i, true
			}
		}
	}
	idx := &listIndex{pos: make(map[objKey]int, len(list))}
	for i, o := range list {
		if _, dup := idx.pos[keyOf(o.meta())]; !dup {
			idx.pos[keyOf(o.meta())] = i
		}
	}
	idx.n, idx.first = identity(list)
	*ix = idx
	i, ok := idx.pos[k]
	return i, ok
}

// identity returns the length of a list and the address of its first element.
func identity[T any](list []T) (int, any) {
	if len(list) == 0 {
		return 0, nil
	}
	return len(list), &list[0]
}

func (inv *Inventory) stamp(m *Meta) {
	if m.Created.IsZero() {
		m.Created = inv.nextCreated()
	}
}

// decodeKube decodes a Kubernetes object; ok is false for objects meshscope
// does not keep (ConfigMaps other than `istio`).
func decodeKube(kind string, js []byte, src string) (object, bool, error) {
	switch kind {
	case "Namespace":
		var o corev1.Namespace
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, false, err
		}
		m := meta(kind, "v1", o.ObjectMeta, src)
		m.Namespace = ""
		if o.Name == "" {
			return object{}, false, errors.New("metadata.name is empty")
		}
		return object{namespace: &Namespace{Meta: m}}, true, nil
	case "Service":
		var o corev1.Service
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, false, err
		}
		if o.Name == "" {
			return object{}, false, errors.New("metadata.name is empty")
		}
		DefaultService(&o.Spec)
		return object{service: &Service{Meta: meta(kind, "v1", o.ObjectMeta, src), Spec: o.Spec}}, true, nil
	case "ConfigMap":
		var o corev1.ConfigMap
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, false, err
		}
		if o.Name == "istio-sidecar-injector" {
			c, err := parseInjectorConfig(o.Data["config"])
			if err != nil {
				return object{}, false, fmt.Errorf("data.config: %w", err)
			}
			c.Source = src
			return object{injector: &c}, true, nil
		}
		if o.Name != "istio" {
			return object{}, false, nil
		}
		settings, err := ParseMeshConfig(o.Data["mesh"])
		if err != nil {
			return object{}, false, fmt.Errorf("data.mesh: %w", err)
		}
		settings.Source = src
		return object{mesh: &settings}, true, nil
	case "Pod":
		var o corev1.Pod
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, false, err
		}
		w := &Workload{Meta: meta(kind, "v1", o.ObjectMeta, src), PodLabels: o.Labels, PodAnnotations: o.Annotations,
			Ports: containerPorts(o.Spec), PodIP: o.Status.PodIP, HostNetwork: o.Spec.HostNetwork,
			Owner: controllerOf(o.ObjectMeta), GenerateName: o.GenerateName, Phase: string(o.Status.Phase),
			NotReady: o.Status.Phase != "" && !podReady(o.Status), Terminating: o.DeletionTimestamp != nil}
		w.Proxy, w.Router = proxyContainer(o.Spec)
		w.CredentialSocket = credentialSocket(o.Spec)
		return object{workload: w}, true, nil
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
				return object{}, false, err
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "StatefulSet":
			var o appsv1.StatefulSet
			if err := json.Unmarshal(js, &o); err != nil {
				return object{}, false, err
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "DaemonSet":
			var o appsv1.DaemonSet
			if err := json.Unmarshal(js, &o); err != nil {
				return object{}, false, err
			}
			om, tpl = o.ObjectMeta, o.Spec.Template
		case "ReplicaSet":
			var o appsv1.ReplicaSet
			if err := json.Unmarshal(js, &o); err != nil {
				return object{}, false, err
			}
			om, tpl, replicas = o.ObjectMeta, o.Spec.Template, o.Spec.Replicas
		case "Job":
			var o batchv1.Job
			if err := json.Unmarshal(js, &o); err != nil {
				return object{}, false, err
			}
			om, tpl, replicas, gv = o.ObjectMeta, o.Spec.Template, o.Spec.Parallelism, "batch/v1"
		case "CronJob":
			var o batchv1.CronJob
			if err := json.Unmarshal(js, &o); err != nil {
				return object{}, false, err
			}
			om, tpl, replicas, gv = o.ObjectMeta, o.Spec.JobTemplate.Spec.Template, o.Spec.JobTemplate.Spec.Parallelism, "batch/v1"
		}
		w := &Workload{Meta: meta(kind, gv, om, src), Replicas: replicas, Owner: controllerOf(om)}
		setTemplate(w, tpl)
		return object{workload: w}, true, nil
	}
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

func decodeIstio(kind string, js []byte, src string) (object, error) {
	switch kind {
	case "ServiceEntry":
		var o networkingv1.ServiceEntry
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, err
		}
		return object{serviceEntry: &ServiceEntry{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}}, nil
	case "DestinationRule":
		var o networkingv1.DestinationRule
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, err
		}
		return object{destinationRule: &DestinationRule{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}}, nil
	case "VirtualService":
		var o networkingv1.VirtualService
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, err
		}
		return object{virtualService: &VirtualService{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}}, nil
	default: // Sidecar
		var o networkingv1.Sidecar
		if err := json.Unmarshal(js, &o); err != nil {
			return object{}, err
		}
		return object{sidecar: &Sidecar{Meta: meta(kind, o.APIVersion, o.ObjectMeta, src), Spec: &o.Spec}}, nil
	}
}

// ParseSidecar parses one Sidecar manifest (YAML).
func ParseSidecar(source string, data []byte) (*Sidecar, error) {
	scs, err := ParseSidecars(source, data)
	if err != nil {
		return nil, err
	}
	if len(scs) != 1 {
		return nil, fmt.Errorf("%s: expected exactly one networking.istio.io Sidecar, found %d", source, len(scs))
	}
	return scs[0], nil
}

// ParseSidecars parses the Sidecars of a multi-document YAML stream, as a file("sidecars.yaml")
// holds them. A document that is not a Sidecar is an error naming it; a later Sidecar with the
// namespace and name of an earlier one replaces it, as in the inventory.
func ParseSidecars(source string, data []byte) ([]*Sidecar, error) {
	docs, err := SplitDocuments(source, data)
	if err != nil {
		return nil, err
	}
	tmp := New()
	for _, d := range docs {
		objs, err := decodeDocument(source, d)
		if err != nil {
			return nil, err
		}
		if len(objs) == 0 && len(bytes.TrimSpace(d.Data)) > 0 && !onlyComments(d.Data) {
			return nil, &DocumentError{Source: source, Index: d.Index, Line: d.Line,
				Err: errors.New("the document is not a networking.istio.io Sidecar: give only Sidecar manifests here")}
		}
		for _, o := range objs {
			if o.sidecar == nil {
				m := o.meta()
				return nil, &DocumentError{Source: source, Index: d.Index, Line: d.Line, Kind: m.Kind, Name: m.Name,
					Err: fmt.Errorf("a %s is not a Sidecar: give only Sidecar manifests here", m.Kind)}
			}
			tmp.add(o)
		}
	}
	return tmp.Sidecars, nil
}

// onlyComments reports whether a YAML document holds nothing but comments and blank lines.
func onlyComments(doc []byte) bool {
	for _, l := range bytes.Split(doc, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// decodeRollout reads an Argo Rollout: Istio names its Pods after it (the ReplicaSets carry
// rollouts-pod-template-hash). Its pods come from spec.template, or, with spec.workloadRef,
// from the template of the Deployment it names (resolveWorkloadRefs).
func decodeRollout(js []byte, src string) (object, error) {
	var o struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			Replicas    *int32                 `json:"replicas"`
			Template    corev1.PodTemplateSpec `json:"template"`
			WorkloadRef *struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"workloadRef"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(js, &o); err != nil {
		return object{}, err
	}
	tpl := o.Spec.Template
	w := &Workload{Meta: meta("Rollout", "argoproj.io/v1alpha1", o.Metadata, src), Replicas: o.Spec.Replicas, Owner: controllerOf(o.Metadata)}
	if ref := o.Spec.WorkloadRef; ref != nil {
		if ref.Kind != "Deployment" || ref.Name == "" {
			return object{}, fmt.Errorf("spec.workloadRef names %s %q: meshscope reads a Rollout's pods from its template or from a Deployment's", ref.Kind, ref.Name)
		}
		w.TemplateRef = ref.Name
	}
	setTemplate(w, tpl)
	return object{workload: w}, nil
}

// setTemplate sets what a controller's pod template says of its pods.
func setTemplate(w *Workload, tpl corev1.PodTemplateSpec) {
	w.PodLabels, w.PodAnnotations, w.Ports, w.HostNetwork = tpl.Labels, tpl.Annotations, containerPorts(tpl.Spec), tpl.Spec.HostNetwork
	w.Proxy, w.Router = proxyContainer(tpl.Spec)
	w.Image, w.CredentialSocket = mainImage(tpl.Spec), credentialSocket(tpl.Spec)
}

// copyTemplate gives w the fields setTemplate set on from: the same pods.
func copyTemplate(w, from *Workload) {
	w.PodLabels, w.PodAnnotations, w.Ports, w.HostNetwork = from.PodLabels, from.PodAnnotations, from.Ports, from.HostNetwork
	w.Proxy, w.Router = from.Proxy, from.Router
	w.Image, w.CredentialSocket = from.Image, from.CredentialSocket
}

// resolveWorkloadRefs gives a Rollout with spec.workloadRef the pod template of the Deployment
// it names, whichever of the two the inventory got first.
func (inv *Inventory) resolveWorkloadRefs(w *Workload) {
	switch {
	case w.TemplateRef != "":
		inv.workloadRefs = append(inv.workloadRefs, w)
		for _, o := range inv.Workloads {
			if o.Kind == "Deployment" && o.Namespace == w.Namespace && o.Name == w.TemplateRef {
				copyTemplate(w, o)
			}
		}
	case w.Kind == "Deployment":
		for i, r := range inv.workloadRefs {
			if r.Namespace == w.Namespace && r.TemplateRef == w.Name {
				// A copy: a Clone of the inventory shares the Rollout loaded before.
				c := *r
				copyTemplate(&c, w)
				inv.workloadRefs[i] = &c
				inv.Workloads = upsert(inv.Workloads, &c, &inv.pos.workloads)
			}
		}
	}
}

// podReady reports whether a Pod's Ready condition is True, as Kubernetes' IsPodReady does.
func podReady(st corev1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
