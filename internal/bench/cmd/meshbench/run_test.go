package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseBench(t *testing.T) {
	out := []byte(`goos: linux
goarch: amd64
BenchmarkLoad/services=1000-2         	       1	 249700000 ns/op	      3106 objects	 1234 B/op	 56 allocs/op
BenchmarkPredictAll/services=1000/policy=none-2   	       3	 347300000 ns/op	       173.6 ns/proxy	      2012 clusters/proxy
BenchmarkIstioClusters/services=1000/policy=none 	      20	  36700000 ns/op	 6.5 setup-s
--- FAIL: BenchmarkBroken
BenchmarkNotANumber-2 	 x 	 1 ns/op
PASS
`)
	want := []BenchLine{
		{Name: "BenchmarkLoad/services=1000", N: 1, Values: map[string]float64{"ns/op": 249700000, "objects": 3106, "B/op": 1234, "allocs/op": 56}},
		{Name: "BenchmarkPredictAll/services=1000/policy=none", N: 3, Values: map[string]float64{"ns/op": 347300000, "ns/proxy": 173.6, "clusters/proxy": 2012}},
		{Name: "BenchmarkIstioClusters/services=1000/policy=none", N: 20, Values: map[string]float64{"ns/op": 36700000, "setup-s": 6.5}},
	}
	got := parseBench(out)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseBench =\n%+v\nwant\n%+v", got, want)
	}
	if v := values(append(got, got[1]), "BenchmarkPredictAll/services=1000/policy=none", "ns/proxy"); !reflect.DeepEqual(v, Sample{173.6, 173.6}) {
		t.Errorf("values = %v", v)
	}
}

func TestMeasureExec(t *testing.T) {
	var out, errb bytes.Buffer
	if err := measureExec([]string{"sh", "-c", "printf 12345; echo oops >&2; exit 3"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var m execMeasurement
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if m.ExitCode != 3 || m.OutputBytes != 5 || m.MaxRSSBytes <= 0 || m.WallNs <= 0 {
		t.Errorf("measurement %+v, want exit 3, 5 bytes of output and a peak RSS", m)
	}
	if errb.String() != "oops\n" {
		t.Errorf("stderr %q, want it passed on", errb.String())
	}
	if err := measureExec([]string{"/nonexistent/command"}, &out, &errb); err == nil {
		t.Error("a command that cannot start: no error")
	}
	if err := measureExec(nil, &out, &errb); err == nil {
		t.Error("no command: no error")
	}
}

// TestRunCmdSumsChildrenOfOneName checks that the CPU of descendants that run
// one after the other under the same name adds up, as Terraform's provider
// processes do (one per graph walk), instead of the last one standing for all.
func TestRunCmdSumsChildrenOfOneName(t *testing.T) {
	const burn = `sh -c 'i=0; while [ $i -lt 600000 ]; do i=$((i+1)); done'`
	childCPU := func(children int) time.Duration {
		script := strings.Repeat(burn+"; ", children) + "true"
		r, err := runCmd(exec.Command("sh", "-c", script), io.Discard, true)
		if err != nil {
			t.Fatal(err)
		}
		return r.ChildCPU["sh"]
	}
	one, three := childCPU(1), childCPU(3)
	if one <= 0 {
		t.Fatalf("one child: no CPU sampled")
	}
	// Each child loses up to a sampling period (100 ms) after its last sample, more on a busy
	// machine (three children measured 2.14s against 1.09s for one there). Without the sum, three
	// would count as one: 1.5 times keeps the two apart.
	if three < one*3/2 {
		t.Errorf("three children in turn: %v of CPU, one child: %v; want about three times as much", three, one)
	}
}
