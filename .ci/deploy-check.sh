#!/usr/bin/env bash
# Pre-deploy check of one samconfig.toml environment (make deploy-check), run
# before `sam deploy`; offline, no AWS call. It fails, naming each problem:
#   - a parameter value that is still a placeholder (<...>, {...}, an example
#     account id such as 111111111111 or 123456789012, the example secret
#     suffix AbCdEf);
#   - a value its parameter's AllowedPattern, AllowedValues, MinValue or
#     MaxValue refuses (CloudFormation would refuse it too, later);
#   - a required parameter (no Default) without a value;
#   - live: no AlarmTopicArn (the on-call topic), a test upstream,
#     DeploymentStrategy AllAtOnce (live deploys gradually; --emergency lets
#     it through with a warning), no CanaryKeySecretArn (the smoke test's
#     key), notifications or webhooks without their concurrency cap;
#   - DispatcherReservedConcurrency set but below DispatcherConcurrency;
#   - reservations leaving the account fewer than 100 unreserved
#     (AccountConcurrencyLimit);
#   - a stack name longer than 32 characters (the X-Ray sampling rule's name).
#
# Usage: .ci/deploy-check.sh [--config-env ENV] [--parameter-overrides 'K=V ...']
#                            [--emergency] [--print-overrides]
#        ENV: a samconfig.toml environment, default "default".
#        --parameter-overrides ADD to the environment's parameter_overrides
#        (a key given here replaces that key's value; the others stay).
#        `sam deploy --parameter-overrides` alone would REPLACE them all:
#        `make deploy` passes sam the merged list this script prints with
#        --print-overrides, so what is checked is what is deployed.
#        --print-overrides: after the checks, print the merged list (one
#        line, Key="value" pairs) on stdout and nothing else there.
# Env:   TEMPLATE (default template.yaml), SAMCONFIG (default samconfig.toml),
#        PYTHON (default python3).
set -euo pipefail

cd "$(dirname "$0")/.."

TEMPLATE="${TEMPLATE:-template.yaml}"
SAMCONFIG="${SAMCONFIG:-samconfig.toml}"
PYTHON="${PYTHON:-python3}"
ENV_NAME="default"
EXTRA=""
EMERGENCY=0
PRINT=0

while [ $# -gt 0 ]; do
  case "$1" in
    --config-env) ENV_NAME="${2:?--config-env needs a name}"; shift 2 ;;
    --parameter-overrides) EXTRA="${2?--parameter-overrides needs a value}"; shift 2 ;;
    --emergency) EMERGENCY=1; shift ;;
    --print-overrides) PRINT=1; shift ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "deploy-check: unknown argument: $1" >&2; exit 2 ;;
  esac
done

"$PYTHON" -c 'import cfnlint' 2>/dev/null || { echo "deploy-check: FAIL: python module cfnlint not found (pip install cfn-lint)" >&2; exit 1; }

exec "$PYTHON" - "$TEMPLATE" "$SAMCONFIG" "$ENV_NAME" "$EXTRA" "$EMERGENCY" "$PRINT" <<'PY'
import re
import shlex
import sys
import tomllib

from cfnlint.decode import decode

template_path, config_path, env, extra = sys.argv[1:5]
emergency, print_overrides = sys.argv[5] == "1", sys.argv[6] == "1"
# With --print-overrides stdout carries the merged list only.
info = sys.stderr if print_overrides else sys.stdout
template, matches = decode(template_path)
if matches or template is None:
    sys.exit(f"deploy-check: FAIL: cannot parse {template_path}")
params = template.get("Parameters", {})
with open(config_path, "rb") as f:
    config = tomllib.load(f)
if env not in config:
    sys.exit(f"deploy-check: FAIL: {config_path} has no environment [{env}] (have: {', '.join(k for k in config if k != 'version')})")

deploy = config[env].get("deploy", {}).get("parameters", {})
stack = config[env].get("global", {}).get("parameters", {}).get("stack_name") or deploy.get("stack_name") or "?"


def parse(overrides):
    items = overrides if isinstance(overrides, list) else shlex.split(overrides or "")
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep:
            sys.exit(f"deploy-check: FAIL: parameter override {item!r} is not Key=Value")
        out[k] = v
    return out


# The environment's overrides, then the command line's on top: a key given
# on the command line replaces that key only.
values = parse(deploy.get("parameter_overrides"))
values.update(parse(extra))

# Values that are templates, not configuration.
PLACEHOLDER_ACCOUNTS = {"000000000000", "111111111111", "222222222222", "123456789012"}
placeholder_patterns = [
    (re.compile(r"<[^>]*>"), "a <...> placeholder"),
    (re.compile(r"\{[^}]*\}"), "a {...} placeholder"),
    (re.compile(r"(^|:)(" + "|".join(sorted(PLACEHOLDER_ACCOUNTS)) + r")(:|$)"), "an example account id"),
    (re.compile(r"-AbCdEf$"), "the example secret suffix AbCdEf"),
]

