# Sourced by .ci/test.sh and .ci/soak.sh: one moto_server on a free
# loopback port for every test package (each test uses its own table and
# queue names), PAYSVC_TEST_AWS_ENDPOINT exported and the server stopped on
# exit — unless PAYSVC_TEST_AWS_ENDPOINT already points at one (tests start
# their own when it is unset).
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

