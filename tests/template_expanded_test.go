package tests

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/yp/paysvc/shared/observe"
)

// expanded is the template after the SAM transform (.ci/sam_transform.py),
// as CloudFormation deploys it.
type expanded struct {
	Resources map[string]cfnResource `json:"Resources"`
	Outputs   map[string]map[string]any
	// raw holds each resource whole (UpdatePolicy, Condition, DependsOn).
	raw map[string]map[string]any
}

var (
	expandMu    sync.Mutex
	expandCache = map[string]*expanded{}
)

// expandTemplate runs the offline SAM transform with the given parameter
// values (the rest keep their defaults), once per set of values.
func expandTemplate(t *testing.T, params map[string]string) *expanded {
	t.Helper()
	args := []string{filepath.Join(repoRoot, ".ci", "sam_transform.py"), filepath.Join(repoRoot, "template.yaml")}
	var kv []string
	for k, v := range params {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	args = append(args, kv...)
	key := strings.Join(kv, " ")
	expandMu.Lock()
	defer expandMu.Unlock()
	if e, ok := expandCache[key]; ok {
		return e
	}
	cmd := exec.Command("python3", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("SAM transform (%s): %v\n%s", key, err, stderr.String())
	}
	e := &expanded{}
	var whole struct {
		Resources map[string]map[string]any `json:"Resources"`
		Outputs   map[string]map[string]any `json:"Outputs"`
	}
	decodeJSON(t, out, e)
	decodeJSON(t, out, &whole)
	e.raw, e.Outputs = whole.Resources, whole.Outputs
	expandCache[key] = e
	return e
}

func (e *expanded) ofType(typ string) map[string]cfnResource {
	out := map[string]cfnResource{}
	for id, r := range e.Resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// asList returns v as a list (a single value becomes a one-element list).
func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// liveParams are the values of a live deploy (samconfig.toml [prod]) as far
// as the transform's output depends on them.
var liveParams = map[string]string{"Environment": "live", "DeploymentStrategy": "Canary10Percent5Minutes"}

// aliasRef is how the expanded template names a function's live alias.
func aliasRef(fn string) string { return fn + "Aliaslive" }

var integrationFn = regexp.MustCompile(`functions/\$\{([A-Za-z0-9]+)\}/invocations`)

// TestTemplateWrongMethodGoesToTheFunction: API Gateway answers a method a
// resource does not have as a missing route (404 yp_9004 through the
// MISSING_AUTHENTICATION_TOKEN gateway response), while the service answers
// 405 yp_9005 with Allow. Every documented path therefore also has an ANY
// method integrated with the same function (its live alias), which answers
// the 405 itself (TestLambdaWrongMethodIs405 checks the functions).
func TestTemplateWrongMethodGoesToTheFunction(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	api := exp.Resources["PaySvcApi"]
	body, _ := api.Properties["Body"].(map[string]any)
	paths, _ := body["paths"].(map[string]any)
	for route, fn := range wantRoutes {
		method, path, _ := strings.Cut(route, " ")
		ops, _ := paths[path].(map[string]any)
		if ops == nil {
			t.Errorf("%s: no such path in the generated API", route)
			continue
		}
		for _, m := range []string{strings.ToLower(method), "x-amazon-apigateway-any-method"} {
			op, _ := ops[m].(map[string]any)
			integ, _ := op["x-amazon-apigateway-integration"].(map[string]any)
			if integ == nil {
				t.Errorf("%s: %s has no integration", path, m)
				continue
			}
			uri := jsonText(integ["uri"])
			got := integrationFn.FindStringSubmatch(uri)
			if integ["type"] != "aws_proxy" || got == nil || got[1] != aliasRef(fn) {
				t.Errorf("%s %s: integration %v %s, want a Lambda proxy to %s", path, m, integ["type"], uri, aliasRef(fn))
			}
		}
		for m := range ops {
			if m != strings.ToLower(method) && m != "x-amazon-apigateway-any-method" {
				t.Errorf("%s: unexpected method %s", path, m)
			}
		}
	}
	// The gateway's own answer stays for unknown paths only.
	responses, _ := body["x-amazon-apigateway-gateway-responses"].(map[string]any)
	if r, _ := responses["MISSING_AUTHENTICATION_TOKEN"].(map[string]any); r["statusCode"] != float64(404) && r["statusCode"] != "404" {
		t.Errorf("MISSING_AUTHENTICATION_TOKEN: %v, want 404 yp_9004 for unknown paths", r)
	}
}

// rollbackAlarms are the rollback alarms of each function's deployment:
// the new version's own crashes and (API functions) 5xx answers, and for
// notifications its 401 share. None is stack-wide or function-wide.
var rollbackAlarms = map[string][]string{
	"ConfigFunction":            {"ConfigVersionErrorsAlarm", "ConfigVersion5xxAlarm"},
	"SessionsFunction":          {"SessionsVersionErrorsAlarm", "SessionsVersion5xxAlarm"},
	"PaymentsFunction":          {"PaymentsVersionErrorsAlarm", "PaymentsVersion5xxAlarm"},
	"ModificationsFunction":     {"ModificationsVersionErrorsAlarm", "ModificationsVersion5xxAlarm"},
	"LookupsFunction":           {"LookupsVersionErrorsAlarm", "LookupsVersion5xxAlarm"},
	"WebhooksFunction":          {"WebhooksVersionErrorsAlarm", "WebhooksVersion5xxAlarm"},
	"NotificationsFunction":     {"NotificationsVersionErrorsAlarm", "NotificationsVersion5xxAlarm", "Notification401RateAlarm"},
	"WebhookDispatcherFunction": {"WebhookDispatcherVersionErrorsAlarm"},
	"SchedulerFunction":         {"SchedulerVersionErrorsAlarm"},
}

// TestTemplateDeploysThroughTheAlias: API Gateway and the SQS trigger invoke
// each function's live alias; live deploys by canary with the rollback
// alarms, other stacks at once; every deployment runs the smoke test
// before and after traffic; every rollback alarm can fire within the
// canary's 5 minutes.
func TestTemplateDeploysThroughTheAlias(t *testing.T) {
	cases := []struct {
		name   string
		params map[string]string
		config string
	}{
		{"live", liveParams, "CodeDeployDefault.LambdaCanary10Percent5Minutes"},
		{"test (defaults)", nil, "CodeDeployDefault.LambdaAllAtOnce"},
	}
	if len(rollbackAlarms) != len(wantFunctions)-1 {
		t.Fatalf("rollbackAlarms covers %d functions, want every function but the smoke test", len(rollbackAlarms))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exp := expandTemplate(t, tc.params)
			groups := exp.ofType("AWS::CodeDeploy::DeploymentGroup")
			if len(groups) != len(rollbackAlarms) {
				t.Errorf("%d deployment groups, want one per function but the smoke test (%d)", len(groups), len(rollbackAlarms))
			}
			for fn, alarms := range rollbackAlarms {
				g, ok := groups[fn+"DeploymentGroup"]
				if !ok {
					t.Errorf("%s: no deployment group", fn)
					continue
				}
				if got := jsonText(g.Properties["DeploymentConfigName"]); !strings.Contains(got, strings.TrimPrefix(tc.config, "CodeDeployDefault.Lambda")) {
					t.Errorf("%s: deployment config %s, want %s", fn, got, tc.config)
				}
				rollback, _ := g.Properties["AutoRollbackConfiguration"].(map[string]any)
				if rollback["Enabled"] != true || !strings.Contains(jsonText(rollback["Events"]), "DEPLOYMENT_STOP_ON_ALARM") ||
					!strings.Contains(jsonText(rollback["Events"]), "DEPLOYMENT_FAILURE") {
					t.Errorf("%s: rollback %v, want on alarm and on failure (a failed hook)", fn, rollback)
				}
				ac, _ := g.Properties["AlarmConfiguration"].(map[string]any)
				var got []string
				for _, a := range asList(ac["Alarms"]) {
					ref, _ := a.(map[string]any)["Name"].(map[string]any)
					got = append(got, fmt.Sprint(ref["Ref"]))
				}
				sort.Strings(got)
				want := append([]string(nil), alarms...)
				sort.Strings(want)
				if ac["Enabled"] != true || strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s: rollback alarms %v, want %v", fn, got, want)
				}
				if role := jsonText(g.Properties["ServiceRoleArn"]); !strings.Contains(role, `"DeployRole"`) {
					t.Errorf("%s: CodeDeploy role %s, want DeployRole (scoped, no managed policy)", fn, role)
				}
				alias := exp.Resources[aliasRef(fn)]
				if alias.Type != "AWS::Lambda::Alias" || alias.Properties["Name"] != "live" {
					t.Errorf("%s: no live alias", fn)
				}
				// The smoke test gates every deployment, before and after traffic.
				hooks := exp.updatePolicy(aliasRef(fn))
				for _, h := range []string{"BeforeAllowTrafficHook", "AfterAllowTrafficHook"} {
					if jsonText(hooks[h]) != `{"Ref":"SmokeTestFunction"}` {
						t.Errorf("%s: %s = %s, want the smoke test function", fn, h, jsonText(hooks[h]))
					}
				}
			}
			// The smoke test itself is not deployed through CodeDeploy: its
			// alias moves at once (a hook cannot gate its own deployment).
			if p := exp.updatePolicy(aliasRef(smokeTestFunction)); p != nil {
				t.Errorf("the smoke test's alias has an update policy %s", jsonText(p))
			}
			for id, m := range exp.ofType("AWS::Lambda::EventSourceMapping") {
				fn, _, _ := strings.Cut(id, "Function")
				if got := jsonText(m.Properties["FunctionName"]); got != `{"Ref":"`+aliasRef(fn+"Function")+`"}` {
					t.Errorf("%s: the SQS trigger invokes %s, want %s's live alias", id, got, fn+"Function")
				}
			}
			for id, p := range exp.ofType("AWS::Lambda::Permission") {
				if got := jsonText(p.Properties["FunctionName"]); !strings.Contains(got, "Aliaslive") {
					t.Errorf("%s: API Gateway may invoke %s, want only the live alias", id, got)
				}
			}
		})
	}
}

