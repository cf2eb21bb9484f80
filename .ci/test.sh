#!/usr/bin/env bash
# The project's test command (README: `make test`; CI: .ci/run).
# Checks the tools the tests need (installs Chromium when it is missing and
# it may: .ci/chromium.sh), starts one moto_server for the whole run,
# then runs formatting, vet, the template checks and every Go test with the
# race detector (the single-goroutine capacity model without it), and the
# benchmarks in smoke mode.
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

echo "== gofmt"
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './.paysvc/*' -not -path './.aws-sam/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

# The Go client is its own module (shared/client/go.mod): ./... of the
# service's module does not reach it, so it is vetted and tested in its
# own directory, as a merchant's build sees it.
echo "== go vet"
go vet ./...
(cd shared/client && go vet ./...)

echo "== template (cfn-lint + SAM transform)"
bash .ci/check-template.sh

source .ci/moto.sh

echo "== go test -race"
# shared/capacity is the capacity model: arithmetic on one goroutine, where
# the race detector has nothing to watch and runs 7x slower (over two
# minutes of the suite's CPU); it runs without it.
go test -race -count=1 -timeout 20m $(go list ./... | grep -v '/shared/capacity$')
go test -count=1 -timeout 10m ./shared/capacity/
echo "== go test -race (the client module)"
(cd shared/client && go test -race -count=1 -timeout 5m ./...)

echo "== fuzz targets (each briefly; FUZZTIME=10m bash .ci/fuzz.sh for a long run)"
bash .ci/fuzz.sh

echo "== benchmarks (smoke: a few iterations, to keep them compiling and working)"
go test -run '^$' -bench . -benchtime 3x -timeout 10m ./... >/dev/null

echo "== all checks passed"
