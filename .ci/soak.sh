#!/usr/bin/env bash
# The ledger simulation's soak run (`make soak`): TestLedgerSimulation with
# PAYSVC_SIM_SEEDS_EMBEDDED seeds on the embedded store (default 10,000) and
# PAYSVC_SIM_SEEDS_DYNAMO on DynamoDB (default 1,000), without the race detector
# (`make test` runs the simulation's smaller counts with it).
#
# The DynamoDB seeds run in chunks of PAYSVC_SIM_DYNAMO_CHUNK (default 100),
# each against a moto_server of its own started as .ci/test.sh does: one
# moto process keeps about 20 MB per seed after the seed's table is deleted,
# so 1,000 seeds in one process need ~20 GB. PAYSVC_SIM_DYNAMO_PARALLEL
# chunks (default 1) run at once — moto serves one call at a time on one
# core, so a machine with cores to spare runs 2 or more; a chunk's output is
# printed when it ends. PAYSVC_SIM_DYNAMO_FROM (default 1) is the first
# DynamoDB seed (to run a range again). When PAYSVC_TEST_AWS_ENDPOINT points
# at a moto already running, every chunk uses that one.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v moto_server >/dev/null 2>&1; then
  echo "soak.sh: 'moto_server' is not installed: python3 -m pip install 'moto[server]'" >&2
  exit 1
fi

embedded="${PAYSVC_SIM_SEEDS_EMBEDDED:-10000}"
dynamo="${PAYSVC_SIM_SEEDS_DYNAMO:-1000}"
chunk="${PAYSVC_SIM_DYNAMO_CHUNK:-100}"
parallel="${PAYSVC_SIM_DYNAMO_PARALLEL:-1}"
first="${PAYSVC_SIM_DYNAMO_FROM:-1}"
quiet='^\s*(=== RUN|--- PASS: TestLedgerSimulation/[a-z]+/seed=)'
sim() { go test -count=1 -timeout 6h -run '^TestLedgerSimulation$' -v ./tests/ | { grep -v -E "$quiet" || true; }; }

start=$(date +%s)
if [ "$embedded" -gt 0 ]; then
  echo "== ledger simulation: $embedded seeds on the embedded store"
  PAYSVC_SIM_SEEDS_EMBEDDED="$embedded" PAYSVC_SIM_SEEDS_DYNAMO=0 sim
  echo "== embedded store: $(( $(date +%s) - start )) s"
fi

# chunk FROM N: DynamoDB seeds FROM … FROM+N-1 against a moto of their own.
run_chunk() (
  source .ci/moto.sh
  PAYSVC_SIM_SEEDS_EMBEDDED=0 PAYSVC_SIM_SEEDS_DYNAMO="$2" PAYSVC_SIM_SEEDS_FROM="$1" sim
)

last=$(( first + dynamo - 1 ))
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
from=$first
pids=()
while [ "$from" -le "$last" ]; do
  n=$(( last - from + 1 )); [ "$n" -gt "$chunk" ] && n=$chunk
  echo "== ledger simulation: DynamoDB seeds $from … $(( from + n - 1 )) of $first … $last"
  if [ "$parallel" -le 1 ]; then
    run_chunk "$from" "$n"
  else
    run_chunk "$from" "$n" >"$logs/$from.log" 2>&1 &
    pids+=("$!:$from")
    if [ "${#pids[@]}" -ge "$parallel" ]; then
      p=${pids[0]}; pids=("${pids[@]:1}")
      if ! wait "${p%%:*}"; then failed=1; fi
      cat "$logs/${p##*:}.log"
    fi
  fi
  from=$(( from + n ))
done
for p in "${pids[@]}"; do
  if ! wait "${p%%:*}"; then failed=1; fi
  cat "$logs/${p##*:}.log"
done
if [ "$failed" -ne 0 ]; then
  echo "== soak: a DynamoDB chunk failed (above)" >&2
  exit 1
fi
echo "== soak: $embedded embedded + $dynamo DynamoDB seeds passed in $(( $(date +%s) - start )) s"
