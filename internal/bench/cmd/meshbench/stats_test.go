package main

import (
	"math"
	"testing"
)

func TestSampleMedianMinMax(t *testing.T) {
	for _, tc := range []struct {
		name          string
		s             Sample
		med, min, max float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", Sample{3}, 3, 3, 3},
		{"odd, unsorted", Sample{5, 1, 3}, 3, 1, 5},
		{"even: mean of the middle two", Sample{4, 1, 3, 2}, 2.5, 1, 4},
		{"repeated", Sample{2, 2, 9}, 2, 2, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := append(Sample(nil), tc.s...)
			if got := tc.s.Median(); got != tc.med {
				t.Errorf("Median = %v, want %v", got, tc.med)
			}
			if got := tc.s.Min(); got != tc.min {
				t.Errorf("Min = %v, want %v", got, tc.min)
			}
			if got := tc.s.Max(); got != tc.max {
				t.Errorf("Max = %v, want %v", got, tc.max)
			}
			for i := range orig {
				if tc.s[i] != orig[i] {
					t.Fatalf("the sample was reordered: %v, was %v", tc.s, orig)
				}
			}
		})
	}
}

func TestFitExponent(t *testing.T) {
	power := func(c, k float64, ns ...int) []float64 {
		out := make([]float64, len(ns))
		for i, n := range ns {
			out[i] = c * math.Pow(float64(n), k)
		}
		return out
	}
	sizes := []int{1000, 2000, 5000, 10000}
	for _, tc := range []struct {
		name string
		ns   []int
		ts   []float64
		want float64 // NaN: no fit
	}{
		{"constant", sizes, power(7, 0, sizes...), 0},
		{"linear", sizes, power(3e-6, 1, sizes...), 1},
		{"quadratic", sizes, power(2e-9, 2, sizes...), 2},
		{"two points are a line", []int{100, 400}, []float64{1, 8}, 1.5},
		{"non-positive times are left out", sizes, []float64{1, 0, 5, -1}, 1},
		{"one point", []int{1000}, []float64{1}, math.NaN()},
		{"none left", []int{1, 2}, []float64{0, 0}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fitExponent(tc.ns, tc.ts)
			if math.IsNaN(tc.want) {
				if !math.IsNaN(got) {
					t.Fatalf("k = %v, want NaN", got)
				}
				return
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("k = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFitExponentNoise(t *testing.T) {
	// A quadratic with ±5% noise still fits close to 2.
	ns := []int{1000, 2000, 5000, 10000}
	ts := []float64{1.05e6, 3.8e6, 2.6e7, 0.97e8}
	if k := fitExponent(ns, ts); k < 1.9 || k > 2.1 {
		t.Fatalf("k = %.3f, want about 2", k)
	}
}

func TestGrowth(t *testing.T) {
	values := map[int]float64{1000: 1, 2000: 2, 5000: 5, 10000: 10}
	get := func(n int) float64 { return values[n] }
	if k, ok := growth([]int{1000, 2000, 5000, 10000}, get); !ok || math.Abs(k-1) > 1e-9 {
		t.Errorf("growth over 4 sizes = %v, %v; want 1, true", k, ok)
	}
	// Sizes without a measurement are left out; fewer than three left is no fit.
	if k, ok := growth([]int{1000, 3000, 10000}, get); ok {
		t.Errorf("growth over 2 measured sizes = %v, true; want no fit", k)
	}
	if k, ok := growth([]int{1000, 2000, 3000, 10000}, get); !ok || math.Abs(k-1) > 1e-9 {
		t.Errorf("growth over 3 of 4 sizes = %v, %v; want 1, true", k, ok)
	}
}

func TestQuotientAndCut(t *testing.T) {
	for _, tc := range []struct {
		a, b, want float64
	}{
		{10, 4, 2.5}, {0, 4, math.NaN()}, {4, 0, math.NaN()}, {-1, 4, math.NaN()},
	} {
		if got := quotient(tc.a, tc.b); got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("quotient(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if got := cutPercent(2012, 14.8); math.Abs(got-99.2644) > 1e-3 {
		t.Errorf("cutPercent(2012, 14.8) = %v, want 99.2644", got)
	}
	if got := cutPercent(0, 14.8); !math.IsNaN(got) {
		t.Errorf("cutPercent without a base = %v, want NaN", got)
	}
}
