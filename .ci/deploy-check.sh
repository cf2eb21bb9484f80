#!/usr/bin/env bash
# Pre-deploy check of one samconfig.toml environment (make deploy-check), run
# before `sam deploy`; offline, no AWS call. It fails, naming each problem:
#   - a parameter value that is still a placeholder (<...>, {...}, an example
#     account id such as 111111111111 or 123456789012, the example secret
#     suffix AbCdEf);
#   - a value its parameter's AllowedPattern, AllowedValues, MinValue or
#     MaxValue refuses (CloudFormation would refuse it too, later);
#   - a required parameter (no Default) without a value;
#   - live: no AlarmTopicArn (the on-call topic), a test upstream, or
#     DeploymentStrategy AllAtOnce (live deploys gradually);
#   - DispatcherReservedConcurrency set but below DispatcherConcurrency.
#
# Usage: .ci/deploy-check.sh [--config-env ENV] [--parameter-overrides 'K=V ...']
#        (ENV: a samconfig.toml environment, default "default"; overrides are
#        applied on top, as `sam deploy --parameter-overrides` would)
# Env:   TEMPLATE (default template.yaml), SAMCONFIG (default samconfig.toml),
#        PYTHON (default python3).
set -euo pipefail

cd "$(dirname "$0")/.."

TEMPLATE="${TEMPLATE:-template.yaml}"
SAMCONFIG="${SAMCONFIG:-samconfig.toml}"
PYTHON="${PYTHON:-python3}"
ENV_NAME="default"
EXTRA=""

while [ $# -gt 0 ]; do
  case "$1" in
    --config-env) ENV_NAME="${2:?--config-env needs a name}"; shift 2 ;;
    --parameter-overrides) EXTRA="${2?--parameter-overrides needs a value}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "deploy-check: unknown argument: $1" >&2; exit 2 ;;
  esac
done

"$PYTHON" -c 'import cfnlint' 2>/dev/null || { echo "deploy-check: FAIL: python module cfnlint not found (pip install cfn-lint)" >&2; exit 1; }

exec "$PYTHON" - "$TEMPLATE" "$SAMCONFIG" "$ENV_NAME" "$EXTRA" <<'PY'
import re
import shlex
import sys
import tomllib

from cfnlint.decode import decode

template_path, config_path, env, extra = sys.argv[1:5]
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
            problems.append(f"{name}={value!r}: still {what}; put the real value in {config_path} [{env}] or pass --parameter-overrides")
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

live = effective.get("Environment") == "live"
if live:
    if not effective.get("AlarmTopicArn"):
        problems.append("AlarmTopicArn: a live stack must notify the on-call topic (the stack's own topic has no subscribers)")
    if effective.get("DeploymentStrategy") == "AllAtOnce":
        problems.append("DeploymentStrategy=AllAtOnce: live deploys gradually (e.g. Canary10Percent5Minutes) so a bad version is rolled back on 10 % of traffic")
    if "checkout-test" in effective.get("UpstreamUrl", ""):
        problems.append(f"UpstreamUrl={effective['UpstreamUrl']!r}: the upstream's test environment in a live stack")
try:
    reserved = int(float(effective.get("DispatcherReservedConcurrency", "0")))
    maximum = int(float(effective.get("DispatcherConcurrency", "0")))
    if 0 < reserved < maximum:
        problems.append(f"DispatcherReservedConcurrency={reserved} < DispatcherConcurrency={maximum}: the SQS poller would be throttled and deliveries would use up attempts")
except ValueError:
    pass

if problems:
    print(f"deploy-check: [{env}] stack {stack}: NOT ready to deploy:", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    sys.exit(1)

print(f"deploy-check: [{env}] stack {stack}: OK (environment {effective.get('Environment')}, deployment {effective.get('DeploymentStrategy')})")
if not effective.get("AlarmTopicArn"):
    note = f" and e-mails {effective['AlarmEmail']}" if effective.get("AlarmEmail") else "; subscribe to it (AlarmTopic output) or set AlarmEmail"
    print(f"deploy-check: note: no AlarmTopicArn: alarms go to the stack's own topic {stack}-alarms{note}")
PY
