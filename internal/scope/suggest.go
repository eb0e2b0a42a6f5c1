package scope

import (
	"sort"
	"strings"
)

// suggest returns " Did you mean X, Y?" for the known names closest to s, or "".
func suggest(s string, known []string) string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	ls := strings.ToLower(s)
	for _, k := range known {
		d := levenshtein(ls, strings.ToLower(k))
		// Also compare the first label, so "reviwes" finds "reviews.bookinfo".
		if first, _, ok := strings.Cut(k, "."); ok {
			if d2 := levenshtein(ls, strings.ToLower(first)); d2 < d {
				d = d2
			}
		}
		limit := len(s)/3 + 1
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
	if len(cands) == 0 {
		return ""
	}
	if len(cands) > 3 {
		cands = cands[:3]
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = "\"" + c.name + "\""
	}
	return " Did you mean " + strings.Join(names, ", ") + "?"
}

func levenshtein(a, b string) int {
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
