// Package xdsprobe connects to istiod as if it were a sidecar's Envoy and reports the CDS clusters
// istiod pushes to it. It speaks state-of-the-world ADS over plaintext gRPC (istiod's port 15010),
// sending the node metadata istio-agent would send, so istiod builds the proxy exactly as it would
// for a real pod: it finds the Pod by IP, selects its Sidecar and computes its service targets.
//
// It is a test helper: only tests import it, never the provider binary.
package xdsprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// The type URLs of the resources a probe subscribes to: CDS, LDS, RDS and EDS.
const (
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	ListenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// Proxy describes the sidecar the probe pretends to be. Namespace, Name and IP are required.
type Proxy struct {
	Namespace string
	Name      string // the pod name
	IP        string
	Labels    map[string]string
	// Optional; the defaults are those of a pod in the default Kubernetes cluster of a default install.
	ServiceAccount string            // "default"
	ClusterID      string            // the ControlPlane's ClusterID, else "Kubernetes"
	IstioVersion   string            // "1.31.0"
	DomainSuffix   string            // "cluster.local"
	PodPorts       []PodPort         // the pod's container ports, for istiod's fallback service targets
	Metadata       map[string]string // extra string metadata, e.g. {"INTERCEPTION_MODE": "TPROXY"}
}

// PodPort is one container port, as istio-agent reports it in POD_PORTS.
type PodPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

// NodeID is the Envoy node id of a sidecar: sidecar~<IP>~<pod>.<ns>~<ns>.svc.<domain>.
func (p Proxy) NodeID() string {
	return fmt.Sprintf("sidecar~%s~%s.%s~%s.svc.%s", p.IP, p.Name, p.Namespace, p.Namespace, or(p.DomainSuffix, "cluster.local"))
}

func (p Proxy) node() (*corev3.Node, error) {
	if p.Namespace == "" || p.Name == "" || p.IP == "" {
		return nil, errors.New("xdsprobe: Proxy needs Namespace, Name and IP")
	}
	labels := map[string]any{}
	for k, v := range p.Labels {
		labels[k] = v
	}
	meta := map[string]any{
		"NAMESPACE":         p.Namespace,
		"NAME":              p.Name,
		"LABELS":            labels,
		"INSTANCE_IPS":      p.IP,
		"ISTIO_VERSION":     or(p.IstioVersion, "1.31.0"),
		"CLUSTER_ID":        or(p.ClusterID, "Kubernetes"),
		"MESH_ID":           or(p.DomainSuffix, "cluster.local"),
		"SERVICE_ACCOUNT":   or(p.ServiceAccount, "default"),
		"INTERCEPTION_MODE": "REDIRECT",
		"WORKLOAD_NAME":     p.Name,
		"OWNER":             fmt.Sprintf("kubernetes://apis/v1/namespaces/%s/pods/%s", p.Namespace, p.Name),
	}
	if len(p.PodPorts) > 0 {
		b, err := json.Marshal(p.PodPorts)
		if err != nil {
			return nil, err
		}
		meta["POD_PORTS"] = string(b)
	}
	for k, v := range p.Metadata {
		meta[k] = v
	}
	st, err := structpb.NewStruct(meta)
	if err != nil {
		return nil, fmt.Errorf("xdsprobe: node metadata: %w", err)
	}
	return &corev3.Node{Id: p.NodeID(), Cluster: p.Name + "." + p.Namespace, Metadata: st}, nil
}

// ControlPlane is the istiod a probe talks to, and how to tell it from any other istiod on the
// machine.
type ControlPlane struct {
	XDSAddr string // plaintext xDS, host:port
	// HTTPAddr is istiod's HTTP address (/debug). With ClusterID set, the probe checks there that
	// this istiod is the one meant, and that it holds the probe's connection.
	HTTPAddr string
	// ClusterID is istiod's own CLUSTER_ID. It is also the CLUSTER_ID the probe's proxies claim
	// (unless Proxy.ClusterID says otherwise), as a pod of that cluster would.
	ClusterID string
}

func (cp ControlPlane) String() string {
	if cp.ClusterID == "" {
		return "istiod at " + cp.XDSAddr
	}
	return fmt.Sprintf("istiod %s at %s", cp.ClusterID, cp.XDSAddr)
}

// ErrForeignIstiod is returned when the istiod that answers is not the ControlPlane meant: another
// control plane holds its ports.
var ErrForeignIstiod = errors.New("xdsprobe: a foreign istiod answers")

// Verify checks that the istiod at cp.HTTPAddr is cluster cp.ClusterID: the first cluster of
// its /debug/clusterz, its config cluster, must be cp.ClusterID. It does nothing when ClusterID
// or HTTPAddr is empty.
func (cp ControlPlane) Verify(ctx context.Context) error {
	if cp.ClusterID == "" || cp.HTTPAddr == "" {
		return nil
	}
	var clusters []struct {
		ID string `json:"id"`
	}
	if err := getJSON(ctx, "http://"+cp.HTTPAddr+"/debug/clusterz", &clusters); err != nil {
		return fmt.Errorf("xdsprobe: identifying istiod at %s: %w", cp.HTTPAddr, err)
	}
	if len(clusters) == 0 || clusters[0].ID != cp.ClusterID {
		ids := make([]string, 0, len(clusters))
		for _, c := range clusters {
			ids = append(ids, c.ID)
		}
		return fmt.Errorf("%w: %s serves cluster %v, not %s; stop the other control plane or move the test's ports",
			ErrForeignIstiod, cp.HTTPAddr, ids, cp.ClusterID)
	}
	return nil
}

// holds checks that the verified istiod at cp.HTTPAddr lists a connection of proxy p: the
// process that answered on XDSAddr is that istiod, not another one on the same machine.
func (cp ControlPlane) holds(ctx context.Context, p Proxy) error {
	if cp.ClusterID == "" || cp.HTTPAddr == "" {
		return nil
	}
	if err := cp.Verify(ctx); err != nil {
		return err
	}
	var adsz struct {
		Clients []struct {
			ConnectionID string `json:"connectionId"`
		} `json:"clients"`
	}
	if err := getJSON(ctx, "http://"+cp.HTTPAddr+"/debug/adsz", &adsz); err != nil {
		return fmt.Errorf("xdsprobe: istiod's connections at %s: %w", cp.HTTPAddr, err)
	}
	prefix := p.Name + "." + p.Namespace + "-"
	for _, c := range adsz.Clients {
		if strings.HasPrefix(c.ConnectionID, prefix) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s pushed to %s.%s, but istiod %s at %s has no such connection",
		ErrForeignIstiod, cp.XDSAddr, p.Name, p.Namespace, cp.ClusterID, cp.HTTPAddr)
}

func getJSON(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return json.Unmarshal(body, into)
}

// Push is one CDS push istiod sent a proxy.
type Push struct {
	Clusters []string // the names of the pushed resources, sorted: clusters, or listeners for LDS
	Version  string   // istiod's push version
	Seq      int      // 1 for the first push on the stream, 2 for the next, ...
}

// Stream is an open ADS stream subscribed to CDS. Each call to Next returns the next full
// cluster list istiod pushes (state of the world), after acknowledging it.
type Stream struct {
	conn     *grpc.ClientConn
	stream   discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel   context.CancelFunc
	cp       ControlPlane
	proxy    Proxy
	node     *corev3.Node
	seq      int
	verified bool
	// typeURL is the type whose pushes Next returns: CDS, LDS, RDS or EDS.
	typeURL string
	// eds are the EDS clusters an EndpointType stream asked for, from the last CDS push.
	eds []string
}

// Dial opens an ADS stream to cp as proxy p and subscribes to CDS. Close it when done.
func Dial(ctx context.Context, cp ControlPlane, p Proxy) (*Stream, error) {
	return DialType(ctx, cp, p, ClusterType)
}

// DialType is Dial for the pushes of one type, ClusterType, ListenerType, RouteType or
// EndpointType. As Envoy does, the stream subscribes to CDS first, then to LDS, then to RDS for
// routes, the route configurations its listeners ask for; for endpoints, to EDS for the EDS
// clusters of each CDS push.
func DialType(ctx context.Context, cp ControlPlane, p Proxy, typeURL string, routes ...string) (*Stream, error) {
	if typeURL != ClusterType && typeURL != ListenerType && typeURL != RouteType && typeURL != EndpointType {
		return nil, fmt.Errorf("xdsprobe: type %q is not CDS, LDS, RDS or EDS", typeURL)
	}
	if p.ClusterID == "" {
		p.ClusterID = cp.ClusterID
	}
	node, err := p.node()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(cp.XDSAddr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("xdsprobe: dial %s: %w", cp.XDSAddr, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("xdsprobe: open ADS stream to %s: %w", cp.XDSAddr, err)
	}
	s := &Stream{conn: conn, stream: stream, cancel: cancel, cp: cp, proxy: p, node: node, typeURL: typeURL}
	if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: ClusterType}); err != nil {
		s.Close()
		return nil, fmt.Errorf("xdsprobe: send CDS request to %s: %w", cp.XDSAddr, err)
	}
	if typeURL == ListenerType || typeURL == RouteType {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: ListenerType}); err != nil {
			s.Close()
			return nil, fmt.Errorf("xdsprobe: send LDS request to %s: %w", cp.XDSAddr, err)
		}
	}
	if typeURL == RouteType {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: RouteType, ResourceNames: routes}); err != nil {
			s.Close()
			return nil, fmt.Errorf("xdsprobe: send RDS request to %s: %w", cp.XDSAddr, err)
		}
	}
	return s, nil
}

