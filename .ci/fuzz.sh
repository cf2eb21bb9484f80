#!/usr/bin/env bash
# Runs every native Go fuzz target briefly (make test) or long (by hand):
#
#   bash .ci/fuzz.sh                 # each target FUZZTIME (default 2s)
#   FUZZTIME=10m bash .ci/fuzz.sh    # a long run; findings land in testdata/fuzz/
#   bash .ci/fuzz.sh ./shared/jsonin FuzzParse   # one target
#
# The seed corpora also run as plain tests in every `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-2s}

run() {
  echo "fuzz $1 $2 ($fuzztime)"
  go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" >/tmp/paysvc-fuzz.$$ 2>&1 || {
    cat /tmp/paysvc-fuzz.$$ >&2; rm -f /tmp/paysvc-fuzz.$$; exit 1; }
  rm -f /tmp/paysvc-fuzz.$$
}

if [ $# -eq 2 ]; then
  run "$1" "$2"
  exit 0
fi

# Every package with a Fuzz target, and its targets.
go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    run "$pkg" "$target"
  done
done
