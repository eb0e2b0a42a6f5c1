// Package adopt plans workload scopes from observed traffic: for each workload of the
// inventory that made calls, one scope whose dependencies are the destinations it called,
// with a selector that selects exactly it, checked with the compiler as the provider will
// check it. A workload a Sidecar of the inventory already selects is given that Sidecar's
// scope, adopted. It is the domain of the suggest command, which only writes the plan out;
// it imports nothing from Terraform.
package adopt

import (
	"cmp"
	"slices"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// Options are the settings of a plan.
type Options struct {
	// Scope are the compiler's settings: every planned scope is compiled with them, as the
	// provider compiles it. Their IstioVersion and DomainSuffix also set the predictor that
	// tells which Sidecar governs a workload today.
	Scope scope.Options
	// Import asks for an import block for each Sidecar of the inventory a scope adopts
	// (Scope.Import); without it, the scope adopts the Sidecar under its name and says to drop
	// its manifest.
	Import bool
	// Namespaces limits the plan to the workloads of these namespaces; none means every
	// namespace.
	Namespaces []string
}

// Scope is one planned meshscope_workload_scope.
type Scope struct {
	// Resource is the Terraform resource name, unique in the plan (see resourceName).
	Resource  string
	Namespace string
	// Name is the Sidecar's name when it must be given: an adopted Sidecar's, or one that the
	// selector's default name would make clash. "" takes the default.
	Name     string
	Selector map[string]string
	// Dependencies are the observed destinations the compiler accepts, sorted by service.
	Dependencies []Dependency
	// Ingress and OutboundTrafficPolicy are an adopted Sidecar's, kept as they are.
	Ingress               []scope.Ingress
	OutboundTrafficPolicy string
	// Adopts is "namespace/name" of the Sidecar of the inventory the scope adopts, or "".
	Adopts string
	// Import says to write an import block for Adopts.
	Import bool
	// Workloads are the calling workloads the scope governs, "namespace/Kind/name", the one it
	// is named after first.
	Workloads []string
	// Header are comment lines above the scope: whom it governs and why it is as it is. Notes
	// are comment lines at its end: the calls not planned as dependencies and what to add for
	// them.
	Header []string
	Notes  []string
}

// Dependency is a planned dependency with the evidence behind it.
type Dependency struct {
	traffic.Dependency
	// Evidence is the count of calls over the window ("1,204 requests over 7d"), and whether
	// they go through PassthroughCluster today.
	Evidence string
}

// Declaration is the scope as the provider compiles it.
func (s *Scope) Declaration() scope.Declaration {
	d := scope.Declaration{Name: s.Name, Namespace: s.Namespace, Selector: s.Selector, Ingress: s.Ingress,
		OutboundTrafficPolicy: s.OutboundTrafficPolicy}
	for _, dep := range s.Dependencies {
		d.Dependencies = append(d.Dependencies, scope.Dependency{Service: dep.Service, Ports: dep.Ports})
	}
	return d
}

// WarningKind says what a Warning is about.
type WarningKind int

const (
	// Unlabelled: a calling workload without pod labels, which no Sidecar can select alone.
	// Workloads names it; it gets no scope.
	Unlabelled WarningKind = iota + 1
	// Inseparable: calling workloads whose labels overlap so that no selector drawn from them
	// selects them apart, nor together without more. Workloads names them; they get no scope.
	Inseparable
	// NotSuggested: the compiler refuses the scope (Problem; nil when it gave none), or it
	// selects a workload another Sidecar of the inventory selects. It is left out of the plan.
	NotSuggested
	// CompilerWarning: the compiler warns about the planned scope (Problem). It is planned,
	// with the warning in its notes.
	CompilerWarning
	// AdoptedConflict: the Sidecar the scope adopts already conflicts with another (Problem).
	AdoptedConflict
	// LeftOut: the compiler refuses an observed dependency (Dependency, Problem); the scope is
	// planned without it, with a note.
	LeftOut
)

// Warning is something the plan could not do as the evidence asks, as facts: each surface
// words it.
type Warning struct {
	Kind WarningKind
	// Resource is the resource name of the scope concerned, or "" (Unlabelled, Inseparable).
	Resource string
	// Workloads are the calling workloads concerned, "namespace/Kind/name" (Unlabelled,
	// Inseparable).
	Workloads []string
	// Dependency is the observed dependency left out, and Evidence the calls to it (LeftOut).
	Dependency string
	Evidence   string
	// Problem is the compiler's.
	Problem *scope.Problem
}

// Plan is the planned scopes of a mesh, or of one namespace.
type Plan struct {
	// Scopes are sorted by namespace, then resource name.
	Scopes   []Scope
	Warnings []Warning
	// Skipped counts the calling workloads that got no scope.
	Skipped int
}

// Planner plans the scopes of one inventory and its evidence, namespace by namespace, so that
// a caller can write a large mesh's plan as it goes. Resource names are unique over every
// namespace it plans: call Namespace once for each of Namespaces, in their order.
type Planner struct {
	inv    *mesh.Inventory
	pred   *predict.Predictor
	ev     *traffic.Evidence
	opts   Options
	domain string
	// byNs are the workloads of each namespace planned; order, those namespaces sorted.
	byNs     map[string][]*mesh.Workload
	order    []string
	registry map[string]bool // ServiceEntry hosts, exact
	wildcard []string        // ServiceEntry hosts "*.x"
	// resources are the Terraform resource names given so far.
	resources map[string]bool
	// compiling holds the parts of the inventory scope.Compile reads.
	compiling *scope.Index
}

// New indexes the inventory for planning scopes from the evidence. It fails only on options
// the predictor refuses (an Istio release it does not know).
func New(inv *mesh.Inventory, ev *traffic.Evidence, opts Options) (*Planner, error) {
	pred, err := predict.New(inv, predict.Options{IstioVersion: opts.Scope.IstioVersion, DomainSuffix: opts.Scope.DomainSuffix})
	if err != nil {
		return nil, err
	}
	p := &Planner{inv: inv, pred: pred, ev: ev, opts: opts, domain: cmp.Or(opts.Scope.DomainSuffix, mesh.DefaultDomainSuffix),
		byNs: map[string][]*mesh.Workload{}, registry: map[string]bool{}, resources: map[string]bool{}, compiling: scope.NewIndex(inv)}
	// Only workloads that run sidecars get scopes: a Sidecar configures nothing else (census).
	for _, cw := range pred.Census().Sidecars("") {
		w := cw.Mesh()
		if len(opts.Namespaces) > 0 && !slices.Contains(opts.Namespaces, w.Namespace) {
			continue
		}
		if _, ok := p.byNs[w.Namespace]; !ok {
			p.order = append(p.order, w.Namespace)
		}
		p.byNs[w.Namespace] = append(p.byNs[w.Namespace], w)
	}
	slices.Sort(p.order)
	for _, se := range inv.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			if istioconfig.IsWildcard(h) {
				p.wildcard = append(p.wildcard, h)
			} else {
				p.registry[h] = true
			}
		}
	}
	return p, nil
}

// Namespaces are the namespaces to plan, sorted: those of the inventory's workloads that the
// options keep.
func (p *Planner) Namespaces() []string { return slices.Clone(p.order) }

// Suggest plans every namespace at once: New, then Namespace for each of Namespaces.
func Suggest(inv *mesh.Inventory, ev *traffic.Evidence, opts Options) (*Plan, error) {
	p, err := New(inv, ev, opts)
	if err != nil {
		return nil, err
	}
	out := &Plan{}
	for _, ns := range p.order {
		np := p.Namespace(ns)
		out.Scopes = append(out.Scopes, np.Scopes...)
		out.Warnings = append(out.Warnings, np.Warnings...)
		out.Skipped += np.Skipped
	}
	return out, nil
}
