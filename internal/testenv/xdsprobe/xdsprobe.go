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
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
)

// ClusterType is the CDS type URL.
const ClusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// Proxy describes the sidecar the probe pretends to be. Namespace, Name and IP are required.
type Proxy struct {
	Namespace string
	Name      string // the pod name
	IP        string
	Labels    map[string]string
	// Optional; the defaults are those of a pod in the default Kubernetes cluster of a default install.
	ServiceAccount string            // "default"
	ClusterID      string            // "Kubernetes"
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

// Stream is an open ADS stream subscribed to CDS. Each call to Next returns the next full
// cluster list istiod pushes (state of the world), after acknowledging it.
type Stream struct {
	conn   *grpc.ClientConn
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	node   *corev3.Node
}

// Dial opens an ADS stream to addr (host:port of istiod's plaintext xDS port) as proxy p and
// subscribes to CDS. Close it when done.
func Dial(ctx context.Context, addr string, p Proxy) (*Stream, error) {
	node, err := p.node()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("xdsprobe: dial %s: %w", addr, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, fmt.Errorf("xdsprobe: open ADS stream to %s: %w", addr, err)
	}
	s := &Stream{conn: conn, stream: stream, cancel: cancel, node: node}
	if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: ClusterType}); err != nil {
		s.Close()
		return nil, fmt.Errorf("xdsprobe: send CDS request to %s: %w", addr, err)
	}
	return s, nil
}

// Next waits for the next CDS push, acknowledges it and returns its cluster names, sorted.
// Pushes of other types (istiod sends none unless asked) are skipped.
func (s *Stream) Next() ([]string, error) {
	for {
		resp, err := s.stream.Recv()
		if err != nil {
			return nil, fmt.Errorf("xdsprobe: receive: %w", err)
		}
		ack := &discoveryv3.DiscoveryRequest{
			TypeUrl:       resp.GetTypeUrl(),
			VersionInfo:   resp.GetVersionInfo(),
			ResponseNonce: resp.GetNonce(),
		}
		if err := s.stream.Send(ack); err != nil {
			return nil, fmt.Errorf("xdsprobe: acknowledge: %w", err)
		}
		if resp.GetTypeUrl() != ClusterType {
			continue
		}
		names := make([]string, 0, len(resp.GetResources()))
		for _, r := range resp.GetResources() {
			var c clusterv3.Cluster
			if err := r.UnmarshalTo(&c); err != nil {
				return nil, fmt.Errorf("xdsprobe: decode cluster: %w", err)
			}
			names = append(names, c.GetName())
		}
		slices.Sort(names)
		return names, nil
	}
}

// Close ends the stream and the connection.
func (s *Stream) Close() {
	s.cancel()
	_ = s.conn.Close()
}

// Clusters connects as p, returns the cluster names of istiod's first CDS push, sorted, and
// disconnects.
func Clusters(ctx context.Context, addr string, p Proxy) ([]string, error) {
	s, err := Dial(ctx, addr, p)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	type result struct {
		names []string
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		n, err := s.Next()
		ch <- result{n, err}
	}()
	select {
	case r := <-ch:
		return r.names, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("xdsprobe: no CDS push from %s: %w", addr, ctx.Err())
	}
}

// WaitFor polls istiod with fresh connections until ok accepts the pushed cluster list, and
// returns that list. A fresh connection always gets istiod's current view, so this also waits out
// istiod's debounce after a config change. On timeout it returns the last list seen and an error.
func WaitFor(ctx context.Context, addr string, p Proxy, ok func([]string) bool) ([]string, error) {
	var last []string
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		names, err := Clusters(attempt, addr, p)
		cancel()
		if err == nil {
			last, lastErr = names, nil
			if ok(names) {
				return names, nil
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, fmt.Errorf("xdsprobe: gave up waiting: %w (last error: %v)", ctx.Err(), lastErr)
			}
			return last, fmt.Errorf("xdsprobe: gave up waiting: %w; last push had %d clusters: %s",
				ctx.Err(), len(last), strings.Join(last, " "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
