#!/usr/bin/env bash
# The project's test command (README: `make test`; CI: .ci/run).
# Checks the tools the tests need (installs Chromium when it is missing and
# it may: .ci/chromium.sh), starts two moto_servers (one for the
# end-to-end tests in ./tests, one for every other package), then runs
# formatting, vet, the template checks, every Go test with the race
# detector and the benchmarks in smoke mode, and the fuzz targets briefly.
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "test.sh: '$1' is not installed: $2" >&2
    exit 1
  fi
}
need go "install Go 1.26+ from https://go.dev/dl/"
need moto_server "python3 -m pip install 'moto[server]' (DynamoDB/SQS/Secrets Manager tests run against it)"
need cfn-lint "python3 -m pip install cfn-lint (template.yaml is linted)"
need python3 "python3 with aws-sam-translator (pip install aws-sam-translator)"
need aws "apt-get install -y awscli, or python3 -m pip install awscli (docs/runbook.md's commands are run against moto)"
need jq "apt-get install -y jq (docs/runbook.md's commands use it)"
# The browser test (tests/browser_test.go) drives the simulator's shopper
# pages in headless Chromium: installed here when missing and this user may
# (root, or sudo without a password); otherwise the command to run is printed.
bash .ci/chromium.sh

echo "== go test -race ./tests/... (started now, in the background)"
# The end-to-end tests (./tests/...: some 6 minutes, much of it waiting on
# moto, which serves one call at a time on one core) run beside every other
# step, from the start, against a moto of their own (or the one
# PAYSVC_TEST_AWS_ENDPOINT names), so the two cores stay busy; their output
# comes last. A failing step does not stop the others: the run fails at the
# end, naming every step that failed.
user_endpoint="${PAYSVC_TEST_AWS_ENDPOINT:-}"
source .ci/moto.sh # the other packages' (first: failing to start it starts nothing)
e2e_log=$(mktemp)
(
  if [ -z "$user_endpoint" ]; then unset PAYSVC_TEST_AWS_ENDPOINT; fi
  source .ci/moto.sh >/dev/null
  go test -race -count=1 -timeout 20m ./tests/...
) >"$e2e_log" 2>&1 &
e2e_pid=$!
failed=()
step() { # step NAME COMMAND...: runs it, noting a failure
  local name=$1
  shift
  "$@" || failed+=("$name")
}

echo "== gofmt"
gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(find . -name '*.go' -not -path './.paysvc/*' -not -path './.aws-sam/*'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:" >&2
    echo "$unformatted" >&2
    return 1
  fi
}
step "gofmt" gofmt_check

# The Go client is its own module (shared/client/go.mod): ./... of the
# service's module does not reach it, so it is vetted and tested in its
# own directory, as a merchant's build sees it. Vet builds the packages in
# the race detector's configuration, which the tests then reuse (a plain
# vet compiled the module a second time: some 80 s of CPU on a clean
# clone); the race build tag selects only tests/race_on_test.go over
# race_off_test.go, a constant each.
echo "== go vet"
step "go vet" go vet -race ./...
step "go vet (client module)" bash -c 'cd shared/client && go vet -race ./...'

echo "== template (cfn-lint + SAM transform)"
step "template checks" bash .ci/check-template.sh

echo "== go test -race"
# (The capacity model's replays of the recorded calls run in
# cmd/paysvc-bench's tests, where they are recorded: one second at the full
# rate, some 7 s with the race detector.)
pkgs=$(go list ./... | grep -v -e '/paysvc/tests')
step "go test -race (packages)" go test -race -count=1 -timeout 20m $pkgs
echo "== go test -race (the client module)"
step "go test -race (client module)" bash -c 'cd shared/client && go test -race -count=1 -timeout 5m ./...'

# The benchmarks, a few iterations each: a smoke check that they compile
# and work. With the race detector, so that the packages built for the
# tests serve (a clean clone builds everything afresh: a build without it
# would compile the module a second time); -bench runs one package at a
# time, so it is a step of its own, beside the end-to-end tests.
echo "== benchmarks (smoke: a few iterations, to keep them compiling and working)"
bench_smoke() { go test -race -count=1 -run '^$' -bench . -benchtime 3x -timeout 10m $pkgs >/dev/null; }
step "benchmarks (smoke)" bench_smoke

echo "== fuzz targets (each briefly; FUZZTIME=10m bash .ci/fuzz.sh for a long run)"
step "fuzz targets" bash .ci/fuzz.sh

echo "== go test -race ./tests/... (the end-to-end tests, run beside the steps above)"
wait "$e2e_pid" || failed+=("go test -race ./tests/...")
cat "$e2e_log"
rm -f "$e2e_log"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" >&2
  exit 1
fi

echo "== all checks passed"
