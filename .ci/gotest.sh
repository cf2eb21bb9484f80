#!/usr/bin/env bash
# Runs go test -json with the arguments given after LOG, for .ci/test.sh:
#
#   bash .ci/gotest.sh LOG LABEL ARGS...
#
# prints a line as each package ends (and, for LABEL e2e, as each top-level
# test ends: the end-to-end run is long), keeps the JSON in LOG (the
# slowest tests are read from it at the end), and, when something failed,
# prints what failed said, as go test prints it — to GOTEST_FAILURES when
# set (a file), else to stdout. Exits with go test's status.
set -uo pipefail
log=$1 label=$2
shift 2
if [ "$label" = e2e ]; then
  progress='select(.Action == "pass" or .Action == "fail" or .Action == "skip") | select(.Test == null or (.Test | contains("/") | not))'
else
  progress='select(.Test == null and (.Action == "pass" or .Action == "fail"))'
fi
line='"  [\($name)] \(.Action) \(.Package | "." + ltrimstr("github.com/yp/paysvc")) \(.Test // "") (\(.Elapsed // 0 | floor) s)"'
go test -json "$@" 2>&1 | tee "$log" | jq -R -r --unbuffered --arg name "$label" "fromjson? | $progress | $line"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  # Every failed test's and package's output, and any line go test printed
  # that is not JSON (a build error).
  jq -R -s -j '[split("\n")[] | select(length > 0) | (fromjson? // {Action: "output", Output: (. + "\n"), raw: true})] as $ev
    | [$ev[] | select(.Action == "fail") | "\(.Package) \(.Test // "")"] as $failed
    | $ev[] | select(.Action == "output" and ((.raw // false) or ("\(.Package) \(.Test // "")" as $k | any($failed[]; . == $k)))) | .Output' \
    "$log" >"${GOTEST_FAILURES:-/dev/stdout}"
fi
exit "$rc"
