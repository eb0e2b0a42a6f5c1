package main

import (
	"math"
	"testing"
)

func TestDur(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{0, "–"}, {-5, "–"}, {math.NaN(), "–"},
		{999, "999 ns"}, {1000, "1.0 µs"}, {24_400, "24.4 µs"}, {999_949, "999.9 µs"},
		{1e6, "1.0 ms"}, {488.9e6, "488.9 ms"}, {1e9, "1.00 s"}, {35.98e9, "35.98 s"},
	} {
		if got := dur(tc.ns); got != tc.want {
			t.Errorf("dur(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		s    Sample
		want string
	}{
		{nil, "–"},
		{Sample{2e6}, "2.0 ms"},
		{Sample{3e6, 1e6, 2e6}, "2.0 ms (1.0 ms–3.0 ms)"},
	} {
		if got := spread(tc.s); got != tc.want {
			t.Errorf("spread(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b float64
		want string
	}{
		{352.6e6, 1.8e6, "196×"},
		{840.8e3, 24.4e3, "34×"},
		{12.8, 5.1, "2.5×"},
		{9.99, 1, "10.0×"}, // below 10 before rounding: one decimal
		{10, 1, "10×"},
		{1, 3, "0.3×"},
		{0, 1, "–"}, {1, 0, "–"}, {-1, 1, "–"},
	} {
		if got := ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 22200: "22,200", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := joinInts([]int{1000, 2000, 10000}); got != "1,000, 2,000, 10,000" {
		t.Errorf("joinInts = %q", got)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		bytes      int64
		mib, human string
	}{
		{0, "0 MiB", "0 B"},
		{1023, "0 MiB", "1023 B"},
		{59_000, "0 MiB", "57.6 KiB"},
		{10_700_000, "10 MiB", "10.2 MiB"},
		{512 << 20, "512 MiB", "512.0 MiB"},
	} {
		if got := mib(tc.bytes); got != tc.mib {
			t.Errorf("mib(%d) = %q, want %q", tc.bytes, got, tc.mib)
		}
		if got := size(tc.bytes); got != tc.human {
			t.Errorf("size(%d) = %q, want %q", tc.bytes, got, tc.human)
		}
	}
}

func TestCutString(t *testing.T) {
	for _, tc := range []struct {
		base, v float64
		want    string
	}{
		{2012, 14.8, "−99.26%"},
		{212, 29, "−86.32%"},
		{2012, 2012, "—"},
		{0, 14.8, "–"},
	} {
		if got := cutString(tc.base, tc.v); got != tc.want {
			t.Errorf("cutString(%v, %v) = %q, want %q", tc.base, tc.v, got, tc.want)
		}
	}
}

func TestMet_Verdicts(t *testing.T) {
	if met(true) != "**met**" || met(false) != "**not met**" {
		t.Fatal(met(true), met(false))
	}
}
