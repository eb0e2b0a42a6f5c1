package cli

import (
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshscope/terraform-provider-meshscope/internal/istioconfig"
	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
	"github.com/meshscope/terraform-provider-meshscope/internal/predict"
	"github.com/meshscope/terraform-provider-meshscope/internal/scope"
	"github.com/meshscope/terraform-provider-meshscope/internal/traffic"
)

// scopeSuggestion is one suggested meshscope_workload_scope, ready to write.
type scopeSuggestion struct {
	// Resource is the Terraform resource name, unique in the output.
	Resource  string
	Namespace string
	// Name is the Sidecar's name when it must be given: an adopted Sidecar's, or one that the
	// selector's default name would make clash. "" takes the default.
	Name     string
	Selector map[string]string
	Deps     []suggestedDep
	// Ingress and OutboundTrafficPolicy are an adopted Sidecar's, kept as they are.
	Ingress               []scope.Ingress
	OutboundTrafficPolicy string
	// Adopts is "namespace/name" of the Sidecar of the inventory the scope adopts, or "".
	Adopts string
	// Import is Adopts when an import block is to be written.
	Import string
	// Header are comment lines above the block; Notes, comment lines at its end: the calls
	// not suggested as dependencies and what to add for them.
	Header []string
	Notes  []string
}

// suggestedDep is a dependency with the comment that gives its evidence.
type suggestedDep struct {
	traffic.Dependency
	Comment string
}

// declaration is the scope as the provider compiles it.
func (s *scopeSuggestion) declaration() scope.Declaration {
	d := scope.Declaration{Name: s.Name, Namespace: s.Namespace, Selector: s.Selector, Ingress: s.Ingress,
		OutboundTrafficPolicy: s.OutboundTrafficPolicy}
	for _, dep := range s.Deps {
		d.Dependencies = append(d.Dependencies, scope.Dependency{Service: dep.Service, Ports: dep.Ports})
	}
	return d
}

// Summaries of the compiler's problems that suggest mends rather than reports.
const (
	summaryWidens     = "Dependency Widens Every Port"
	summaryPortAbsent = "Port Not Exposed"
)

// noteLimit is the most comment lines a block lists for calls it does not suggest, and for
// the workloads and dropped hosts it names; the counts are always full.
const noteLimit = 25

// planner turns the calls of each namespace's workloads into scope suggestions.
type planner struct {
	inv      *mesh.Inventory
	pred     *predict.Predictor
	ev       *traffic.Evidence
	opts     scope.Options
	domain   string
	imports  bool
	stderr   io.Writer
	registry map[string]bool // ServiceEntry hosts, exact
	wildcard []string        // ServiceEntry hosts "*.x"
	// resources are the Terraform resource names given so far.
	resources map[string]bool
	// compiling holds the parts of the inventory scope.Compile reads.
	compiling *scope.Index
	// nsInv is the inventory of the namespace being planned (its Sidecars and workloads),
	// for scope.Conflicts.
	nsInv *mesh.Inventory
	// skipped counts the calling workloads that got no scope.
	skipped int
}

func newPlanner(inv *mesh.Inventory, pred *predict.Predictor, ev *traffic.Evidence, opts scope.Options, imports bool, stderr io.Writer) *planner {
	p := &planner{inv: inv, pred: pred, ev: ev, opts: opts, domain: opts.DomainSuffix, imports: imports, stderr: stderr,
		registry: map[string]bool{}, resources: map[string]bool{}, compiling: scope.NewIndex(inv)}
	for _, se := range inv.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			if istioconfig.IsWildcard(h) {
				p.wildcard = append(p.wildcard, h)
			} else {
				p.registry[h] = true
			}
		}
	}
	return p
}

// warnf reports a problem of one workload's suggestion on stderr.
func (p *planner) warnf(format string, a ...any) {
	fmt.Fprintf(p.stderr, "warning: "+format+"\n", a...)
}

// member is a calling workload and its calls.
type member struct {
	w     *mesh.Workload
	idx   int // in the namespace's list
	calls []traffic.Call
}

func (m member) id() string { return m.w.Namespace + "/" + m.w.Kind + "/" + m.w.Name }

// group is the calling workloads one scope governs.
type group struct {
	members []member
	// selected are the workloads of the namespace the scope's selector selects.
	selected []int
	selector map[string]string
	adopt    *mesh.Sidecar
	// fallback is the Sidecar that governs the workloads today when it does not select them
	// (a namespace or mesh-wide default), which the scope takes precedence over.
	fallback *mesh.Sidecar
}

