package predict

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ruleID finds the rule IDs a text cites: R1 to R47, also inside "R15.1" or "R18b".
var ruleID = regexp.MustCompile(`\bR([1-9][0-9]?)(?:\b|\.|[a-z]\b)`)

func ruleIDs(t *testing.T, files ...string) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ruleID.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[1])
			out[n] = append(out[n], f)
		}
	}
	return out
}

func goFiles(t *testing.T, dir string, tests bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") == tests && filepath.Base(f) != "rules_test.go" {
			out = append(out, f)
		}
	}
	return out
}

// TestRuleCatalogue pins the rule catalogue to the tests and the code: every rule a test cites
// has an entry in RULES.md and a tag in the code of the predictor, the compiler or the packages
// they share; every entry that is not marked "Not modelled" is tagged too.
func TestRuleCatalogue(t *testing.T) {
	catalogue, err := os.ReadFile("RULES.md")
	if err != nil {
		t.Fatal(err)
	}
	entries := map[int]bool{}
	notModelled := map[int]bool{}
	var current int
	for _, line := range strings.Split(string(catalogue), "\n") {
		if m := regexp.MustCompile(`^### R(\d+): `).FindStringSubmatch(line); m != nil {
			current, _ = strconv.Atoi(m[1])
			if entries[current] {
				t.Errorf("RULES.md: R%d has two entries", current)
			}
			entries[current] = true
		}
		if strings.HasPrefix(line, "*Not modelled") {
			notModelled[current] = true
		}
	}

	var code []string
	for _, dir := range []string{".", "../istioconfig", "../scope", "../mesh"} {
		code = append(code, goFiles(t, dir, false)...)
	}
	tagged := ruleIDs(t, code...)
	tests := append(goFiles(t, ".", true), goFiles(t, "../istioconfig", true)...)
	tests = append(tests, "../conformance/handwritten_test.go")
	cited := ruleIDs(t, tests...)

	var ids []int
	for n := range cited {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	for _, n := range ids {
		if !entries[n] {
			t.Errorf("R%d is cited by %s but has no entry in RULES.md", n, cited[n][0])
		}
		if len(tagged[n]) == 0 {
			t.Errorf("R%d is cited by %s but tagged nowhere in the code", n, cited[n][0])
		}
	}
	for n := range entries {
		if !notModelled[n] && len(tagged[n]) == 0 {
			t.Errorf("R%d has an entry in RULES.md but no tag in the code; tag it or mark it \"Not modelled\"", n)
		}
	}
	if len(ids) < 30 {
		t.Errorf("found %d cited rules; the scan of the tests is broken", len(ids))
	}
}
