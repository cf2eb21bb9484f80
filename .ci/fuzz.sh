#!/usr/bin/env bash
# Runs every native Go fuzz target briefly (make test) or long (by hand):
#
#   bash .ci/fuzz.sh                 # each target FUZZTIME (default 2s)
#   FUZZTIME=10m bash .ci/fuzz.sh    # a long run; findings land in testdata/fuzz/
#   bash .ci/fuzz.sh ./shared/jsonin FuzzParse   # one target
#
# The seed corpora also run as plain tests in every `go test`.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."
fuzztime=${FUZZTIME:-2s}

run() {
  echo "fuzz $1 $2 ($fuzztime)"
  out=$(mktemp)
  go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" >"$out" 2>&1 || {
    cat "$out" >&2; rm -f "$out"; exit 1; }
  rm -f "$out"
}

if [ $# -eq 2 ]; then
  run "$1" "$2"
  exit 0
fi

# Every package with a Fuzz target, and its targets; two at a time (most of
# a brief run is building each package's instrumented test binary).
go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "$pkg $target"
  done
done | xargs -P "${FUZZJOBS:-2}" -L 1 bash "$self"