// TestTemplateRollbackAlarmsJudgeTheNewVersion: every rollback alarm reads
// metrics of one function's new version only — the Version dimension of
// the EMF request metrics, or ExecutedVersion of the alias's Lambda
// metrics — with that version's number from the version resource SAM
// publishes for the deployment (the alarm changes with each deploy); never
// the API's or the whole function's metrics, where a bad 10 % hides and
// the old version's errors count. One-minute periods: each can fire inside
// the 5-minute canary.
func TestTemplateRollbackAlarmsJudgeTheNewVersion(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	versionOf := map[string]string{} // function -> its version resource
	for id, r := range exp.ofType("AWS::Lambda::Version") {
		ref, _ := r.Properties["FunctionName"].(map[string]any)
		versionOf[fmt.Sprint(ref["Ref"])] = id
	}
	for fn, alarms := range rollbackAlarms {
		version := versionOf[fn]
		if version == "" {
			t.Fatalf("%s: no published version", fn)
		}
		wantVersion := `{"Fn::GetAtt":["` + version + `","Version"]}`
		for _, a := range alarms {
			props := exp.Resources[a].Properties
			text := jsonText(props)
			var metrics []map[string]any
			if props["MetricName"] != nil {
				metrics = append(metrics, props)
			}
			for _, m := range asList(props["Metrics"]) {
				if st, ok := m.(map[string]any)["MetricStat"].(map[string]any); ok {
					metrics = append(metrics, st["Metric"].(map[string]any))
				}
			}
			if len(metrics) == 0 {
				t.Errorf("%s: no metric", a)
			}
			for _, m := range metrics {
				dims := map[string]string{}
				for _, d := range asList(m["Dimensions"]) {
					dm := d.(map[string]any)
					dims[fmt.Sprint(dm["Name"])] = jsonText(dm["Value"])
				}
				switch m["Namespace"] {
				case "PaySvc": // EMF, shared/observe
					if dims["Function"] != `{"Ref":"`+fn+`"}` || dims["Version"] != wantVersion {
						t.Errorf("%s: %s by %v, want Function %s and Version %s", a, m["MetricName"], dims, fn, wantVersion)
					}
				case "AWS/Lambda":
					if dims["FunctionName"] != `{"Ref":"`+fn+`"}` || dims["ExecutedVersion"] != wantVersion ||
						!strings.Contains(dims["Resource"], `:live`) || m["MetricName"] != "Errors" {
						t.Errorf("%s: %s by %v, want Errors of %s's live alias by ExecutedVersion %s", a, m["MetricName"], dims, fn, wantVersion)
					}
				default:
					t.Errorf("%s: metric of %v (the API's or a queue's metrics cannot judge one version)", a, m["Namespace"])
				}
			}
			for _, p := range regexp.MustCompile(`"Period":(\d+)`).FindAllStringSubmatch(text, -1) {
				if p[1] != "60" {
					t.Errorf("rollback alarm %s has a %s s period: it cannot fire within a 5-minute canary", a, p[1])
				}
			}
		}
	}
	// The 5xx alarms read the metric shared/observe reports per version.
	for _, name := range []string{observe.MetricServerErrors, observe.MetricRequests} {
		if !strings.Contains(jsonText(exp.Resources["PaymentsVersion5xxAlarm"].Properties), `"MetricName":"`+name+`"`) {
			t.Errorf("PaymentsVersion5xxAlarm does not read %s", name)
		}
	}
	if observe.DimVersion != "Version" {
		t.Errorf("observe.DimVersion = %q, the alarms use Version", observe.DimVersion)
	}
}

