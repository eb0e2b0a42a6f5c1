package predict

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMinus checks minus against its definition, the elements of a that b lacks in a's order,
// on random sorted lists of every relative size, with repeats on either side.
func TestMinus(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	list := func(n, universe int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("h%04d", r.IntN(universe))
		}
		slices.Sort(out)
		return out
	}
	for range 2000 {
		u := 1 + r.IntN(60)
		a, b := list(r.IntN(40), u), list(r.IntN(40), u)
		var want []string
		for _, x := range a {
			if !slices.Contains(b, x) {
				want = append(want, x)
			}
		}
		if got := minus(a, b); !slices.Equal(got, want) {
			t.Fatalf("minus(%v, %v) = %v, want %v", a, b, got, want)
		}
	}
}

// TestMinusIsNeverNil: an empty difference is an empty list, which JSON writes as [], not null.
func TestMinusIsNeverNil(t *testing.T) {
	for _, c := range [][2][]string{{nil, nil}, {{"a"}, {"a"}}, {{"a"}, {"a", "b"}}, {{"a", "b"}, {"a", "b"}}, {nil, {"a"}}} {
		if got := minus(c[0], c[1]); got == nil || len(got) != 0 {
			t.Errorf("minus(%q, %q) = %#v, want an empty, non-nil list", c[0], c[1], got)
		}
	}
}
