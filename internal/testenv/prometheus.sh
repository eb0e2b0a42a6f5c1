#!/usr/bin/env bash
# `make prometheus`: the prometheus and promtool binaries that StartPrometheus (prometheus.go)
# runs, from Debian's prometheus package (bookworm: 2.42). Installs the package only when either
# binary is missing from PATH, then prints both versions. Nothing here starts Prometheus: the
# tests start their own, on free loopback ports.
set -euo pipefail

# missing prints the names of the binaries not on PATH, on one line; nothing when both are.
missing() {
  local b out=""
  for b in prometheus promtool; do
    if ! command -v "$b" >/dev/null 2>&1; then
      out="$out${out:+ }$b"
    fi
  done
  echo "$out"
}

need=$(missing)
if [ -n "$need" ]; then
  echo "prometheus.sh: not on PATH: $need; installing Debian's prometheus package" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "prometheus.sh: no apt-get; install Prometheus 2.x (prometheus and promtool) on PATH by hand" >&2
    exit 1
  fi
  sudo=""
  if [ "$EUID" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "prometheus.sh: not root and no sudo; run as root: apt-get update && apt-get install -y prometheus" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  # The package's maintainer scripts start the prometheus service where an init system runs.
  # Unless the machine already has a policy (as container images do), forbid that for the
  # duration of the install: the tests need the binaries, not a server on :9090.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# prometheus.sh: no service starts during this install\nexit 101\n' |
      $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    trap '$sudo rm -f "$policy"' EXIT
  fi
  # No recommends: they would add prometheus-node-exporter, another service.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
  hash -r
  need=$(missing)
  if [ -n "$need" ]; then
    echo "prometheus.sh: still not on PATH after installing the prometheus package: $need" >&2
    exit 1
  fi
fi

# Not `prometheus --version | head -n 1`: under pipefail, head closing the pipe early could fail it.
v=$(prometheus --version 2>&1)
echo "${v%%$'\n'*} ($(command -v prometheus))"
v=$(promtool --version 2>&1)
echo "${v%%$'\n'*} ($(command -v promtool))"
