package scope

import (
	"math/rand/v2"
	"strings"
	"testing"

	goyaml "go.yaml.in/yaml/v2"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/meshscope/terraform-provider-meshscope/internal/mesh"
)

// The manifest of a compiled scope is Marshal's, byte for byte, on random Sidecars of the shapes
// Compile makes, with strings YAML prints plain and strings it quotes; and the direct writer
// does write the common ones.
func TestSidecarManifest_asMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	hosts := []string{"istio-system/*", "team-0022/svc-00228.team-0022.svc.cluster.local", "~/*", "*/api.example.com",
		"ns/*.example.com", "./local.svc", "a:b/c", "true", "ns/UPPER_case.x", "n/x y"}
	keys := []string{"app", "version", "k8s-app", "a_b", "A", "_x", "a10", "a9", "a09", "app.kubernetes.io/name", "Z", "é"}
	values := []string{"x", "v1", "2", "true", "null", "y", "Yes", "abc-def", "", "a b", "0x1F"}
	randomMap := func(plainOnly bool) map[string]string {
		m := map[string]string{}
		for range 1 + rng.IntN(4) {
			k, v := pick(keys...), pick(values...)
			if plainOnly && (!plain(k) || !plain(v)) {
				continue
			}
			m[k] = v
		}
		return m
	}
	port := func(plainOnly bool) *networking.SidecarPort {
		p := &networking.SidecarPort{
			Number:   uint32(rng.IntN(3)) * uint32(1+rng.IntN(65535)),
			Protocol: pick("", "HTTP", "GRPC", "TCP", "HTTP2", "true"),
			Name:     pick("", "http-80", "port-10", "grpc-9090", "on", "1abc"),
		}
		if plainOnly && (p.Protocol == "true" || p.Name == "on" || p.Name == "1abc") {
			p.Protocol, p.Name = "HTTP", "http-80"
		}
		return p
	}
	written := 0
	for i := range 3000 {
		// Every other Sidecar keeps to plain strings, so that the direct writer is exercised.
		plainOnly := i%2 == 0
		spec := &networking.Sidecar{}
		for range rng.IntN(5) {
			l := &networking.IstioEgressListener{}
			for range 1 + rng.IntN(5) {
				if h := pick(hosts...); !plainOnly || plain(h) {
					l.Hosts = append(l.Hosts, h)
				}
			}
			if rng.IntN(3) > 0 {
				l.Port = port(plainOnly)
			}
			spec.Egress = append(spec.Egress, l)
		}
		for range rng.IntN(3) {
			spec.Ingress = append(spec.Ingress, &networking.IstioIngressListener{Port: port(plainOnly)})
			if !plainOnly {
				spec.Ingress[len(spec.Ingress)-1].DefaultEndpoint = pick("", "127.0.0.1:8080", "unix:///var/run/x.sock")
			}
		}
		switch rng.IntN(3) {
		case 1:
			spec.OutboundTrafficPolicy = &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_ALLOW_ANY}
		case 2:
			spec.OutboundTrafficPolicy = &networking.OutboundTrafficPolicy{Mode: networking.OutboundTrafficPolicy_REGISTRY_ONLY}
		}
		if rng.IntN(4) > 0 {
			spec.WorkloadSelector = &networking.WorkloadSelector{Labels: randomMap(plainOnly)}
		}
		labels := map[string]string{mesh.ManagedByLabel: mesh.ManagedByValue}
		if rng.IntN(3) == 0 {
			labels = randomMap(plainOnly)
		}
		name, ns := pick("svc-00001", "name-1", "1abc", "on"), pick("team-0000", "default", "y")
		if plainOnly {
			name, ns = "svc-00001", "team-0000"
		}
		want, err := Marshal(name, ns, labels, spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sidecarManifest(name, ns, labels, spec)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("Sidecar %d (%v, %s/%s, labels %v): the manifest is\n%s\nMarshal prints\n%s", i, spec, ns, name, labels, got, want)
		}
		if _, ok := writeSidecar(name, ns, labels, spec); ok {
			written++
		}
	}
	if written < 300 {
		t.Errorf("the direct writer wrote %d of 3,000 manifests; want at least 300", written)
	}
}

// A scope compiled from a declaration gets its manifest from the direct writer.
func TestSidecarManifest_compiledScope(t *testing.T) {
	spec := &networking.Sidecar{
		WorkloadSelector: &networking.WorkloadSelector{Labels: map[string]string{"app": "svc-00001"}},
		Egress: []*networking.IstioEgressListener{
			{Hosts: []string{"istio-system/*", "team-0022/svc-00228.team-0022.svc.cluster.local"}, Port: &networking.SidecarPort{Number: 80, Protocol: "HTTP", Name: "http-80"}},
			{Hosts: []string{"istio-system/*"}},
		},
	}
	labels := map[string]string{mesh.ManagedByLabel: mesh.ManagedByValue}
	got, ok := writeSidecar("svc-00001", "team-0000", labels, spec)
	if !ok {
		t.Fatal("the direct writer refused a compiled scope's Sidecar")
	}
	if want, _ := Marshal("svc-00001", "team-0000", labels, spec); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// A string plain says prints without quotes is one the YAML encoder prints as it is.
func TestPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "aAzZyYnNoOtTfFeE019-._/*:~ #'\"!&|>%@`,[]{}?+"
	words := []string{"y", "Y", "yes", "Yes", "YES", "n", "No", "on", "On", "OFF", "true", "True", "false", "FALSE", "null",
		"Null", "NULL", "e1", "E5", "inf", "Inf", "NaN", "nan", "infinity", "x:", "a/*", "ALLOW_ANY", "http-80"}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		words = append(words, b.String())
	}
	plains := 0
	for _, s := range words {
		if !plain(s) {
			continue
		}
		plains++
		y, err := goyaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(y) != s+"\n" {
			t.Fatalf("plain(%q) is true, but the YAML encoder prints %q", s, y)
		}
	}
	if plains < 1000 {
		t.Errorf("only %d strings were plain; the test checks too little", plains)
	}
}

// writeMap's key order is the YAML encoder's.
func TestYAMLKeyLess(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "aAbB09-._/"
	for range 3000 {
		m := map[string]string{}
		for range 2 + rng.IntN(5) {
			var b strings.Builder
			b.WriteByte("abAB"[rng.IntN(4)])
			for range rng.IntN(5) {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
			m[b.String()] = "v"
		}
		var got strings.Builder
		if !writeMap(&got, "", m) {
			t.Fatalf("writeMap refused %v", m)
		}
		want, err := goyaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Fatalf("keys of %v: writeMap prints\n%s\nthe YAML encoder\n%s", m, got.String(), want)
		}
	}
}
