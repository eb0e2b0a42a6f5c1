package problem_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshscope/terraform-provider-meshscope/internal/problem"

	// The packages that define codes: importing them registers their definitions.
	_ "github.com/meshscope/terraform-provider-meshscope/internal/scope"
)

var update = flag.Bool("update", false, "rewrite CODES.md from the definitions")

// TestCatalogue checks that CODES.md at the top of the repository is what the definitions
// render, so that the catalogue never drifts from the code.
func TestCatalogue(t *testing.T) {
	path := filepath.Join("..", "..", "CODES.md")
	want := problem.Catalogue(problem.All())
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./internal/problem -update", err)
	}
	if string(got) != want {
		t.Fatalf("CODES.md is stale: run go test ./internal/problem -update")
	}
}

// TestDefinitions checks every definition: a Title Case summary, a package, and a meaning.
func TestDefinitions(t *testing.T) {
	all := problem.All()
	if len(all) == 0 {
		t.Fatal("no codes are defined")
	}
	for _, d := range all {
		if d.Summary == "" || d.Meaning == "" || d.Package == "" {
			t.Errorf("%s: summary %q, package %q, meaning %q: none may be empty", d.Code, d.Summary, d.Package, d.Meaning)
		}
		for _, w := range strings.Fields(d.Summary) {
			if w[0] < 'A' || w[0] > 'Z' {
				t.Errorf("%s: summary %q is not in Title Case (%q)", d.Code, d.Summary, w)
			}
		}
		if got, ok := problem.Lookup(d.Code); !ok || got != d {
			t.Errorf("%s: Lookup gives %+v, %t", d.Code, got, ok)
		}
	}
}

// TestDefineRefusesRepeatsAndMalformedCodes pins the panics that keep a code to one meaning.
func TestDefineRefusesRepeatsAndMalformedCodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  problem.Code
		level problem.Level
	}{
		{"malformed", "MS12", problem.Error},
		{"no prefix", "XX1234", problem.Error},
		{"bad level", "MS9998", "fatal"},
		{"repeated", problem.All()[0].Code, problem.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Define(%q, %q) did not panic", tc.code, tc.level)
				}
			}()
			problem.Define(tc.code, tc.level, "test", "Test Problem", "for a test")
		})
	}
}
