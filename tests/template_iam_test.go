package tests

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// starAllowed are the actions AWS offers no resource-level permissions for:
// the only statements that may name Resource "*". The statement's Sid must
// say so (XRayHasNoResourceLevelPermissions).
var starAllowed = map[string]bool{"xray:PutTraceSegments": true, "xray:PutTelemetryRecords": true}

// statement is one IAM policy statement of the expanded template.
type statement struct {
	role, policy, sid string
	actions           []string
	resources         []any
	condition         map[string]any
}

func roleStatements(t *testing.T, exp *expanded) map[string][]statement {
	t.Helper()
	out := map[string][]statement{}
	for id, r := range exp.ofType("AWS::IAM::Role") {
		if arns := r.Properties["ManagedPolicyArns"]; arns != nil {
			t.Errorf("%s: managed policies %s (they grant Resource \"*\"; write the statements out)", id, jsonText(arns))
		}
		for _, p := range asList(r.Properties["Policies"]) {
			pm, _ := p.(map[string]any)
			doc, _ := pm["PolicyDocument"].(map[string]any)
			for _, st := range asList(doc["Statement"]) {
				sm, _ := st.(map[string]any)
				// A statement that exists only under a condition: Fn::If
				// [condition, statement, AWS::NoValue]; checked as if on.
				if cond, ok := sm["Fn::If"].([]any); ok && len(cond) == 3 && jsonText(cond[2]) == `{"Ref":"AWS::NoValue"}` {
					sm, _ = cond[1].(map[string]any)
				}
				s := statement{role: id, policy: fmt.Sprint(pm["PolicyName"]), sid: fmt.Sprint(sm["Sid"]), resources: asList(sm["Resource"])}
				for _, a := range asList(sm["Action"]) {
					s.actions = append(s.actions, fmt.Sprint(a))
				}
				s.condition, _ = sm["Condition"].(map[string]any)
				if sm["Effect"] != "Allow" || sm["NotAction"] != nil || sm["NotResource"] != nil {
					t.Errorf("%s/%s: only plain Allow statements expected: %s", id, s.sid, jsonText(sm))
				}
				out[id] = append(out[id], s)
			}
		}
	}
	return out
}

// leadingKeys returns the dynamodb:LeadingKeys patterns of a statement.
func (s statement) leadingKeys() []string {
	c, _ := s.condition["ForAllValues:StringLike"].(map[string]any)
	var out []string
	for _, k := range asList(c["dynamodb:LeadingKeys"]) {
		out = append(out, fmt.Sprint(k))
	}
	return out
}

// TestTemplateEveryStatementNamesItsResources reads every IAM statement of
// the expanded template (what CloudFormation creates, SAM's additions
// included): no managed policy, no role SAM generated, every resource named
// ("*" only for X-Ray, which has no resource-level permissions, and the Sid
// says so), DynamoDB only on the table and its index (Query), never Scan,
// and only under
// dynamodb:LeadingKeys, SQS and Secrets Manager on this stack's queue and
// secret.
// stackQueues are the queues of this stack, as a statement's resources.
var stackQueues = map[string]bool{
	`[{"Fn::GetAtt":["DeliveriesQueue","Arn"]}]`: true,
	`[{"Fn::GetAtt":["DeliveriesDLQ","Arn"]}]`:   true,
}

