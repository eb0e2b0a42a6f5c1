// Package didyoumean finds the known names nearest to a misspelt one, for the "Did you mean"
// of an error message. It is shared by the loader, the compiler, the provider and the command
// line, so that every message suggests by the same measure.
package didyoumean

import (
	"sort"
	"strings"
)

// DidYouMean returns " Did you mean "x", "y"?" for at most three known names closest to s,
// ignoring case, or "". A dotted name also matches on its first label, so "reviwes" finds
// "reviews.bookinfo". A name is close when at most len(s)/3+1 edits away.
func DidYouMean(s string, known []string) string {
	names := Nearest(s, known, 3)
	if len(names) == 0 {
		return ""
	}
	for i, n := range names {
		names[i] = "\"" + n + "\""
	}
	return " Did you mean " + strings.Join(names, ", ") + "?"
}

// Nearest returns at most n known names closest to s, nearest first (see DidYouMean).
func Nearest(s string, known []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	ls := strings.ToLower(s)
	limit := len(s)/3 + 1
	for _, k := range known {
		d := Distance(ls, strings.ToLower(k))
		if first, _, ok := strings.Cut(k, "."); ok {
			if d2 := Distance(ls, strings.ToLower(first)); d2 < d {
				d = d2
			}
		}
		if d <= limit {
			cands = append(cands, cand{k, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	if len(cands) > n {
		cands = cands[:n]
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.name
	}
	return out
}

// Distance is the Levenshtein distance between a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