// namespace returns the suggestions for the calling workloads of one namespace, sorted by
// resource name. workloads are the namespace's workloads of the inventory.
func (p *planner) namespace(ns string, workloads []*mesh.Workload) []scopeSuggestion {
	slices.SortStableFunc(workloads, func(a, b *mesh.Workload) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	ix := newNSWorkloads(workloads)
	p.nsInv = mesh.New()
	p.nsInv.Workloads = workloads
	for _, sc := range p.inv.Sidecars {
		if sc.Namespace == ns {
			p.nsInv.Sidecars = append(p.nsInv.Sidecars, sc)
		}
	}
	adopted := map[*mesh.Sidecar]*group{}
	var fresh []member
	fallback := map[int]*mesh.Sidecar{}
	for i, w := range workloads {
		calls := p.ev.Calls(ns, w.Name)
		if len(calls) == 0 {
			continue
		}
		m := member{w: w, idx: i, calls: calls}
		gov := p.pred.SidecarFor(predict.Proxy{Namespace: ns, Labels: w.PodLabels})
		if gov != nil && gov.Namespace == ns && gov.Spec.GetWorkloadSelector() != nil {
			g := adopted[gov]
			if g == nil {
				g = &group{adopt: gov, selector: gov.Spec.GetWorkloadSelector().GetLabels()}
				g.selected = ix.selected(g.selector)
				adopted[gov] = g
			}
			g.members = append(g.members, m)
			continue
		}
		if len(w.PodLabels) == 0 {
			p.skipped++
			p.warnf("%s has no pod labels, so no Sidecar can select it alone (an empty selector is the namespace default); label its pods, then run suggest again", m.id())
			continue
		}
		fallback[i] = gov
		fresh = append(fresh, m)
	}

	var groups []*group
	for _, g := range adopted {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *group) int { return strings.Compare(a.adopt.Name, b.adopt.Name) })
	groups = append(groups, p.freshGroups(ix, fresh, fallback)...)

	// Sidecar names taken in the namespace: every Sidecar of the inventory (a scope of the same
	// name would replace it), then each suggestion's.
	taken := map[string]bool{}
	for _, sc := range p.inv.Sidecars {
		if sc.Namespace == ns {
			taken[sc.Name] = true
		}
	}
	var out []scopeSuggestion
	for _, g := range groups {
		s, ok := p.suggest(ns, ix, g, taken)
		if ok {
			out = append(out, s)
		} else {
			p.skipped += len(g.members)
		}
	}
	slices.SortFunc(out, func(a, b scopeSuggestion) int { return strings.Compare(a.Resource, b.Resource) })
	return out
}

