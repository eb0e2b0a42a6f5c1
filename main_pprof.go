//go:build meshscope_pprof

// A profiling build of the provider, for `make bench`: built with
// -tags meshscope_pprof, it writes a CPU profile of each provider process to
// $MESHSCOPE_CPU_PROFILE.<pid> when that variable is set. Release builds have
// no such hook.

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func init() {
	path := os.Getenv("MESHSCOPE_CPU_PROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
	if err != nil {
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return
	}
	atExit = func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
