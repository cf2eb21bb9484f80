# Sourced by .ci/test.sh and .ci/soak.sh: one moto_server on a loopback
# port for every test package (each test uses its own table and queue
# names), PAYSVC_TEST_AWS_ENDPOINT exported and the server stopped on exit
# — unless PAYSVC_TEST_AWS_ENDPOINT already points at one (tests start
# their own when it is unset).
#
# The kernel picks the port (-p 0) and the server's own "Running on" line
# names it: a port probed free and passed in can be taken by another
# server started at the same moment (test.sh starts two), and a server
# that then failed to bind would look ready when the other one answered.
#
# internal/motoserver/speedups goes first on the server's PYTHONPATH: its
# sitecustomize.py removes work moto repeats for nothing (it says what),
# as for the servers the tests start themselves (PAYSVC_MOTO_SPEEDUPS=off:
# without it, to compare).
if [ -z "${PAYSVC_TEST_AWS_ENDPOINT:-}" ]; then
  motolog=$(mktemp)
  speedups="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/internal/motoserver/speedups"
  if [ "${PAYSVC_MOTO_SPEEDUPS:-}" = off ]; then speedups=""; fi
  PYTHONPATH="$speedups${PYTHONPATH:+${speedups:+:}$PYTHONPATH}" moto_server -H 127.0.0.1 -p 0 >"$motolog" 2>&1 &
  moto_pid=$!
  trap 'kill $moto_pid 2>/dev/null || true; rm -f "$motolog"' EXIT
  moto_url=""
  for _ in $(seq 1 600); do
    if ! kill -0 $moto_pid 2>/dev/null; then echo "moto_server failed:" >&2; cat "$motolog" >&2; exit 1; fi
    if [ -z "$moto_url" ]; then
      moto_url=$(sed -n 's|.*Running on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$motolog" | head -1)
    fi
    if [ -n "$moto_url" ] && curl -fsS "$moto_url/moto-api/" >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  if [ -z "$moto_url" ]; then echo "moto_server did not start:" >&2; cat "$motolog" >&2; exit 1; fi
  export PAYSVC_TEST_AWS_ENDPOINT="$moto_url"
  echo "== moto_server on $PAYSVC_TEST_AWS_ENDPOINT"
fi