// freshGroups groups the calling workloads that no selecting Sidecar governs: each with the
// workloads a selector drawn from its labels cannot leave out. Two callers whose selections
// share a workload share a scope (two scopes must never select one workload), selected by the
// member whose selection covers the others'.
func (p *planner) freshGroups(ix *nsWorkloads, fresh []member, fallback map[int]*mesh.Sidecar) []*group {
	parent := make([]int, len(fresh))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	tight := make([][]int, len(fresh))
	owner := map[int]int{} // workload index -> the first caller whose selection holds it
	for i, m := range fresh {
		tight[i] = ix.selected(m.w.PodLabels)
		for _, w := range tight[i] {
			if j, ok := owner[w]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[w] = i
			}
		}
	}
	components := map[int][]int{}
	var roots []int
	for i := range fresh {
		r := find(i)
		if _, ok := components[r]; !ok {
			roots = append(roots, r)
		}
		components[r] = append(components[r], i)
	}
	slices.Sort(roots)
	var out []*group
	for _, r := range roots {
		comp := components[r]
		var union []int
		for _, i := range comp {
			union = append(union, tight[i]...)
		}
		slices.Sort(union)
		union = slices.Compact(union)
		// The member with the fewest labels whose own selection covers the union selects all.
		lead := -1
		for _, i := range comp {
			if len(tight[i]) == len(union) && (lead < 0 || len(fresh[i].w.PodLabels) < len(fresh[lead].w.PodLabels)) {
				lead = i
			}
		}
		g := &group{}
		for _, i := range comp {
			g.members = append(g.members, fresh[i])
		}
		if lead < 0 {
			var ids []string
			for _, m := range g.members {
				ids = append(ids, m.id())
			}
			p.skipped += len(g.members)
			p.warnf("no selector drawn from pod labels selects %s apart, and none selects them together without more: "+
				"their labels overlap (each has labels the others lack, and a workload has all of them). "+
				"Give them distinguishing labels, or declare their scopes by hand", quoteList(ids))
			continue
		}
		g.selected = union
		g.selector = ix.chooseSelector(fresh[lead].w.PodLabels, len(union))
		g.fallback = fallback[fresh[lead].idx]
		// The lead first: the scope is named after it.
		slices.SortStableFunc(g.members, func(a, b member) int {
			return boolRank(a.idx != fresh[lead].idx) - boolRank(b.idx != fresh[lead].idx)
		})
		out = append(out, g)
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// suggest builds one group's scope and checks it with the compiler, as the provider will.
func (p *planner) suggest(ns string, ix *nsWorkloads, g *group, taken map[string]bool) (scopeSuggestion, bool) {
	lead := g.members[0]
	s := scopeSuggestion{Namespace: ns, Selector: g.selector}
	var calls []traffic.Call
	for _, m := range g.members {
		calls = append(calls, m.calls...)
	}
	var ids []string
	for _, m := range g.members {
		ids = append(ids, m.id())
	}
	s.Header = append(s.Header, fmt.Sprintf("%s: the calls observed over %s.", strings.Join(capped(ids, noteLimit), ", "), p.ev.Window))
	if len(g.members) > 1 {
		s.Header = append(s.Header, "One scope for these workloads: a selector that selects one of them selects the others too, and two scopes must never select one workload.")
	}
	base := lead.w.Name
	if g.adopt != nil {
		sc := g.adopt
		base = sc.Name
		s.Name = sc.Name
		s.Adopts = ns + "/" + sc.Name
		decl, _ := scope.Decompile(sc, p.opts, p.inv.Mesh.RootNamespace)
		s.Ingress, s.OutboundTrafficPolicy = decl.Ingress, decl.OutboundTrafficPolicy
		if p.imports {
			s.Import = s.Adopts
			s.Header = append(s.Header, fmt.Sprintf("Adopts the existing Sidecar %s/%s (%s): the import block takes it over, reading it from the cluster "+
				"(the provider's kubernetes block) or, offline, from the provider's manifests.", ns, sc.Name, sc.Source))
		} else {
			s.Header = append(s.Header, fmt.Sprintf("Adopts the existing Sidecar %s/%s (%s) under its name: drop its manifest from the provider's manifests, "+
				"or import it (id = %q).", ns, sc.Name, sc.Source, s.Adopts))
		}
		if dropped := droppedDependencies(decl, calls, ns, p.domain); len(dropped) > 0 {
			s.Header = append(s.Header, fmt.Sprintf("It imports today, and this scope drops (no calls over %s; keep any that serve rarer calls, such as a monthly job): %s.",
				p.ev.Window, quoteList(dropped)))
		}
	} else {
		s.Name = p.sidecarName(g, lead, taken)
		if fb := g.fallback; fb != nil {
			what := "namespace default"
			if fb.Namespace != ns {
				what = "mesh-wide default"
			}
			s.Header = append(s.Header, fmt.Sprintf("Takes precedence over the %s Sidecar %s/%s, which governs %s today.", what, fb.Namespace, fb.Name, them(len(g.members))))
		}
	}
	name := s.Name
	if name == "" {
		name = scope.DefaultName(s.Selector)
	}
	taken[name] = true
	if others := alsoSelected(ix, g); len(others) > 0 {
		s.Header = append(s.Header, fmt.Sprintf("Also selects, without calls observed: %s.", quoteList(others)))
	}
	s.Resource = p.resourceName(ns, base)

	if !p.check(&s, calls) {
		return s, false
	}
	s.Notes = p.notes(g, s.Notes)
	return s, true
}

// check compiles the scope as the provider will and mends what the compiler refuses: a
// dependency it cannot resolve or export to the namespace becomes a note with the compiler's
// reason; ports it cannot scope by (a port the destination does not expose, a number also used
// by UDP) are left out for every dependency. Other warnings are reported. A scope that still
// fails, or that selects a workload another Sidecar of the inventory selects, is not suggested.
func (p *planner) check(s *scopeSuggestion, calls []traffic.Call) bool {
	refused := map[string]scope.Problem{}
	portless := false
	for attempt := 0; ; attempt++ {
		s.Deps = p.dependencies(calls, refused, portless)
		decl := s.declaration()
		res, problems := scope.Compile(p.compiling.Inventory(decl), decl, p.opts)
		retry := false
		var fatal, warns []scope.Problem
		for _, pb := range problems {
			dep := pb.Attribute == scope.AttrDependencies && pb.Index >= 0 && pb.Index < len(s.Deps)
			switch {
			case dep && !portless && (pb.Summary == summaryWidens || pb.Summary == summaryPortAbsent):
				portless, retry = true, true
				s.Header = append(s.Header, fmt.Sprintf("No dependency lists ports, as the compiler would not scope %q by port: %s", s.Deps[pb.Index].Service, pb.Detail))
			case dep && !pb.Warning:
				refused[s.Deps[pb.Index].Service] = pb
				retry = true
			case pb.Warning:
				warns = append(warns, pb)
			default:
				fatal = append(fatal, pb)
			}
		}
		if len(fatal) > 0 || (res == nil && !retry) || attempt > len(calls)+2 {
			for _, pb := range fatal {
				p.warnf("%s: not suggested: %s: %s", s.Resource, pb.Summary, pb.Detail)
			}
			if len(fatal) == 0 {
				p.warnf("%s: not suggested: the compiler refused it", s.Resource)
			}
			return false
		}
		if retry {
			continue
		}
		for _, pb := range warns {
			p.warnf("%s: %s: %s", s.Resource, pb.Summary, pb.Detail)
			s.Notes = append(s.Notes, fmt.Sprintf("Warning: %s: %s", pb.Summary, pb.Detail))
		}
		for _, pb := range scope.Conflicts(p.nsInv, res.Sidecar) {
			if s.Adopts == "" {
				p.warnf("%s: not suggested: %s: %s", s.Resource, pb.Summary, pb.Detail)
				return false
			}
			// An adopted Sidecar that overlaps another already does so in the mesh today.
			p.warnf("%s: the Sidecar it adopts already conflicts: %s: %s", s.Resource, pb.Summary, pb.Detail)
			s.Notes = append(s.Notes, fmt.Sprintf("Warning: %s: %s", pb.Summary, pb.Detail))
		}
		for _, svc := range sortedKeysOf(refused) {
			pb := refused[svc]
			var of []traffic.Call
			for _, c := range calls {
				if c.Dependency() == svc {
					of = append(of, c)
				}
			}
			evidence := ""
			if deps := traffic.Dependencies(of); len(deps) == 1 {
				evidence = deps[0].CountPhrase(p.ev.Window)
				if slices.ContainsFunc(of, func(c traffic.Call) bool { return c.Passthrough }) {
					evidence += ", through PassthroughCluster today"
				}
				evidence = " (" + evidence + ")"
			}
			p.warnf("%s: the observed dependency %q%s is left out: %s: %s", s.Resource, svc, evidence, pb.Summary, pb.Detail)
			s.Notes = append(s.Notes, fmt.Sprintf("%s%s is left out: %s: %s", svc, evidence, pb.Summary, pb.Detail))
		}
		return true
	}
}

// dependencies are the calls' dependencies, less those refused, each with its evidence.
func (p *planner) dependencies(calls []traffic.Call, refused map[string]scope.Problem, portless bool) []suggestedDep {
	kept := calls
	if len(refused) > 0 {
		kept = nil
		for _, c := range calls {
			if _, ok := refused[c.Dependency()]; !ok {
				kept = append(kept, c)
			}
		}
	}
	passthrough := map[string]bool{}
	for _, c := range kept {
		if c.Passthrough && c.Dependency() != "" {
			passthrough[c.Dependency()] = true
		}
	}
	var out []suggestedDep
	for _, d := range traffic.Dependencies(kept) {
		if portless {
			d.Ports = nil
		}
		comment := d.CountPhrase(p.ev.Window)
		if passthrough[d.Service] {
			comment += ", through PassthroughCluster today"
		}
		out = append(out, suggestedDep{Dependency: d, Comment: comment})
	}
	return out
}

// notes says, for every call that is not a dependency, what it is and what to add for it.
func (p *planner) notes(g *group, notes []string) []string {
	var lines []string
	for _, m := range g.members {
		prefix := ""
		if len(g.members) > 1 {
			prefix = m.w.Name + ": "
		}
		for _, c := range m.calls {
			if c.Dependency() != "" {
				continue
			}
			what := c.Describe(p.ev.Window)
			var line string
			switch c.Class {
			case traffic.ClassPassthrough:
				switch {
				case c.Host == "":
					line = fmt.Sprintf("%s went through PassthroughCluster to an address Istio could not name: find the destination (the proxy's access log names it) and add a ServiceEntry for it.", what)
				case net.ParseIP(c.Host) != nil:
					line = fmt.Sprintf("%s went through PassthroughCluster: add a ServiceEntry whose addresses hold %s, with the host name it serves.", what, c.Host)
				default:
					line = fmt.Sprintf("%s went through PassthroughCluster: %s is not in the registry; add a ServiceEntry for it (mTLS origination, routing and telemetry; REGISTRY_ONLY would block it).", what, c.Host)
				}
			case traffic.ClassBlackHole:
				if dep := p.registryDependency(c); dep != "" {
					line = fmt.Sprintf("%s were dropped (BlackHoleCluster): %s is in the registry; if the workload needs it, add { service = %q }.", what, c.Host, dep)
				} else {
					line = fmt.Sprintf("%s were dropped (BlackHoleCluster): %s is not in the registry; if the workload needs it, add a ServiceEntry for it.", what, orUnnamed(c.Host))
				}
			case traffic.ClassUnknown:
				line = fmt.Sprintf("%s: the inventory does not hold %s; give its manifests with -f and run suggest again.", what, c.Host)
			default:
				continue
			}
			lines = append(lines, prefix+line)
		}
	}
	if len(lines) > noteLimit {
		lines = append(lines[:noteLimit], fmt.Sprintf("... and %d more calls not suggested.", len(lines)-noteLimit))
	}
	return append(notes, lines...)
}

func orUnnamed(h string) string {
	if h == "" {
		return "the address"
	}
	return h
}

// registryDependency is the dependency that would import the host of a call the registry
// holds (a Kubernetes Service or a ServiceEntry host), or "".
func (p *planner) registryDependency(c traffic.Call) string {
	if c.Service != "" {
		return c.Service
	}
	if p.registry[c.Host] {
		return c.Host
	}
	for _, w := range p.wildcard {
		if istioconfig.HostSubsetOf(c.Host, w) {
			return c.Host
		}
	}
	return ""
}

// sidecarName is "" when the default name of the group's selector is free in the namespace,
// else the lead workload's name (or that with a suffix): a scope must never take the name of a
// Sidecar it does not adopt, since it would replace it.
func (p *planner) sidecarName(g *group, lead member, taken map[string]bool) string {
	if def := scope.DefaultName(g.selector); !taken[def] {
		return ""
	}
	for i := 1; ; i++ {
		name := lead.w.Name
		if i > 1 {
			name = fmt.Sprintf("%s-scope-%d", lead.w.Name, i)
		}
		if len(validation.IsDNS1123Subdomain(name)) == 0 && !taken[name] {
			return name
		}
	}
}

// resourceName is a Terraform resource name for the scope: "<namespace>_<name>" with every
// character Terraform does not take in a name replaced by "_", unique in the output.
func (p *planner) resourceName(ns, name string) string {
	var b strings.Builder
	for _, r := range ns + "_" + name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if c := base[0]; c >= '0' && c <= '9' || c == '-' {
		base = "_" + base
	}
	out := base
	for i := 2; p.resources[out]; i++ {
		out = fmt.Sprintf("%s_%d", base, i)
	}
	p.resources[out] = true
	return out
}

// droppedDependencies are the dependencies of an adopted Sidecar that no observed call matches.
func droppedDependencies(decl scope.Declaration, calls []traffic.Call, ns, domain string) []string {
	var out []string
	for _, d := range decl.Dependencies {
		used := false
		for _, c := range calls {
			if c.Matches(d.Service, d.Ports, ns, domain) {
				used = true
				break
			}
		}
		if !used {
			out = append(out, d.Service)
		}
	}
	return out
}

// alsoSelected are the workloads the scope selects that made no calls it governs.
func alsoSelected(ix *nsWorkloads, g *group) []string {
	members := map[int]bool{}
	for _, m := range g.members {
		members[m.idx] = true
	}
	var out []string
	for _, i := range g.selected {
		if !members[i] {
			w := ix.list[i]
			out = append(out, w.Namespace+"/"+w.Kind+"/"+w.Name)
		}
	}
	return out
}

// capped is the first n of l.
func capped(l []string, n int) []string {
	if len(l) > n {
		return append(slices.Clone(l[:n]), fmt.Sprintf("and %d more", len(l)-n))
	}
	return l
}

// quoteList joins at most noteLimit names, then counts the rest.
func quoteList(l []string) string { return strings.Join(capped(l, noteLimit), ", ") }

// sortedKeysOf is the keys of m, sorted.
func sortedKeysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
