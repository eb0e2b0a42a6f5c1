package main

import (
	"math"
	"slices"
)

// Sample is the runs of one measurement.
type Sample []float64

// sorted returns a sorted copy.
func (s Sample) sorted() Sample {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// Median returns the median (the mean of the two middle values for an even
// count), 0 for no runs.
func (s Sample) Median() float64 {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	m := len(c) / 2
	if len(c)%2 == 1 {
		return c[m]
	}
	return (c[m-1] + c[m]) / 2
}

// Min is the smallest run, 0 for no runs.
func (s Sample) Min() float64 {
	if len(s) == 0 {
		return 0
	}
	return slices.Min(s)
}

// Max is the largest run, 0 for no runs.
func (s Sample) Max() float64 {
	if len(s) == 0 {
		return 0
	}
	return slices.Max(s)
}

// Scale multiplies every run by f.
func (s Sample) Scale(f float64) Sample {
	out := make(Sample, len(s))
	for i, v := range s {
		out[i] = v * f
	}
	return out
}

// fitExponent fits t = c * n^k by least squares on logarithms and returns k.
// Points with t <= 0 are left out; with fewer than two left k is NaN.
func fitExponent(ns []int, ts []float64) float64 {
	var sx, sy, sxx, sxy float64
	k := 0
	for i := range ns {
		if ts[i] <= 0 {
			continue
		}
		x, y := math.Log(float64(ns[i])), math.Log(ts[i])
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
		k++
	}
	if k < 2 {
		return math.NaN()
	}
	n := float64(k)
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// growth is the exponent of fitExponent over the sizes where get has a
// measurement (a positive value); ok is false below three such sizes.
func growth(sizes []int, get func(n int) float64) (k float64, ok bool) {
	var xs []int
	var ts []float64
	for _, n := range sizes {
		if v := get(n); v > 0 {
			xs, ts = append(xs, n), append(ts, v)
		}
	}
	if len(xs) < 3 {
		return math.NaN(), false
	}
	return fitExponent(xs, ts), true
}

// quotient is a / b, NaN unless both are positive.
func quotient(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return math.NaN()
	}
	return a / b
}

// cutPercent is how much smaller v is than base, in percent; NaN without a base.
func cutPercent(base, v float64) float64 {
	if base <= 0 {
		return math.NaN()
	}
	return 100 * (1 - v/base)
}
