#!/usr/bin/env bash
# The ledger simulation's soak run (`make soak`): TestLedgerSimulation with
# PAYSVC_SIM_SEEDS_EMBEDDED seeds on the embedded store (default 10,000) and
# PAYSVC_SIM_SEEDS_DYNAMO on DynamoDB (default 1,000), without the race
# detector (`make test` runs the simulation's smaller counts with it). Starts
# one moto_server as .ci/test.sh does, unless PAYSVC_TEST_AWS_ENDPOINT points
# at one.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v moto_server >/dev/null 2>&1; then
  echo "soak.sh: 'moto_server' is not installed: python3 -m pip install 'moto[server]'" >&2
  exit 1
fi

source .ci/moto.sh

export PAYSVC_SIM_SEEDS_EMBEDDED="${PAYSVC_SIM_SEEDS_EMBEDDED:-10000}"
export PAYSVC_SIM_SEEDS_DYNAMO="${PAYSVC_SIM_SEEDS_DYNAMO:-1000}"
echo "== ledger simulation: $PAYSVC_SIM_SEEDS_EMBEDDED seeds on the embedded store, $PAYSVC_SIM_SEEDS_DYNAMO on DynamoDB"
go test -count=1 -timeout 6h -run '^TestLedgerSimulation$' -v ./tests/ | grep -v -E '^\s*(=== RUN|--- PASS: TestLedgerSimulation/[a-z]+/seed=)'
