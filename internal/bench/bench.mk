# Benchmarks (issue 6): `make bench` measures the scope floor, the predictor against
# Istio's own config generator, and terraform plan, then prints a table and writes
# docs/benchmarks.md. Included from GNUmakefile. See internal/bench/cmd/meshbench.
#
#   make bench                         everything (about half an hour on 2 cores)
#   make bench BENCH_FLAGS=-quick      the same pipeline on small meshes
#   make testenv bench                 also plan against the test control plane's API server
#
# BENCH_WORK holds the meshes, binaries, raw outputs and profiles.

BENCH_WORK  ?= $(or $(TMPDIR),/tmp)/meshscope-bench
BENCH_FLAGS ?=

# Including this file never changes the default goal, wherever the include line stands.
_BENCH_DEFAULT_GOAL := $(.DEFAULT_GOAL)

bench:
	go run ./internal/bench/cmd/meshbench -work $(BENCH_WORK) -out docs/benchmarks.md $(BENCH_FLAGS)

.PHONY: bench

.DEFAULT_GOAL := $(_BENCH_DEFAULT_GOAL)