// updatePolicy is the CodeDeploy update policy of a resource (nil: none).
func (e *expanded) updatePolicy(id string) map[string]any {
	p, _ := e.raw[id]["UpdatePolicy"].(map[string]any)
	c, _ := p["CodeDeployLambdaAliasUpdate"].(map[string]any)
	return c
}

// TestTemplateDispatcherConcurrencyIsCapped: the dispatcher can never take
// more than DispatcherConcurrency instances (SQS MaximumConcurrency), and a
// reservation, when set, is at least that (else the poller is throttled).
func TestTemplateDispatcherConcurrencyIsCapped(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	maps := exp.ofType("AWS::Lambda::EventSourceMapping")
	want := map[string]string{
		"WebhookDispatcherFunctionDeliveries": `{"Ref":"DispatcherConcurrency"}`,
	}
	if len(maps) != len(want) {
		t.Fatalf("event source mappings: %v, want the dispatcher's", maps)
	}
	for id, m := range maps {
		sc, _ := m.Properties["ScalingConfig"].(map[string]any)
		if w, ok := want[id]; !ok || jsonText(sc["MaximumConcurrency"]) != w {
			t.Errorf("%s: ScalingConfig %v, want MaximumConcurrency = %s", id, sc, w)
		}
	}
	// Reserved concurrency (docs/sizing.md): caps on what could starve
	// the payments (the dispatcher, notifications, merchants' webhook
	// calls) and an optional guarantee for payments, each its parameter
	// and none when it is 0; every other function shares the pool.
	reserved := map[string]string{
		"WebhookDispatcherFunction": "DispatcherReservedConcurrency",
		"NotificationsFunction":     "NotificationsReservedConcurrency",
		"WebhooksFunction":          "WebhooksReservedConcurrency",
		"PaymentsFunction":          "PaymentsReservedConcurrency",
	}
	for id, f := range exp.ofType("AWS::Lambda::Function") {
		got := jsonText(f.Properties["ReservedConcurrentExecutions"])
		param, ok := reserved[id]
		switch {
		case ok && (!strings.Contains(got, `"Fn::If"`) || !strings.Contains(got, `{"Ref":"`+param+`"}`) || !strings.Contains(got, "AWS::NoValue")):
			t.Errorf("%s: ReservedConcurrentExecutions = %s, want %s when set, none at 0", id, got, param)
		case !ok && f.Properties["ReservedConcurrentExecutions"] != nil:
			t.Errorf("%s reserves concurrency %s: it shares the account's unreserved pool", id, got)
		}
	}
	tpl := loadTemplate(t)
	p := tpl.Parameters["DispatcherConcurrency"]
	if p["MinValue"] != float64(2) || p["MaxValue"] != float64(1000) {
		t.Errorf("DispatcherConcurrency bounds %v..%v, want SQS's 2..1000", p["MinValue"], p["MaxValue"])
	}
}