func TestTemplateEveryStatementNamesItsResources(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	roles := roleStatements(t, exp)
	want := []string{"ConfigRole", "DeployRole", "LookupsRole", "ModificationsRole", "NotificationsRole", "PaymentsRole", "SchedulerInvokeRole", "SchedulerRole", "SessionsRole", "SmokeTestRole", "WebhookDispatcherRole", "WebhooksRole"}
	var got []string
	for id := range exp.ofType("AWS::IAM::Role") {
		got = append(got, id)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("roles %v, want %v (a role SAM generates carries managed policies)", got, want)
	}
	for fn := range wantFunctions {
		role := jsonText(exp.Resources[fn].Properties["Role"])
		if !strings.Contains(role, `"`+strings.TrimSuffix(fn, "Function")+`Role"`) {
			t.Errorf("%s runs with %s, want its own role", fn, role)
		}
	}
	for role, sts := range roles {
		for _, s := range sts {
			where := role + "/" + s.sid
			if len(s.actions) == 0 || len(s.resources) == 0 {
				t.Errorf("%s: no actions or no resources", where)
			}
			for _, r := range s.resources {
				text := jsonText(r)
				if text == `"*"` {
					for _, a := range s.actions {
						if !starAllowed[a] {
							t.Errorf("%s: %s on Resource \"*\"", where, a)
						}
					}
					if !strings.Contains(s.sid, "NoResourceLevelPermissions") {
						t.Errorf("%s: Resource \"*\" without a Sid saying why", where)
					}
					continue
				}
				if strings.Contains(text, `:*"`) && !strings.Contains(text, "Function.Arn}:*") {
					t.Errorf("%s: wildcard resource %s", where, text)
				}
			}
			for _, a := range s.actions {
				if strings.HasSuffix(a, ":*") || a == "*" {
					t.Errorf("%s: wildcard action %s", where, a)
				}
				switch {
				case strings.HasPrefix(a, "dynamodb:"):
					if a == "dynamodb:Scan" {
						t.Errorf("%s: Scan", where)
					}
					switch r := jsonText(s.resources); {
					case r == `[{"Fn::GetAtt":["PaymentsTable","Arn"]}]`:
					case (r == `[{"Fn::Sub":"${PaymentsTable.Arn}/index/gsi1"}]` || r == `[{"Fn::Sub":"${PaymentsTable.Arn}/index/gsi2"}]`) &&
						a == "dynamodb:Query":
					default:
						t.Errorf("%s: %s on %s, want the table (or a Query of its index)", where, a, r)
					}
					if len(s.leadingKeys()) == 0 {
						t.Errorf("%s: %s without a dynamodb:LeadingKeys condition", where, a)
					}
					for _, k := range s.leadingKeys() {
						if !strings.HasSuffix(k, "#*") || strings.Count(k, "*") != 1 {
							t.Errorf("%s: LeadingKeys pattern %q, want a key prefix such as PAYMENT#*", where, k)
						}
					}
				case strings.HasPrefix(a, "sqs:"):
					if r := jsonText(s.resources); !stackQueues[r] {
						t.Errorf("%s: %s on %s, want one of this stack's queues", where, a, r)
					}
				case strings.HasPrefix(a, "secretsmanager:"):
					secret := `[{"Ref":"UpstreamSecretArn"}]`
					if role == "SmokeTestRole" {
						secret = `[{"Ref":"CanaryKeySecretArn"}]`
					}
					if a != "secretsmanager:GetSecretValue" || jsonText(s.resources) != secret {
						t.Errorf("%s: %s on %s, want GetSecretValue on %s", where, a, jsonText(s.resources), secret)
					}
				case role == "SchedulerInvokeRole":
					// EventBridge Scheduler's role: it invokes the scheduler
					// function's live alias, nothing else.
					if a != "lambda:InvokeFunction" || jsonText(s.resources) != `[{"Ref":"SchedulerFunctionAliaslive"}]` {
						t.Errorf("%s: %s on %s, want lambda:InvokeFunction on the scheduler's live alias", where, a, jsonText(s.resources))
					}
				case strings.HasPrefix(a, "lambda:"), strings.HasPrefix(a, "codedeploy:"), strings.HasPrefix(a, "cloudwatch:"):
					if role != "DeployRole" && role != "SmokeTestRole" {
						t.Errorf("%s: %s: only the deployment's roles act on functions and deployments", where, a)
					}
				}
			}
		}
	}
	// Only the functions that call the upstream (the recovery pass does)
	// or verify its notifications read the secret.
	for role, sts := range roles {
		reads := false
		for _, s := range sts {
			reads = reads || jsonText(s.resources) == `[{"Ref":"UpstreamSecretArn"}]`
		}
		want := role == "SessionsRole" || role == "PaymentsRole" || role == "ModificationsRole" || role == "NotificationsRole" ||
			role == "SchedulerRole"
		if reads != want {
			t.Errorf("%s reads the upstream secret: %v, want %v", role, reads, want)
		}
	}
}

// TestTemplateSmokeTestMayOnlyGateThisStack: the smoke test function may
// invoke this stack's functions by version or alias (not $LATEST, not
// another stack's), read and report only this stack's deployments, and
// read the canary key only when one is configured; CodeDeploy (DeployRole)
// may run it.
func TestTemplateSmokeTestMayOnlyGateThisStack(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	roles := roleStatements(t, exp)
	invokes := map[string]bool{}
	for _, s := range roles["SmokeTestRole"] {
		for _, a := range s.actions {
			switch a {
			case "lambda:InvokeFunction":
				for _, r := range s.resources {
					invokes[jsonText(r)] = true
				}
			case "codedeploy:ListDeploymentTargets", "codedeploy:BatchGetDeploymentTargets", "codedeploy:PutLifecycleEventHookExecutionStatus":
				if got := jsonText(s.resources); !strings.Contains(got, ":deploymentgroup:${ServerlessDeploymentApplication}/*") {
					t.Errorf("%s on %s, want this stack's deployment groups", a, got)
				}
			}
		}
	}
	for fn := range rollbackAlarms {
		if !invokes[`{"Fn::Sub":"${`+fn+`.Arn}:*"}`] {
			t.Errorf("the smoke test may not invoke %s's versions", fn)
		}
	}
	if len(invokes) != len(rollbackAlarms) {
		t.Errorf("the smoke test may invoke %v, want the %d deployed functions' versions and aliases only", invokes, len(rollbackAlarms))
	}
	role := exp.Resources["SmokeTestRole"].Properties
	if !strings.Contains(jsonText(role), `"Fn::If":["HasCanaryKey"`) {
		t.Error("the canary key statement is not conditional on CanaryKeySecretArn")
	}
	deploy := false
	for _, s := range roles["DeployRole"] {
		if slices.Contains(s.actions, "lambda:InvokeFunction") && jsonText(s.resources) == `[{"Fn::GetAtt":["SmokeTestFunction","Arn"]}]` {
			deploy = true
		}
	}
	if !deploy {
		t.Error("DeployRole may not invoke the smoke test (CodeDeploy runs the hooks with it)")
	}
}
