package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestResultsRoundTrip(t *testing.T) {
	r := &Results{
		Run:    RunInfo{Quick: true, Count: 5, Work: "/work", DurationNs: 123},
		Meshes: []MeshGen{{Services: 100, GenerateNs: 1e8}},
		Speed:  Speed{Sizes: []int{100}, Predictions: []Prediction{{Services: 100, Policy: "none", PerProxyNs: Sample{1.5, 2.5}}}},
		Diff:   &Diff{Services: 100, Formats: []DiffFormat{{Format: "json", Runs: []DiffRun{{WallNs: 5, PeakRSSBytes: 6, OutputBytes: 7}}}}},
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteResults(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != SchemaVersion {
		t.Errorf("schema_version %d, want %d", got.SchemaVersion, SchemaVersion)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, r)
	}
}

func TestReadResultsStrict(t *testing.T) {
	for _, tc := range []struct {
		name, json, err string
	}{
		{"other schema version", `{"schema_version": 2}`, "schema_version 2, this meshbench reads 1"},
		{"no schema version", `{"run": {}}`, "schema_version 0"},
		{"unknown field", `{"schema_version": 1, "runs": {}}`, `unknown field "runs"`},
		{"not JSON", `# Benchmarks`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadResults(path)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.err)
			}
		})
	}
}
