#!/usr/bin/env bash
# Runs every native Go fuzz target (make fuzz; make test runs only their
# seed corpora, as tests: fuzzing builds each package instrumented, which
# took make test some 10 minutes of compiling):
#
#   bash .ci/fuzz.sh                 # each target FUZZTIME (default 2s; make fuzz: 30s)
#   FUZZTIME=10m bash .ci/fuzz.sh    # a long run; findings land in testdata/fuzz/
#   bash .ci/fuzz.sh ./shared/jsonin FuzzParse   # one target
#
# The seed corpora also run as plain tests in every `go test`.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."
fuzztime=${FUZZTIME:-2s}
# Workers per target: one by default (a brief run finds as much with
# one); FUZZPARALLEL=N for more.
parallel=${FUZZPARALLEL:-1}

# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is mid-call
# (golang/go#75804, fixed in Go 1.27). A real finding always writes its
# input ("Failing input written to testdata/fuzz/..."); a failure without
# one whose only complaint is that deadline is run again (twice at most).
# Anything else fails at once.
run() {
  echo "fuzz $1 $2 ($fuzztime)"
  out=$(mktemp)
  for attempt in 1 2 3; do
    if go test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -parallel "$parallel" >"$out" 2>&1; then
      rm -f "$out"; return 0
    fi
    if [ "$attempt" -lt 3 ] && deadline_flake "$out"; then
      echo "fuzz $1 $2: the fuzz deadline race (golang/go#75804), no failing input; running it again"
      continue
    fi
    cat "$out" >&2; rm -f "$out"; exit 1
  done
}

# deadline_flake reports whether the go test output in $1 is the
# coordinator's deadline race and nothing else.
deadline_flake() {
  grep -q 'context deadline exceeded' "$1" &&
    ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

if [ $# -eq 2 ]; then
  run "$1" "$2"
  exit 0
fi

# Every package with a Fuzz target, and its targets, in the service's module
# and the client module (required with a replace, so its packages are named
# by import path here); two at a time (most of a brief run is building each
# package's instrumented test binary).
go list -f '{{.ImportPath}} {{.Dir}}' ./... github.com/yp/paysvc/shared/client/... | while read -r pkg dir; do
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "$pkg $target"
  done
done | xargs -P "${FUZZJOBS:-2}" -L 1 bash "$self"
