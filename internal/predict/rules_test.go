package predict

import (
	"io/fs"
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

// catalogueEntry is one "### R<n>: " entry of RULES.md.
type catalogueEntry struct {
	id          int
	notModelled bool
	// fields are the values of its "- istiod:", "- Istio:", "- meshscope:" and "- tests:" lines.
	fields map[string]string
	text   string
}

// catalogueFields are the fields every entry has, in this order.
var catalogueFields = []string{"istiod", "Istio", "meshscope", "tests"}

var (
	entryHeading = regexp.MustCompile(`^### R(\d+): `)
	entryField   = regexp.MustCompile(`^- (istiod|Istio|meshscope|tests):(.*)$`)
	// testName finds the test functions an entry cites (TestPredictGolden, TestSwitches).
	testName = regexp.MustCompile(`\bTest[A-Z0-9_]\w*`)
	testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	quoted   = regexp.MustCompile(`"([^"]*)"`)
)

// parseCatalogue reads the entries of RULES.md; an entry ends at the next heading.
func parseCatalogue(t *testing.T) []*catalogueEntry {
	t.Helper()
	b, err := os.ReadFile("RULES.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []*catalogueEntry
	var cur *catalogueEntry
	for _, line := range strings.Split(string(b), "\n") {
		if m := entryHeading.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			cur = &catalogueEntry{id: n, fields: map[string]string{}}
			out = append(out, cur)
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		cur.text += line + "\n"
		if strings.HasPrefix(line, "*Not modelled") {
			cur.notModelled = true
		}
		if m := entryField.FindStringSubmatch(line); m != nil {
			if _, dup := cur.fields[m[1]]; dup {
				t.Errorf("RULES.md: R%d has two %q fields", cur.id, m[1])
			}
			cur.fields[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out
}

// repoTestFuncs returns the Test functions declared in the repository's *_test.go files.
func repoTestFuncs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// caseFiles are the files holding the named cases of a table-driven test, as `name: "..."`.
var caseFiles = map[string]string{
	"TestHandWritten":   "../conformance/handwritten_test.go",
	"TestListenerCases": "../conformance/lds_test.go",
	"TestPredictGolden": "predict_test.go",
}

// TestRuleCatalogue pins the rule catalogue to the tests and the code: every rule a test cites
// has an entry in RULES.md and a tag in the code of the predictor, the compiler or the packages
// they share; every entry that is not marked "Not modelled" is tagged too. Every entry has its
// four fields; a modelled one cites tests, every test function it cites exists in a *_test.go
// file of the repository, and every case of TestHandWritten or TestPredictGolden it cites exists.
func TestRuleCatalogue(t *testing.T) {
	entries := map[int]bool{}
	notModelled := map[int]bool{}
	catalogue := parseCatalogue(t)
	funcs := repoTestFuncs(t)
	caseSrc := map[string]string{}
	for fn, f := range caseFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		caseSrc[fn] = string(b)
	}
	for _, e := range catalogue {
		if entries[e.id] {
			t.Errorf("RULES.md: R%d has two entries", e.id)
		}
		entries[e.id] = true
		notModelled[e.id] = e.notModelled
		for _, f := range catalogueFields {
			if e.fields[f] == "" {
				t.Errorf("RULES.md: R%d has no %q field, or an empty one", e.id, f)
			}
		}
		tests := e.fields["tests"]
		if !e.notModelled && tests == "none" {
			t.Errorf("RULES.md: R%d is modelled but cites no tests; add one or mark it \"Not modelled\"", e.id)
		}
		for _, fn := range testName.FindAllString(e.text, -1) {
			if !funcs[fn] {
				t.Errorf("RULES.md: R%d cites %s, which no *_test.go file of the repository declares", e.id, fn)
			}
		}
		// Each "; "-separated citation names one package's tests: `TestX` cases "a", "b".
		for _, cite := range strings.Split(tests, ";") {
			for fn, src := range caseSrc {
				if !strings.Contains(cite, "`"+fn+"` cases") {
					continue
				}
				names := quoted.FindAllStringSubmatch(cite, -1)
				if len(names) == 0 {
					t.Errorf("RULES.md: R%d cites %s cases but names none", e.id, fn)
				}
				for _, m := range names {
					if !strings.Contains(src, "name: "+strconv.Quote(m[1])) {
						t.Errorf("RULES.md: R%d cites %s case %q, which %s does not have", e.id, fn, m[1], caseFiles[fn])
					}
				}
			}
		}
	}
	if len(catalogue) < 40 {
		t.Errorf("found %d entries in RULES.md; the parser is broken", len(catalogue))
	}

	var code []string
	for _, dir := range []string{".", "../istioconfig", "../scope", "../mesh"} {
		code = append(code, goFiles(t, dir, false)...)
	}
	tagged := ruleIDs(t, code...)
	tests := append(goFiles(t, ".", true), goFiles(t, "../istioconfig", true)...)
	tests = append(tests, "../conformance/handwritten_test.go", "../conformance/lds_test.go")
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
