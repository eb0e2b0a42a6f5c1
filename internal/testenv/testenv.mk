# The real control plane for acceptance tests: etcd, kube-apiserver and istiod built from source
# and started on 127.0.0.1 (see internal/testenv/README.md). Included from GNUmakefile.
#
#   make testenv         build (once per pinned version) and start; prints the kubeconfig path
#   make testenv-down    stop what `make testenv` started, by PID
#   make testenv-status  exit 0 when all three are up and ready
#   make testacc-stress  `make testacc` STRESS_RUNS times in a row (default 3) with a busy loop on
#                        every core beside it; prints wall times and load averages
#   make kind-up         kind + istioctl instead, where Docker exists (untested here)
#   make kind-down       delete that kind cluster
#   make prometheus      install Debian's prometheus package (prometheus, promtool) when either
#                        binary is missing, for StartPrometheus; prints both versions
#
# Binaries are cached in $(MESHSCOPE_TESTENV_CACHE) (default ~/.cache/meshscope-testenv); pids,
# logs, certificates and the kubeconfig are in $(MESHSCOPE_TESTENV_DIR) (default /tmp/meshscope-testenv).

TESTENV_SH := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))/testenv.sh
# Including this file never changes the default goal, wherever the include line stands.
_TESTENV_DEFAULT_GOAL := $(.DEFAULT_GOAL)

testenv:
	@bash $(TESTENV_SH) up

testenv-build:
	@bash $(TESTENV_SH) build

testenv-down:
	@bash $(TESTENV_SH) down

testenv-status:
	@bash $(TESTENV_SH) status

STRESS_RUNS ?= 3
testacc-stress: testenv
	@bash $(dir $(TESTENV_SH))stress.sh $(STRESS_RUNS)

kind-up:
	@bash $(TESTENV_SH) kind-up

kind-down:
	@bash $(TESTENV_SH) kind-down

prometheus:
	@bash $(dir $(TESTENV_SH))prometheus.sh

.PHONY: testenv testenv-build testenv-down testenv-status testacc-stress kind-up kind-down prometheus

.DEFAULT_GOAL := $(_TESTENV_DEFAULT_GOAL)
