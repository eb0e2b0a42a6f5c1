package istiod

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
)

// Target is a Sidecar whose scope the proxies it governs must hold.
type Target struct {
	Namespace, Name string
	// Spec is the Sidecar's spec as applied.
	Spec *networking.Sidecar
	// Governs reports whether the Sidecar is the one in effect for a proxy of
	// Namespace with these labels.
	Governs func(labels map[string]string) bool
}

// ProxyStatus is where one governed proxy stands.
type ProxyStatus struct {
	Proxy Proxy
	// Done is set when istiod pushed the target's scope to the proxy over CDS
	// and the proxy acknowledged that push.
	Done bool
	// Reason says what is missing when Done is false.
	Reason string
	// nonce is the CDS nonce the proxy acknowledged.
	nonce string
}

// Check reads, once, where every connected proxy the target governs stands.
func (c *Client) Check(ctx context.Context, t Target) ([]ProxyStatus, error) {
	proxies, err := c.Proxies(ctx, t.Namespace)
	if err != nil {
		return nil, err
	}
	syncs, err := c.Syncs(ctx, t.Namespace)
	if err != nil {
		return nil, err
	}
	var out []ProxyStatus
	for _, p := range proxies {
		if !t.Governs(p.Labels) {
			continue
		}
		sc, err := c.Scope(ctx, p)
		var se *StatusError
		if errors.As(err, &se) && se.Code == 404 {
			continue // disconnected in between
		}
		if err != nil {
			return nil, err
		}
		out = append(out, status(t, p, sc, syncs[p.ID]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Proxy.ID < out[j].Proxy.ID })
	return out, nil
}

// status decides whether a proxy holds the target's scope and acknowledged it.
func status(t Target, p Proxy, sc Scope, s Sync) ProxyStatus {
	st := ProxyStatus{Proxy: p}
	switch {
	case sc.Name != t.Name || sc.Namespace != t.Namespace:
		in := "the default scope"
		if sc.Name != "" {
			in = "Sidecar " + sc.Namespace + "/" + sc.Name
		}
		st.Reason = "istiod has not pushed the scope yet: the proxy holds " + in
	case !proto.Equal(sc.Spec, t.Spec):
		st.Reason = "istiod holds an earlier version of Sidecar " + t.Namespace + "/" + t.Name
	case s.ClusterSent == "":
		st.Reason = "istiod has sent the proxy no clusters"
	case s.ClusterAcked != s.ClusterSent:
		st.Reason = fmt.Sprintf("the proxy has not acknowledged CDS push %s (last acknowledged: %q)", s.ClusterSent, s.ClusterAcked)
	case s.ClusterSentTime.Before(versionTime(sc.Version)):
		st.Reason = "istiod has computed the scope but not pushed it yet"
	default:
		st.Done, st.nonce = true, s.ClusterAcked
	}
	return st
}

// versionTime is the time of a push context version, "RFC3339/counter".
func versionTime(v string) time.Time {
	ts, _, _ := strings.Cut(v, "/")
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Wait polls every interval until every connected proxy the target governs has
// acknowledged its scope, in two polls in a row with the same CDS nonce (a
// push under way between the two shows as a new nonce). It returns the last
// statuses; on timeout or cancellation the error is ctx's. progress, if set,
// sees each poll.
func (c *Client) Wait(ctx context.Context, t Target, interval time.Duration, progress func([]ProxyStatus)) ([]ProxyStatus, error) {
	prev := map[string]string{}
	for {
		sts, err := c.Check(ctx, t)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(sts)
		}
		stable := true
		cur := map[string]string{}
		for _, st := range sts {
			if !st.Done {
				stable = false
				continue
			}
			cur[st.Proxy.ID] = st.nonce
			if prev[st.Proxy.ID] != st.nonce {
				stable = false
			}
		}
		if stable {
			return sts, nil
		}
		prev = cur
		select {
		case <-ctx.Done():
			return sts, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Pending returns the statuses not done.
func Pending(sts []ProxyStatus) []ProxyStatus {
	var out []ProxyStatus
	for _, st := range sts {
		if !st.Done {
			out = append(out, st)
		}
	}
	return out
}
