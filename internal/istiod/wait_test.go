package istiod

import (
	"testing"
	"time"

	networking "istio.io/api/networking/v1alpha3"
)

func TestStatus_DoneOnlyWhenOurSpecIsAcked(t *testing.T) {
	spec := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"istio-system/*"}}}}
	older := &networking.Sidecar{Egress: []*networking.IstioEgressListener{{Hosts: []string{"*/*"}}}}
	target := Target{Namespace: "foo", Name: "web", Spec: spec}
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	ours := Scope{Name: "web", Namespace: "foo", Version: "2026-12-03T08:00:00Z/7", Spec: spec}
	synced := Sync{ClusterSent: "n2", ClusterAcked: "n2", ClusterSentTime: at.Add(300 * time.Millisecond)}
	cases := []struct {
		name   string
		scope  Scope
		sync   Sync
		done   bool
		reason string
	}{
		{name: "pushed and acknowledged", scope: ours, sync: synced, done: true},
		{name: "default scope", scope: Scope{Version: ours.Version}, sync: synced,
			reason: "istiod has not pushed the scope yet: the proxy holds the default scope"},
		{name: "another Sidecar", scope: Scope{Name: "default", Namespace: "foo", Spec: older}, sync: synced,
			reason: "istiod has not pushed the scope yet: the proxy holds Sidecar foo/default"},
		{name: "an earlier version of ours", scope: Scope{Name: "web", Namespace: "foo", Spec: older}, sync: synced,
			reason: "istiod holds an earlier version of Sidecar foo/web"},
		{name: "not acknowledged", scope: ours, sync: Sync{ClusterSent: "n3", ClusterAcked: "n2", ClusterSentTime: at},
			reason: `the proxy has not acknowledged CDS push n3 (last acknowledged: "n2")`},
		{name: "nothing sent", scope: ours, sync: Sync{}, reason: "istiod has sent the proxy no clusters"},
		{name: "last push older than the scope", scope: ours, sync: Sync{ClusterSent: "n1", ClusterAcked: "n1", ClusterSentTime: at.Add(-time.Second)},
			reason: "istiod has computed the scope but not pushed it yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := status(target, Proxy{ID: "web-0.foo"}, tc.scope, tc.sync)
			if st.Done != tc.done || st.Reason != tc.reason {
				t.Errorf("status = done %v, %q; want done %v, %q", st.Done, st.Reason, tc.done, tc.reason)
			}
		})
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"127.0.0.1:8080", "ftp://istiod:8080", "http://", "://x"} {
		if _, err := New(u, nil); err == nil {
			t.Errorf("New(%q) accepted the URL", u)
		}
	}
	if _, err := New("http://127.0.0.1:8080/", nil); err != nil {
		t.Errorf("New(http://127.0.0.1:8080/): %v", err)
	}
}
