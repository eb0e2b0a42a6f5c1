#!/usr/bin/env bash
# stress.sh RUNS: run the acceptance suite (`make testacc`) RUNS times in a row with a CPU-bound
# busy loop on every core beside it, as on a CI machine that is running something else. Stops at
# the first failing run. Prints each run's wall time and the load average sampled during it.
# The logs of each run are in $MESHSCOPE_TESTENV_DIR/stress/ (default /tmp/meshscope-testenv).
set -euo pipefail

runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "stress.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
state=${MESHSCOPE_TESTENV_DIR:-/tmp/meshscope-testenv}/stress
mkdir -p "$state"
cores=$(nproc)

pids=()
stop_load() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_load EXIT INT TERM

for ((i = 0; i < cores; i++)); do
  sh -c 'while :; do :; done' &
  pids+=("$!")
done
echo "stress: $cores busy loops started (pids ${pids[*]}), $runs runs of make testacc"

summary=()
for ((run = 1; run <= runs; run++)); do
  log=$state/run-$run.log
  samples=$state/run-$run.load
  : >"$samples"
  # The 1-minute load average every 10 s while the suite runs.
  (while :; do cut -d' ' -f1 /proc/loadavg >>"$samples"; sleep 10; done) &
  sampler=$!
  start=$SECONDS
  rc=0
  make --no-print-directory testacc >"$log" 2>&1 || rc=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  wall=$((SECONDS - start))
  load=$(sort -n "$samples" | awk '{ v[NR] = $1 } END { if (NR) printf "median %s, max %s over %d samples", v[int((NR + 1) / 2)], v[NR], NR }')
  if ((rc == 0)); then verdict=PASS; else verdict="FAIL (exit $rc)"; fi
  line="run $run/$runs: $verdict in ${wall}s; load average (1 min) $load; log $log"
  echo "stress: $line"
  summary+=("$line")
  if ((rc != 0)); then
    grep -E -- '^(--- FAIL|FAIL|ok|panic)|_test\.go:[0-9]+:' "$log" | tail -n 40 >&2 || true
    break
  fi
done

stop_load
echo "stress: summary ($cores cores, $cores busy loops):"
printf '  %s\n' "${summary[@]}"
[[ ${#summary[@]} -eq $runs && $rc -eq 0 ]]
