#!/usr/bin/env bash
# The ledger simulation's soak run (`make soak`): TestLedgerSimulation with
# PAYSVC_SIM_SEEDS_EMBEDDED seeds on the embedded store (default 10,000) and
# PAYSVC_SIM_SEEDS_DYNAMO on DynamoDB (default 1,000), without the race
# detector (`make test` runs the simulation's smaller counts with it).
#
# The DynamoDB seeds run in chunks of PAYSVC_SIM_DYNAMO_CHUNK (default 100),
# each against a moto_server of its own started as .ci/test.sh does: one
# moto process keeps about 20 MB per seed after the seed's table is deleted,
# so 1,000 seeds in one process need ~20 GB. When PAYSVC_TEST_AWS_ENDPOINT
# points at a moto already running, every chunk uses that one.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v moto_server >/dev/null 2>&1; then
  echo "soak.sh: 'moto_server' is not installed: python3 -m pip install 'moto[server]'" >&2
  exit 1
fi

embedded="${PAYSVC_SIM_SEEDS_EMBEDDED:-10000}"
dynamo="${PAYSVC_SIM_SEEDS_DYNAMO:-1000}"
chunk="${PAYSVC_SIM_DYNAMO_CHUNK:-100}"
quiet='^\s*(=== RUN|--- PASS: TestLedgerSimulation/[a-z]+/seed=)'
sim() { go test -count=1 -timeout 6h -run '^TestLedgerSimulation$' -v ./tests/ | { grep -v -E "$quiet" || true; }; }

start=$(date +%s)
if [ "$embedded" -gt 0 ]; then
  echo "== ledger simulation: $embedded seeds on the embedded store"
  PAYSVC_SIM_SEEDS_EMBEDDED="$embedded" PAYSVC_SIM_SEEDS_DYNAMO=0 sim
  echo "== embedded store: $(( $(date +%s) - start )) s"
fi
from=1
while [ "$from" -le "$dynamo" ]; do
  n=$(( dynamo - from + 1 )); [ "$n" -gt "$chunk" ] && n=$chunk
  echo "== ledger simulation: DynamoDB seeds $from … $(( from + n - 1 )) of $dynamo"
  (
    source .ci/moto.sh
    PAYSVC_SIM_SEEDS_EMBEDDED=0 PAYSVC_SIM_SEEDS_DYNAMO="$n" PAYSVC_SIM_SEEDS_FROM="$from" sim
  )
  from=$(( from + n ))
done
echo "== soak: $embedded embedded + $dynamo DynamoDB seeds passed in $(( $(date +%s) - start )) s"
