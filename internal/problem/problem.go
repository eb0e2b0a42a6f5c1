// Package problem gives every problem meshscope reports a stable code, as Istio's analyzers
// do (pkg/config/analysis/msg/messages.yaml: IST0110, a level and a template). A domain
// package declares its codes with Define and returns facts with them; the provider and the
// command line match codes, never the wording, and each words its own remedy. The catalogue
// of every code, CODES.md at the top of the repository, is rendered from the definitions.
package problem

import (
	"fmt"
	"regexp"
	"sync"
)

// Level is how serious a problem is when a surface reports it as it is.
type Level string

const (
	Error   Level = "error"
	Warning Level = "warning"
)

// Code identifies one kind of problem: "MS" and four digits. The first digit names the
// package that reports it: 1 the compiler (scope), 2 the evidence (traffic), 3 the review.
type Code string

// Definition is one entry of the catalogue.
type Definition struct {
	Code  Code
	Level Level
	// Summary is the Title Case summary every surface shows.
	Summary string
	// Package is the domain package that reports it.
	Package string
	// Meaning says what the problem means and what mends it, in the domain's terms.
	Meaning string
}

var (
	mu      sync.Mutex
	defined = map[Code]Definition{}
	codeRE  = regexp.MustCompile(`^MS[1-9][0-9]{3}$`)
)

// Define registers a code; it panics at package initialisation on a malformed or repeated
// code, so that a catalogue with two meanings for one code never builds.
func Define(code Code, level Level, pkg, summary, meaning string) Code {
	if !codeRE.MatchString(string(code)) {
		panic(fmt.Sprintf("problem: malformed code %q", code))
	}
	if level != Error && level != Warning {
		panic(fmt.Sprintf("problem: code %s has level %q", code, level))
	}
	mu.Lock()
	defer mu.Unlock()
	if d, ok := defined[code]; ok {
		panic(fmt.Sprintf("problem: code %s defined twice (%q and %q)", code, d.Summary, summary))
	}
	defined[code] = Definition{Code: code, Level: level, Summary: summary, Package: pkg, Meaning: meaning}
	return code
}

// Lookup returns the definition of a code.
func Lookup(c Code) (Definition, bool) {
	mu.Lock()
	defer mu.Unlock()
	d, ok := defined[c]
	return d, ok
}

// Summary is the code's summary, or the code itself when it is not defined.
func (c Code) Summary() string {
	if d, ok := Lookup(c); ok {
		return d.Summary
	}
	return string(c)
}

// All returns every defined code, sorted.
func All() []Definition {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Definition, 0, len(defined))
	for _, d := range defined {
		out = append(out, d)
	}
	sortDefinitions(out)
	return out
}
