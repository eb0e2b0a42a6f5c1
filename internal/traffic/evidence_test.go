package traffic

import (
	"slices"
	"strings"
	"testing"
)

// The findings of issue 23, on the series a real Prometheus holds for the evidence mesh.

func evidenceCallsOf(t *testing.T, ns, wl string) []Call {
	t.Helper()
	return Resolve(evidenceSnapshot(t), evidenceMesh(t), "cluster.local").Calls(ns, wl)
}

// One call, counted once: the client's series of web's calls to cart has no destination_port,
// the server's has 80. They are the same 1,000 requests, on port 80.
func TestEvidence_OneCallCountedOnce(t *testing.T) {
	var cart []Call
	for _, c := range evidenceCallsOf(t, "shop", "web") {
		if c.Service == "cart.shop" {
			cart = append(cart, c)
		}
	}
	if len(cart) != 1 || cart[0].Port != 80 || cart[0].Count != 1000 || cart[0].Unit() != "requests" {
		t.Fatalf("web's calls to cart.shop = %+v, want one of 1000 requests on port 80", cart)
	}
	deps := Dependencies(evidenceCallsOf(t, "shop", "web"))
	for _, d := range deps {
		if d.Service == "cart.shop" && (d.Requests != 1000 || !slices.Equal(d.Ports, []uint32{80})) {
			t.Errorf("cart.shop dependency = %+v, want 1000 requests on [80]", d)
		}
	}
}

// Passthrough accounting: cart opened 500 connections Istio could not name; redis's server named
// 100 of them. The other 400 stay, as their own entry.
func TestEvidence_UnexplainedPassthroughKeepsItsRemainder(t *testing.T) {
	calls := evidenceCallsOf(t, "shop", "cart")
	var nameless, redis *Call
	for i, c := range calls {
		switch {
		case c.Host == "" && c.Class == ClassPassthrough:
			nameless = &calls[i]
		case c.Service == "redis.data":
			redis = &calls[i]
		}
	}
	if redis == nil || !redis.Passthrough || redis.Count != 100 || !redis.TCP {
		t.Errorf("redis call = %+v, want 100 passthrough connections", redis)
	}
	if nameless == nil || nameless.Count != 400 || !nameless.TCP || len(nameless.Possibly) != 0 {
		t.Fatalf("calls = %+v, want 400 connections to an address Istio could not name", calls)
	}
}

// A plaintext connection carries no peer metadata: worker's 300 connections have no host, and
// db's server counted 290 from a caller it could not name. A hint, never a count.
func TestEvidence_PossiblyTheServiceThatCountedAsMany(t *testing.T) {
	calls := evidenceCallsOf(t, "shop", "worker")
	if len(calls) != 1 || calls[0].Host != "" || calls[0].Count != 300 || !slices.Equal(calls[0].Possibly, []string{"db.data.svc.cluster.local"}) {
		t.Fatalf("worker's calls = %+v, want 300 nameless connections, possibly db.data", calls)
	}
	if calls[0].Dependency() != "" || calls[0].InRegistry() {
		t.Errorf("a hint became evidence: %+v", calls[0])
	}
}

// "pay/*" imports the ServiceEntries of pay: payments' calls to them are observed under it.
func TestEvidence_NamespaceWildcardCoversServiceEntries(t *testing.T) {
	calls := evidenceCallsOf(t, "pay", "payments")
	if len(calls) != 2 {
		t.Fatalf("payments' calls = %+v, want api.stripe.com and *.googleapis.com", calls)
	}
	for _, c := range calls {
		if c.Class != ClassServiceEntry || !slices.Equal(c.Namespaces, []string{"pay"}) {
			t.Errorf("%s: class %s namespaces %v, want a ServiceEntry of pay", c.Host, c.Class, c.Namespaces)
		}
		if !c.Matches("pay/*", nil, "pay", "cluster.local") || c.Matches("shop/*", nil, "pay", "cluster.local") {
			t.Errorf("%s: pay/* must match it, shop/* must not", c.Host)
		}
	}
}

// A caller the inventory lacks: its requests, which both proxies counted, count once, and its
// connections are never added to them.
func TestEvidence_UnknownCallerTotalsByUnit(t *testing.T) {
	ev := Resolve(evidenceSnapshot(t), evidenceMesh(t), "cluster.local")
	if len(ev.UnknownWorkloads) != 1 {
		t.Fatalf("unknown callers = %+v, want shop/gone", ev.UnknownWorkloads)
	}
	u := ev.UnknownWorkloads[0]
	if u.Workload != "gone" || u.Requests != 2110 || u.Connections != 100 || u.Amount() != "2,110 requests and 100 connections" {
		t.Errorf("shop/gone = %+v (%s), want 2,110 requests and 100 connections", u, u.Amount())
	}
	if ev.Unattributed != 1 {
		t.Errorf("unattributed = %d, want db's one series", ev.Unattributed)
	}
}

// Prometheus never answers with one series twice: a snapshot that holds one is refused, naming it.
func TestEvidence_DuplicatedSeriesRefused(t *testing.T) {
	data := fixtureObserved()
	i := strings.Index(data, `"result": [`) + len(`"result": [`)
	end := strings.Index(data[i:], "\n   },") + i + len("\n   },")
	dup := data[:end] + data[i:end] + data[end:]
	_, err := ParseSnapshot("dup.json", []byte(dup))
	if err == nil || !strings.Contains(err.Error(), "result[1] repeats the labels of result[0]") {
		t.Fatalf("err = %v, want result[1] named as a repeat of result[0]", err)
	}
	if _, err := ParseSnapshot("ok.json", []byte(data)); err != nil {
		t.Fatal(err)
	}
}
