#!/usr/bin/env bash
# Checks the SAM template offline (no AWS account, no Docker, no SAM CLI):
#   1. cfn-lint, with informational rules on: any finding fails. Findings that
#      are unavoidable must be ignored in template.yaml (Metadata.cfn-lint) by
#      rule id, with a comment saying why.
#   2. The SAM transform itself (python samtranslator, the library behind
#      `sam validate` and CloudFormation's transform; .ci/sam_transform.py),
#      with a stub for the one AWS call it can make (IAM ListPolicies, only
#      for policies given by name), and sanity checks of its output.
#   3. samconfig.toml parses and names only parameters the template declares.
#
# Usage: .ci/check-template.sh [--out FILE]   (FILE: the transformed template, JSON)
# Env:   TEMPLATE (default template.yaml), SAMCONFIG (default samconfig.toml),
#        CFN_LINT_REGIONS (default "eu-west-1 us-east-1"), PYTHON (default python3).
set -euo pipefail

cd "$(dirname "$0")/.."

TEMPLATE="${TEMPLATE:-template.yaml}"
SAMCONFIG="${SAMCONFIG:-samconfig.toml}"
REGIONS="${CFN_LINT_REGIONS:-eu-west-1 us-east-1}"
PYTHON="${PYTHON:-python3}"
OUT=""

while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="${2:?--out needs a file name}"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "check-template: unknown argument: $1" >&2; exit 2 ;;
  esac
done

fail() { echo "check-template: FAIL: $*" >&2; exit 1; }

[ -f "$TEMPLATE" ] || fail "$TEMPLATE not found"
command -v "$PYTHON" >/dev/null 2>&1 || fail "$PYTHON not found (python 3.11+ with cfn-lint and aws-sam-translator is needed)"
command -v cfn-lint >/dev/null 2>&1 || fail "cfn-lint not found on PATH (pip install cfn-lint)"
"$PYTHON" -c 'import samtranslator' 2>/dev/null || fail "python module samtranslator not found (pip install aws-sam-translator)"

# --- 1. cfn-lint ------------------------------------------------------------
echo "check-template: cfn-lint $(cfn-lint --version 2>&1 | awk '{print $2}') on $TEMPLATE (regions: $REGIONS)"
# -c I: include informational rules; exit non-zero on any finding, I included.
# shellcheck disable=SC2086 # REGIONS is a word list on purpose
if ! cfn-lint --format parseable --include-checks I --non-zero-exit-code informational \
  --regions $REGIONS --template "$TEMPLATE"; then
  fail "cfn-lint reported findings (above). Fix them, or ignore an unavoidable one in template.yaml Metadata.cfn-lint with a comment."
fi

# --- 2. SAM transform ---------------------------------------------------------
echo "check-template: SAM transform (samtranslator $("$PYTHON" -c 'import samtranslator; print(samtranslator.__version__)'))"
"$PYTHON" - "$TEMPLATE" "$OUT" <<'PY'
import json
import sys

sys.path.insert(0, ".ci")
from sam_transform import TransformError, transform  # noqa: E402

template_path, out_path = sys.argv[1], sys.argv[2]
try:
    out = transform(template_path)
except TransformError as e:
    sys.exit(f"check-template: FAIL: {e}")
except Exception as e:  # any other translator failure is a failure too
    sys.exit(f"check-template: FAIL: SAM transform crashed: {type(e).__name__}: {e}")

resources = out.get("Resources", {})
problems = []

# Sanity checks on what SAM generated (things a transform can silently change).
stages = [k for k, v in resources.items() if v["Type"] == "AWS::ApiGateway::Stage"]
if len(stages) != 1:
    problems.append(f"expected exactly one API stage, got {stages}")
for name, res in resources.items():
    # Without OpenApiVersion, SAM's Deployment also creates a stage named "Stage".
    if res["Type"] == "AWS::ApiGateway::Deployment" and "StageName" in res["Properties"]:
        problems.append(f"{name}: deployment creates an extra stage {res['Properties']['StageName']!r} (set OpenApiVersion on the Api)")
for name, res in resources.items():
    if res["Type"] == "AWS::ApiGateway::RestApi":
        body = res["Properties"].get("Body", {})
        responses = body.get("x-amazon-apigateway-gateway-responses", {})
        for rt in ("THROTTLED", "MISSING_AUTHENTICATION_TOKEN", "REQUEST_TOO_LARGE",
                   "UNSUPPORTED_MEDIA_TYPE", "DEFAULT_4XX", "DEFAULT_5XX"):
            if rt not in responses:
                problems.append(f"{name}: gateway response {rt} missing from the generated OpenAPI body")
    if res["Type"] == "AWS::IAM::Role":
        # Managed policies grant Resource "*" (e.g. AWSLambdaSQSQueueExecutionRole,
        # which SAM attaches to generated roles): every role is written out.
        for arn in res["Properties"].get("ManagedPolicyArns", []):
            problems.append(f"{name}: managed policy {json.dumps(arn)} (write the statements out, scoped to this stack's resources)")
if problems:
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    sys.exit("check-template: FAIL: transformed template failed sanity checks")

counts = {}
for res in resources.values():
    counts[res["Type"]] = counts.get(res["Type"], 0) + 1
print(f"check-template: transform OK: {len(resources)} resources")
for t in sorted(counts):
    print(f"  {counts[t]:3d}  {t}")

if out_path:
    with open(out_path, "w") as f:
        json.dump(out, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"check-template: wrote transformed template to {out_path}")
PY

# --- 3. samconfig.toml --------------------------------------------------------
if [ -f "$SAMCONFIG" ]; then
  echo "check-template: $SAMCONFIG"
  "$PYTHON" - "$TEMPLATE" "$SAMCONFIG" <<'PY'
import shlex
import sys
import tomllib

from cfnlint.decode import decode

template_path, config_path = sys.argv[1], sys.argv[2]
template, _ = decode(template_path)
declared = set((template or {}).get("Parameters", {}))
try:
    with open(config_path, "rb") as f:
        config = tomllib.load(f)
except tomllib.TOMLDecodeError as e:
    sys.exit(f"check-template: FAIL: {config_path} is not valid TOML: {e}")

problems = []
if config.get("version") != 0.1:
    problems.append("version must be 0.1")
for env, commands in config.items():
    if env == "version":
        continue
    overrides = commands.get("deploy", {}).get("parameters", {}).get("parameter_overrides")
    if overrides is None:
        continue
    items = overrides if isinstance(overrides, list) else shlex.split(overrides)
    for item in items:
        key = item.split("=", 1)[0]
        if key not in declared:
            problems.append(f"[{env}] parameter_overrides names {key!r}, which template.yaml does not declare")
    deploy = commands["deploy"]["parameters"]
    if "capabilities" not in deploy:
        problems.append(f"[{env}] deploy.capabilities missing (the template creates IAM roles)")
if problems:
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    sys.exit(f"check-template: FAIL: {config_path}")
print(f"check-template: {config_path} OK ({', '.join(k for k in config if k != 'version')})")
PY
fi

echo "check-template: OK"
