"""The SAM transform of a template, offline (no AWS account, no Docker).

Used by .ci/check-template.sh and by the Go tests that read the expanded
template (tests/template_*_test.go):

    python3 .ci/sam_transform.py TEMPLATE [Name=Value ...] > expanded.json

Parameter values given replace the template's defaults, as CloudFormation's
own transform sees the deploy's values (e.g. Environment=live
DeploymentStrategy=Canary10Percent5Minutes).
"""

import json
import sys

import boto3
from cfnlint.decode import decode
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

PSEUDO = {"AWS::Region": "eu-west-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012"}


class OfflineManagedPolicyLoader:
    """samtranslator asks IAM for the ARN of managed policies named in
    Policies; offline we know none, so a policy given by name fails clearly."""

    def load(self):
        return {}


def _packaged(props):
    # `sam package` uploads local code and rewrites CodeUri to an S3 URI
    # before the transform runs; do the same with a placeholder (as `sam
    # validate` does).
    uri = props.get("CodeUri") if isinstance(props, dict) else None
    if isinstance(uri, str) and not uri.startswith("s3://"):
        props["CodeUri"] = "s3://paysvc-artifacts-placeholder/code.zip"


class TransformError(Exception):
    pass


def transform(template_path, parameter_values=None):
    template, matches = decode(template_path)
    if matches or template is None:
        raise TransformError(f"cannot parse {template_path}: " + "; ".join(str(m) for m in matches))
    template = json.loads(json.dumps(template))
    _packaged(template.get("Globals", {}).get("Function"))
    for res in template.get("Resources", {}).values():
        if res.get("Type") == "AWS::Serverless::Function":
            _packaged(res.get("Properties"))
    params = dict(PSEUDO)
    params.update(parameter_values or {})
    # A boto3 Session with a region does no network call; samtranslator only
    # reads region_name from it (for ARN partitions).
    session = boto3.session.Session(region_name=PSEUDO["AWS::Region"])
    translator = Translator(None, Parser(), boto_session=session)
    try:
        return translator.translate(template, parameter_values=params,
                                    get_managed_policy_map=OfflineManagedPolicyLoader().load)
    except InvalidDocumentException as e:
        raise TransformError("SAM transform rejected the template: " + "; ".join(c.message for c in e.causes)) from e


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    values = {}
    for arg in sys.argv[2:]:
        k, sep, v = arg.partition("=")
        if not sep:
            sys.exit(f"sam_transform: {arg!r} is not Name=Value")
        values[k] = v
    try:
        out = transform(sys.argv[1], values)
    except TransformError as e:
        sys.exit(f"sam_transform: {e}")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
