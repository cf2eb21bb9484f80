#!/usr/bin/env bash
# The project's test command (README: `make test`; CI: .ci/run).
# Checks every tool the tests need first (installs Chromium when it is
# missing and it may: .ci/chromium.sh), starts two moto_servers (one for
# the end-to-end tests in ./tests, one for every other package), then runs
# formatting, vet, the template checks, every Go test with the race
# detector (the fuzz targets' seed corpora among them; `make fuzz`
# fuzzes) and the benchmarks in smoke mode. Each step says when it starts
# and how long it took; the end-to-end tests, run beside them, say each
# test as it ends. At the end: every step's time and the slowest tests.
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
need jq "apt-get install -y jq (docs/runbook.md's commands use it, and this script reads go test -json with it)"
need curl "apt-get install -y curl (moto_server's start is checked with it; the walk-through's commands use it)"
need make "apt-get install -y make (the README's walk-through runs make run and make admin)"
# The browser test (tests/browser_test.go) drives the simulator's shopper
# pages in headless Chromium: installed here when missing and this user may
# (root, or sudo without a password); otherwise the command to run is printed.
bash .ci/chromium.sh

start=$(date +%s)
since() { echo "$(($(date +%s) - start))s"; }
work=$(mktemp -d) # go test's JSON, for the summary (removed at the end)
timings=()

echo "== [$(since)] go test -race ./tests/... (started now, in the background; each test's end is printed as [e2e])"
# The end-to-end tests (./tests/...: much of it waiting on moto, which
# serves one call at a time on one core) run beside every other step, from
# the start, against a moto of their own (or the one
# PAYSVC_TEST_AWS_ENDPOINT names), so the two cores stay busy; what failed
# in them is printed last. A failing step does not stop the others: the
# run fails at the end, naming every step that failed.
user_endpoint="${PAYSVC_TEST_AWS_ENDPOINT:-}"
source .ci/moto.sh # the other packages' (first: failing to start it starts nothing)
e2e_start=$(date +%s)
(
  if [ -z "$user_endpoint" ]; then unset PAYSVC_TEST_AWS_ENDPOINT; fi
  source .ci/moto.sh >/dev/null
  GOTEST_FAILURES="$work/e2e-failures" bash .ci/gotest.sh "$work/e2e.json" e2e -race -count=1 -timeout 20m ./tests/...
) &
e2e_pid=$!
failed=()
step() { # step NAME COMMAND...: runs it, saying when it starts and how long it took, noting a failure
  local name=$1 t0
  shift
  t0=$(date +%s)
  echo "== [$(since)] $name"
  if "$@"; then
    echo "== [$(since)] $name: ok in $(($(date +%s) - t0))s"
  else
    failed+=("$name")
    echo "== [$(since)] $name: FAILED in $(($(date +%s) - t0))s"
  fi
  timings+=("$(($(date +%s) - t0))s  $name")
}

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
step "go vet" go vet -race ./...
step "go vet (client module)" bash -c 'cd shared/client && go vet -race ./...'

step "template checks (cfn-lint + SAM transform)" bash .ci/check-template.sh

# (The capacity model's replays of the recorded calls run in
# cmd/paysvc-bench's tests, where they are recorded: one second at the full
# rate, some 7 s with the race detector.) The fuzz targets' seed corpora
# run here, as tests; fuzzing itself (an instrumented build of each
# package: minutes of compiling) is `make fuzz`.
pkgs=$(go list ./... | grep -v -e '/paysvc/tests')
step "go test -race (packages)" bash .ci/gotest.sh "$work/packages.json" packages -race -count=1 -timeout 20m $pkgs
step "go test -race (client module)" bash -c "cd shared/client && bash ../../.ci/gotest.sh '$work/client.json' client -race -count=1 -timeout 5m ./..."

# The benchmarks, a few iterations each: a smoke check that they compile
# and work. With the race detector, so that the packages built for the
# tests serve (a clean clone builds everything afresh: a build without it
# would compile the module a second time); -bench runs one package at a
# time, so it is a step of its own, beside the end-to-end tests.
bench_smoke() { go test -race -count=1 -run '^$' -bench . -benchtime 3x -timeout 10m $pkgs >/dev/null; }
step "benchmarks (smoke: a few iterations each)" bench_smoke

echo "== [$(since)] waiting for the end-to-end tests"
if wait "$e2e_pid"; then
  echo "== [$(since)] go test -race ./tests/...: ok in $(($(date +%s) - e2e_start))s"
else
  failed+=("go test -race ./tests/...")
  echo "== [$(since)] go test -race ./tests/...: FAILED in $(($(date +%s) - e2e_start))s; what failed said:"
  cat "$work/e2e-failures" 2>/dev/null || true
fi
timings+=("$(($(date +%s) - e2e_start))s  go test -race ./tests/... (beside the steps above)")

echo "== steps"
printf '  %s\n' "${timings[@]}"
# awk reads all its input: head would close the pipe early and, under
# pipefail, sort's SIGPIPE (exit 141) would fail a green run.
echo "== the slowest tests (top-level, seconds)"
cat "$work"/*.json 2>/dev/null | jq -R -r 'fromjson? | select((.Action == "pass" or .Action == "fail") and .Test != null and (.Test | contains("/") | not))
  | "\(.Elapsed)\t\(.Package | "." + ltrimstr("github.com/yp/paysvc")) \(.Test)"' | sort -rn | awk 'NR <= 15' | sed 's/^/  /'
echo "== [$(since)] done"
rm -rf "$work"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}" >&2
  exit 1
fi

echo "== all checks passed"