// Next waits for the next push of the stream's type, acknowledges it and returns it. Pushes of
// other types are acknowledged and skipped. Before it returns the first push, it checks that
// the istiod that sent it is the stream's ControlPlane (ErrForeignIstiod otherwise).
func (s *Stream) Next() (Push, error) {
	for {
		resp, err := s.stream.Recv()
		if err != nil {
			return Push{}, fmt.Errorf("xdsprobe: receive: %w", err)
		}
		ack := &discoveryv3.DiscoveryRequest{
			TypeUrl:       resp.GetTypeUrl(),
			VersionInfo:   resp.GetVersionInfo(),
			ResponseNonce: resp.GetNonce(),
		}
		if err := s.stream.Send(ack); err != nil {
			return Push{}, fmt.Errorf("xdsprobe: acknowledge: %w", err)
		}
		var names []string
		noEDS := false
		switch {
		case s.typeURL == EndpointType && resp.GetTypeUrl() == ClusterType:
			eds, err := edsClusters(resp)
			if err != nil {
				return Push{}, err
			}
			if slices.Equal(eds, s.eds) && s.seq > 0 {
				continue
			}
			s.eds = eds
			if len(eds) > 0 {
				if err := s.stream.Send(&discoveryv3.DiscoveryRequest{TypeUrl: EndpointType, ResourceNames: eds}); err != nil {
					return Push{}, fmt.Errorf("xdsprobe: send EDS request: %w", err)
				}
				continue
			}
			// No EDS cluster: no endpoints, and no EDS push to wait for.
			noEDS = true
		case resp.GetTypeUrl() != s.typeURL:
			continue
		}
		for _, r := range resp.GetResources() {
			if noEDS {
				break
			}
			if s.typeURL == EndpointType {
				var cla endpointv3.ClusterLoadAssignment
				if err := r.UnmarshalTo(&cla); err != nil {
					return Push{}, fmt.Errorf("xdsprobe: decode endpoints: %w", err)
				}
				names = append(names, endpointLines(&cla)...)
				continue
			}
			if s.typeURL == RouteType {
				lines, err := routeLines(r.GetValue())
				if err != nil {
					return Push{}, err
				}
				names = append(names, lines...)
				continue
			}
			if s.typeURL == ListenerType {
				name, err := listenerName(r.GetValue())
				if err != nil {
					return Push{}, err
				}
				names = append(names, name)
				continue
			}
			var c clusterv3.Cluster
			if err := r.UnmarshalTo(&c); err != nil {
				return Push{}, fmt.Errorf("xdsprobe: decode cluster: %w", err)
			}
			names = append(names, c.GetName())
		}
		if names == nil {
			names = []string{}
		}
		slices.Sort(names)
		if !s.verified {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			err := s.cp.holds(ctx, s.proxy)
			cancel()
			if err != nil {
				return Push{}, err
			}
			s.verified = true
		}
		s.seq++
		return Push{Clusters: names, Version: resp.GetVersionInfo(), Seq: s.seq}, nil
	}
}

