package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// dur formats nanoseconds with a unit that suits them; "–" for none.
func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case ns <= 0 || math.IsNaN(ns):
		return "–"
	case d < time.Microsecond:
		return fmt.Sprintf("%.0f ns", ns)
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.2f s", ns/1e9)
	}
}

// spread is the median of durations in nanoseconds with their range.
func spread(s Sample) string {
	if len(s) < 2 {
		return dur(s.Median())
	}
	return fmt.Sprintf("%s (%s–%s)", dur(s.Median()), dur(s.Min()), dur(s.Max()))
}

// ratio formats a / b as a factor: one decimal below 10, "–" unless both are positive.
func ratio(a, b float64) string {
	x := quotient(a, b)
	switch {
	case math.IsNaN(x):
		return "–"
	case x < 10:
		return fmt.Sprintf("%.1f×", x)
	default:
		return fmt.Sprintf("%.0f×", x)
	}
}

// met is a target's verdict.
func met(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	return strings.Join(append([]string{s}, out...), ",")
}

// joinInts formats sizes as "1,000, 2,000, 5,000".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = thousands(n)
	}
	return strings.Join(s, ", ")
}

// mib formats bytes in whole MiB.
func mib(bytes int64) string { return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20)) }

// cutString is the cut of v from base ("−99.27%"), "—" for base itself and
// "–" without a base.
func cutString(base, v float64) string {
	switch {
	case base <= 0:
		return "–"
	case v == base:
		return "—"
	default:
		return fmt.Sprintf("−%.2f%%", cutPercent(base, v))
	}
}

// size formats a number of bytes in B, KiB or MiB.
func size(bytes int64) string {
	switch {
	case bytes >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
	case bytes >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(bytes)/(1<<10))
	default:
		return fmt.Sprintf("%d B", bytes)
	}
}