problems = []
flagged = set()
for name, value in sorted(values.items()):
    if name not in params:
        problems.append(f"{name}: not a parameter of {template_path}")
        continue
    for rx, what in placeholder_patterns:
        if rx.search(value):
            problems.append(f"{name}={value!r}: still {what}; put the real value in {config_path} [{env}] or give it in PARAMETER_OVERRIDES (make deploy)")
            flagged.add(name)
            break

effective = {}
for name, spec in params.items():
    if name in values:
        effective[name] = values[name]
    elif "Default" in spec:
        effective[name] = str(spec["Default"])
    else:
        problems.append(f"{name}: required (no default) and not set in {config_path} [{env}]")

for name, value in sorted(effective.items()):
    if name in flagged:
        continue
    spec = params[name]
    pattern = spec.get("AllowedPattern")
    if pattern and not re.fullmatch(pattern, value):
        problems.append(f"{name}={value!r}: refused by its AllowedPattern ({spec.get('ConstraintDescription', pattern)})")
    allowed = spec.get("AllowedValues")
    if allowed and value not in [str(a) for a in allowed]:
        problems.append(f"{name}={value!r}: not one of {', '.join(str(a) for a in allowed)}")
    if spec.get("Type") == "Number":
        try:
            n = float(value)
        except ValueError:
            problems.append(f"{name}={value!r}: not a number")
            continue
        if "MinValue" in spec and n < float(spec["MinValue"]):
            problems.append(f"{name}={value}: below its MinValue {spec['MinValue']}")
        if "MaxValue" in spec and n > float(spec["MaxValue"]):
            problems.append(f"{name}={value}: above its MaxValue {spec['MaxValue']}")

def number(name):
    try:
        return int(float(effective.get(name, "0")))
    except ValueError:
        return 0


warnings = []
live = effective.get("Environment") == "live"
if live:
    if not effective.get("AlarmTopicArn"):
        problems.append("AlarmTopicArn: a live stack must notify the on-call topic (the stack's own topic has no subscribers)")
    if effective.get("DeploymentStrategy") == "AllAtOnce":
        if emergency:
            warnings.append("DeploymentStrategy=AllAtOnce in live (--emergency): every function switches at once, without a canary; say so in the incident notes")
        else:
            problems.append("DeploymentStrategy=AllAtOnce: live deploys gradually (e.g. Canary10Percent5Minutes) so a bad version is rolled back on 10 % of traffic (an emergency fix: make deploy ... EMERGENCY=1)")
    if "checkout-test" in effective.get("UpstreamUrl", ""):
        problems.append(f"UpstreamUrl={effective['UpstreamUrl']!r}: the upstream's test environment in a live stack")
    if not effective.get("CanaryKeySecretArn"):
        problems.append("CanaryKeySecretArn: a live stack's smoke test calls the new versions with the canary merchant's key (docs/runbook.md, Deploy)")
    for cap in ("NotificationsReservedConcurrency", "WebhooksReservedConcurrency"):
        if number(cap) <= 0:
            problems.append(f"{cap}: live caps it so a burst cannot take the payments' concurrency (docs/sizing.md)")
reserved_dispatcher, maximum = number("DispatcherReservedConcurrency"), number("DispatcherConcurrency")
if 0 < reserved_dispatcher < maximum:
    problems.append(f"DispatcherReservedConcurrency={reserved_dispatcher} < DispatcherConcurrency={maximum}: the SQS poller would be throttled and deliveries would use up attempts")
reservations = {n: number(n) for n in ("PaymentsReservedConcurrency", "NotificationsReservedConcurrency",
                                         "WebhooksReservedConcurrency", "DispatcherReservedConcurrency")}
limit = number("AccountConcurrencyLimit")
if sum(reservations.values()) > limit - 100:
    listed = ", ".join(f"{k}={v}" for k, v in reservations.items() if v)
    problems.append(f"reservations {listed} (total {sum(reservations.values())}) leave fewer than 100 of AccountConcurrencyLimit={limit} unreserved (Lambda refuses that)")
if len(stack) > 32:
    problems.append(f"stack name {stack!r}: longer than 32 characters, the X-Ray sampling rule's name limit")

if problems:
    print(f"deploy-check: [{env}] stack {stack}: NOT ready to deploy:", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    sys.exit(1)

print(f"deploy-check: [{env}] stack {stack}: OK (environment {effective.get('Environment')}, deployment {effective.get('DeploymentStrategy')})", file=info)
for w in warnings:
    print(f"deploy-check: WARNING: {w}", file=info)
if not effective.get("AlarmTopicArn"):
    note = f" and e-mails {effective['AlarmEmail']}" if effective.get("AlarmEmail") else "; subscribe to it (AlarmTopic output) or set AlarmEmail"
    print(f"deploy-check: note: no AlarmTopicArn: alarms go to the stack's own topic {stack}-alarms{note}", file=info)
if print_overrides:
    def quote(v):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    print(" ".join(f"{k}={quote(v)}" for k, v in values.items()))
PY