// Close ends the stream and the connection.
func (s *Stream) Close() {
	s.cancel()
	_ = s.conn.Close()
}

// A Probe reports the latest cluster list istiod pushed to one proxy. Watch (one stream, every
// push) and Fresh (a new connection per look) are the two kinds.
type Probe interface {
	// Latest returns the newest push, waiting for a first one until ctx ends.
	Latest(ctx context.Context) (Push, error)
	// String names the proxy and the istiod, for failure messages.
	String() string
}

// Watcher keeps one ADS stream open as a proxy, acknowledges every push at once, and remembers
// the newest: a proxy that follows istiod's pushes, as Envoy does.
type Watcher struct {
	s       *Stream
	name    string
	mu      sync.Mutex
	latest  Push
	err     error
	changed chan struct{} // closed and replaced on every push or error
}

// Watch opens a stream to cp as p and follows its pushes until Close.
func Watch(ctx context.Context, cp ControlPlane, p Proxy) (*Watcher, error) {
	s, err := Dial(ctx, cp, p)
	if err != nil {
		return nil, err
	}
	w := &Watcher{s: s, name: fmt.Sprintf("%s.%s (one stream) at %s", p.Name, p.Namespace, cp), changed: make(chan struct{})}
	go w.run()
	return w, nil
}

