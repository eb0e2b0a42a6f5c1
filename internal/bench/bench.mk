# Benchmarks: `make bench` measures the scope floor, the predictor against Istio's own
# config generator, terraform plan, the diff command at mesh scale and the traffic
# evidence (a real Prometheus: `make prometheus` first), records the results in
# internal/bench/results.json and renders docs/benchmarks.md from them.
# Included from GNUmakefile. See internal/bench/cmd/meshbench.
#
#   make bench                         everything (about half an hour on 2 cores)
#   make bench BENCH_FLAGS=-quick      the same pipeline on small meshes
#   make testenv bench                 also plan, apply and destroy against the test control plane's API server
#   make bench-render                  docs/benchmarks.md again from the recorded results, without measuring
#
# BENCH_WORK holds the meshes, binaries, raw outputs and profiles. BENCH_BASELINE is the
# revision whose internal/predict and internal/mesh the profiles measure as "before": e85556c
# is the predictor before its performance fixes. Empty, the report has no "before".

BENCH_WORK     ?= $(or $(TMPDIR),/tmp)/meshscope-bench
BENCH_BASELINE ?= e85556c
BENCH_RESULTS  ?= internal/bench/results.json
BENCH_FLAGS    ?=

# Including this file never changes the default goal, wherever the include line stands.
_BENCH_DEFAULT_GOAL := $(.DEFAULT_GOAL)

bench: prometheus
	go run ./internal/bench/cmd/meshbench -work $(BENCH_WORK) -baseline '$(BENCH_BASELINE)' -results $(BENCH_RESULTS) -out docs/benchmarks.md $(BENCH_FLAGS)

bench-render:
	go run ./internal/bench/cmd/meshbench -render $(BENCH_RESULTS) -out docs/benchmarks.md

.PHONY: bench bench-render

.DEFAULT_GOAL := $(_BENCH_DEFAULT_GOAL)
