// Package istiod reads istiod's HTTP debug endpoints to tell when the proxies
// a Sidecar governs have received and acknowledged the scope it gives them:
// /debug/adsz (the connected proxies and their labels), /debug/sidecarz (the
// sidecar scope istiod last pushed to a proxy) and /debug/syncz (the nonces
// istiod sent and each proxy acknowledged, as `istioctl proxy-status` shows).
package istiod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	networking "istio.io/api/networking/v1alpha3"
)

// ClusterType is the xDS type URL of CDS.
const ClusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// Client reads the debug endpoints of one istiod.
type Client struct {
	base *url.URL
	http *http.Client
}

// New returns a client for istiod's debug endpoints at base, for example
// "http://127.0.0.1:8080" (`kubectl -n istio-system port-forward deploy/istiod 8080`).
func New(base string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return nil, fmt.Errorf("istiod debug URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("istiod debug URL %q: want http://host:port or https://host:port", base)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	return &Client{base: u, http: hc}, nil
}

// Proxy is one proxy connected to istiod.
type Proxy struct {
	// ConnectionID is istiod's name for the connection: the proxy ID and a counter.
	ConnectionID string
	// ID is the proxy ID, "pod.namespace".
	ID        string
	Namespace string
	Labels    map[string]string
}

// Scope is the sidecar scope istiod last computed for a proxy.
type Scope struct {
	// Name and Namespace name the Sidecar in effect; both are empty for the
	// default scope.
	Name, Namespace string
	// Version is the push context version, "RFC3339-time/counter".
	Version string
	// Spec is the Sidecar's spec as istiod holds it; nil for the default scope.
	Spec *networking.Sidecar
}

// Sync is what istiod sent a proxy over CDS and what the proxy acknowledged.
type Sync struct {
	ClusterSent, ClusterAcked string
	// ClusterSentTime is when istiod last sent CDS to the proxy (istiod's clock).
	ClusterSentTime time.Time
}

// Proxies returns the proxies connected to istiod in namespace ns.
func (c *Client) Proxies(ctx context.Context, ns string) ([]Proxy, error) {
	var out struct {
		Clients []struct {
			ConnectionID string            `json:"connectionId"`
			Labels       map[string]string `json:"labels"`
			Metadata     struct {
				Namespace string `json:"NAMESPACE"`
			} `json:"metadata"`
		} `json:"clients"`
	}
	if err := c.get(ctx, "/debug/adsz", nil, &out); err != nil {
		return nil, err
	}
	var proxies []Proxy
	for _, cl := range out.Clients {
		if cl.Metadata.Namespace != ns {
			continue
		}
		id := cl.ConnectionID
		if i := strings.LastIndexByte(id, '-'); i > 0 {
			id = id[:i]
		}
		proxies = append(proxies, Proxy{ConnectionID: cl.ConnectionID, ID: id, Namespace: ns, Labels: cl.Labels})
	}
	return proxies, nil
}

// Scope returns the sidecar scope istiod last pushed to the proxy.
func (c *Client) Scope(ctx context.Context, p Proxy) (Scope, error) {
	var out struct {
		Name      string          `json:"name"`
		Namespace string          `json:"namespace"`
		Version   string          `json:"version"`
		Sidecar   json.RawMessage `json:"sidecar"`
	}
	if err := c.get(ctx, "/debug/sidecarz", url.Values{"proxyID": {p.ConnectionID}}, &out); err != nil {
		return Scope{}, err
	}
	sc := Scope{Name: out.Name, Namespace: out.Namespace, Version: out.Version}
	if len(out.Sidecar) > 0 && string(out.Sidecar) != "null" {
		sc.Spec = &networking.Sidecar{}
		if err := sc.Spec.UnmarshalJSON(out.Sidecar); err != nil {
			return Scope{}, fmt.Errorf("istiod debug endpoint /debug/sidecarz: the sidecar of proxy %s is not a Sidecar spec: %w", p.ID, err)
		}
	}
	return sc, nil
}

// Syncs returns the CDS sync status of the proxies of namespace ns, by proxy ID.
func (c *Client) Syncs(ctx context.Context, ns string) (map[string]Sync, error) {
	var out []struct {
		Proxy        string `json:"proxy"`
		ClusterSent  string `json:"cluster_sent"`
		ClusterAcked string `json:"cluster_acked"`
		Resources    map[string]struct {
			SentTime time.Time `json:"sentTime"`
		} `json:"resources"`
	}
	if err := c.get(ctx, "/debug/syncz", url.Values{"namespace": {ns}}, &out); err != nil {
		return nil, err
	}
	syncs := make(map[string]Sync, len(out))
	for _, s := range out {
		syncs[s.Proxy] = Sync{ClusterSent: s.ClusterSent, ClusterAcked: s.ClusterAcked, ClusterSentTime: s.Resources[ClusterType].SentTime}
	}
	return syncs, nil
}

func (c *Client) get(ctx context.Context, path string, query url.Values, into any) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("istiod debug endpoint %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("istiod debug endpoint %s: %w", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{URL: u.Redacted(), Code: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("istiod debug endpoint %s: not the JSON istiod writes: %w", u.Redacted(), err)
	}
	return nil
}

// StatusError is a debug endpoint's answer other than 200 OK.
type StatusError struct {
	URL  string
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("istiod debug endpoint %s answered %d: %s", e.URL, e.Code, e.Body)
}
