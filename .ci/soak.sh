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

if [ -z "${PAYSVC_TEST_AWS_ENDPOINT:-}" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  motolog=$(mktemp)
  moto_server -H 127.0.0.1 -p "$port" >"$motolog" 2>&1 &
  moto_pid=$!
  trap 'kill $moto_pid 2>/dev/null || true; rm -f "$motolog"' EXIT
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$port/moto-api/" >/dev/null 2>&1; then break; fi
    if ! kill -0 $moto_pid 2>/dev/null; then echo "moto_server failed:" >&2; cat "$motolog" >&2; exit 1; fi
    sleep 0.2
  done
  export PAYSVC_TEST_AWS_ENDPOINT="http://127.0.0.1:$port"
  echo "== moto_server on $PAYSVC_TEST_AWS_ENDPOINT"
fi

export PAYSVC_SIM_SEEDS_EMBEDDED="${PAYSVC_SIM_SEEDS_EMBEDDED:-10000}"
export PAYSVC_SIM_SEEDS_DYNAMO="${PAYSVC_SIM_SEEDS_DYNAMO:-1000}"
echo "== ledger simulation: $PAYSVC_SIM_SEEDS_EMBEDDED seeds on the embedded store, $PAYSVC_SIM_SEEDS_DYNAMO on DynamoDB"
go test -count=1 -timeout 6h -run '^TestLedgerSimulation$' -v ./tests/ | grep -v -E '^\s*(=== RUN|--- PASS: TestLedgerSimulation/[a-z]+/seed=)'