func (w *Watcher) run() {
	for {
		push, err := w.s.Next()
		w.mu.Lock()
		if err != nil {
			w.err = err
		} else {
			w.latest = push
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Latest returns the newest push. Before the first one it waits until ctx ends; once the
// stream has failed it returns the error.
func (w *Watcher) Latest(ctx context.Context) (Push, error) {
	for {
		w.mu.Lock()
		latest, err, changed := w.latest, w.err, w.changed
		w.mu.Unlock()
		if err != nil {
			return latest, err
		}
		if latest.Seq > 0 {
			return latest, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Push{}, fmt.Errorf("xdsprobe: no CDS push to %s yet: %w", w.name, ctx.Err())
		}
	}
}

func (w *Watcher) String() string { return w.name }

// Close ends the stream.
func (w *Watcher) Close() { w.s.Close() }

// Fresh is a probe that opens a new connection for every look and returns istiod's first push
// to it: istiod's current view for the proxy, whatever it pushed before.
type Fresh struct {
	ControlPlane ControlPlane
	Proxy        Proxy
	// TypeURL is the type of the push Latest returns: ClusterType when empty, ListenerType or
	// RouteType.
	TypeURL string
	// Routes are the route configurations a RouteType probe asks for.
	Routes []string
}

// Latest connects, takes istiod's first push and disconnects.
func (f Fresh) Latest(ctx context.Context) (Push, error) {
	s, err := DialType(ctx, f.ControlPlane, f.Proxy, or(f.TypeURL, ClusterType), f.Routes...)
	if err != nil {
		return Push{}, err
	}
	defer s.Close()
	type result struct {
		push Push
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := s.Next()
		ch <- result{p, err}
	}()
	select {
	case r := <-ch:
		return r.push, r.err
	case <-ctx.Done():
		return Push{}, fmt.Errorf("xdsprobe: no %s push from %s: %w", or(f.TypeURL, ClusterType), f.ControlPlane, ctx.Err())
	}
}

func (f Fresh) String() string {
	return fmt.Sprintf("%s.%s (a new connection each time) at %s", f.Proxy.Name, f.Proxy.Namespace, f.ControlPlane)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// routeLines reads an encoded envoy.config.route.v3.RouteConfiguration (name 1, virtual_hosts 2,
// each a VirtualHost with name 1) as one "ROUTE/VHOST" per virtual host, or "ROUTE" when it has
// none: the form of the data source's virtual_hosts.
func routeLines(b []byte) ([]string, error) {
	name := ""
	var vhosts []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("xdsprobe: decode route: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, fmt.Errorf("xdsprobe: decode route: %w", protowire.ParseError(m))
			}
			b = b[m:]
			if num == 1 {
				name = string(v)
				continue
			}
			vh, err := listenerName(v) // a VirtualHost's name is field 1 too
			if err != nil {
				return nil, fmt.Errorf("xdsprobe: decode virtual host: %w", err)
			}
			vhosts = append(vhosts, vh)
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, fmt.Errorf("xdsprobe: decode route: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	if len(vhosts) == 0 {
		return []string{name}, nil
	}
	out := make([]string, len(vhosts))
	for i, vh := range vhosts {
		out[i] = name + "/" + vh
	}
	return out, nil
}

// listenerName reads field 1, the name, of an encoded envoy.config.listener.v3.Listener. The
// listener's own types pull in modules the probe has no other use for, and the name is all it
// reports.
func listenerName(b []byte) (string, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", fmt.Errorf("xdsprobe: decode listener: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", fmt.Errorf("xdsprobe: decode listener name: %w", protowire.ParseError(m))
			}
			return string(v), nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", fmt.Errorf("xdsprobe: decode listener: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return "", errors.New("xdsprobe: a pushed listener has no name")
}

// edsClusters are the names a CDS push's EDS clusters ask EDS for (eds_cluster_config.service_name,
// else the cluster's name), sorted.
func edsClusters(resp *discoveryv3.DiscoveryResponse) ([]string, error) {
	var out []string
	for _, r := range resp.GetResources() {
		var c clusterv3.Cluster
		if err := r.UnmarshalTo(&c); err != nil {
			return nil, fmt.Errorf("xdsprobe: decode cluster: %w", err)
		}
		if c.GetType() != clusterv3.Cluster_EDS {
			continue
		}
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// endpointLines are a load assignment's endpoints as "CLUSTER/ADDRESS:PORT", the form of the data
// source's endpoints, followed by " STATUS" when the status is not HEALTHY (UNHEALTHY, DRAINING).
func endpointLines(cla *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for _, loc := range cla.GetEndpoints() {
		for _, lb := range loc.GetLbEndpoints() {
			sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
			line := fmt.Sprintf("%s/%s:%d", cla.GetClusterName(), sa.GetAddress(), sa.GetPortValue())
			if st := lb.GetHealthStatus(); st != corev3.HealthStatus_HEALTHY {
				line += " " + st.String()
			}
			out = append(out, line)
		}
	}
	return out
}
