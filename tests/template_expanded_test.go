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
)

// expanded is the template after the SAM transform (.ci/sam_transform.py),
// as CloudFormation deploys it.
type expanded struct {
	Resources map[string]cfnResource `json:"Resources"`
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
	if err := json.Unmarshal(out, e); err != nil {
		t.Fatal(err)
	}
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

// TestTemplateDeploysThroughTheAlias: API Gateway and the SQS trigger invoke
// each function's live alias; live deploys by canary with the rollback
// alarms, other stacks at once; every rollback alarm can fire within the
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
	wantAlarms := map[string][]string{
		"ConfigFunction":            {"ApiServerErrorRateAlarm", "ConfigErrorsAlarm"},
		"SessionsFunction":          {"ApiServerErrorRateAlarm", "SessionsErrorsAlarm"},
		"PaymentsFunction":          {"ApiServerErrorRateAlarm", "PaymentsErrorsAlarm"},
		"ModificationsFunction":     {"ApiServerErrorRateAlarm", "ModificationsErrorsAlarm"},
		"NotificationsFunction":     {"ApiServerErrorRateAlarm", "NotificationsErrorsAlarm", "Notification401RateAlarm"},
		"WebhookDispatcherFunction": {"WebhookDispatcherErrorsAlarm"},
		"RecordUpdatesFunction":     {"RecordUpdatesErrorsAlarm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exp := expandTemplate(t, tc.params)
			groups := exp.ofType("AWS::CodeDeploy::DeploymentGroup")
			for fn, alarms := range wantAlarms {
				g, ok := groups[fn+"DeploymentGroup"]
				if !ok {
					t.Errorf("%s: no deployment group", fn)
					continue
				}
				if got := jsonText(g.Properties["DeploymentConfigName"]); !strings.Contains(got, strings.TrimPrefix(tc.config, "CodeDeployDefault.Lambda")) {
					t.Errorf("%s: deployment config %s, want %s", fn, got, tc.config)
				}
				rollback, _ := g.Properties["AutoRollbackConfiguration"].(map[string]any)
				if rollback["Enabled"] != true || !strings.Contains(jsonText(rollback["Events"]), "DEPLOYMENT_STOP_ON_ALARM") {
					t.Errorf("%s: rollback %v, want on alarm", fn, rollback)
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

	// Rollback alarms use one-minute periods (a canary lasts 5 minutes).
	tpl := loadTemplate(t)
	seen := map[string]bool{}
	for _, alarms := range wantAlarms {
		for _, a := range alarms {
			if seen[a] {
				continue
			}
			seen[a] = true
			props := tpl.Resources[a].Properties
			periods := regexp.MustCompile(`"Period":(\d+)`).FindAllStringSubmatch(jsonText(props), -1)
			if len(periods) == 0 {
				t.Errorf("%s: no period found", a)
			}
			for _, p := range periods {
				if p[1] != "60" {
					t.Errorf("rollback alarm %s has a %s s period: it cannot fire within a 5-minute canary", a, p[1])
				}
			}
		}
	}
}

// TestTemplateDispatcherConcurrencyIsCapped: the dispatcher can never take
// more than DispatcherConcurrency instances (SQS MaximumConcurrency), and a
// reservation, when set, is at least that (else the poller is throttled).
// The record updates function is capped too, at a fixed few.
func TestTemplateDispatcherConcurrencyIsCapped(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	maps := exp.ofType("AWS::Lambda::EventSourceMapping")
	want := map[string]string{
		"WebhookDispatcherFunctionDeliveries": `{"Ref":"DispatcherConcurrency"}`,
		"RecordUpdatesFunctionRecordUpdates":  `5`,
	}
	if len(maps) != len(want) {
		t.Fatalf("event source mappings: %v, want the dispatcher's and the record updates function's", maps)
	}
	for id, m := range maps {
		sc, _ := m.Properties["ScalingConfig"].(map[string]any)
		if w, ok := want[id]; !ok || jsonText(sc["MaximumConcurrency"]) != w {
			t.Errorf("%s: ScalingConfig %v, want MaximumConcurrency = %s", id, sc, w)
		}
	}
	fn := exp.Resources["WebhookDispatcherFunction"]
	if got := jsonText(fn.Properties["ReservedConcurrentExecutions"]); !strings.Contains(got, "DispatcherReservedConcurrency") {
		t.Errorf("dispatcher ReservedConcurrentExecutions = %s", got)
	}
	for id, f := range exp.ofType("AWS::Lambda::Function") {
		if id != "WebhookDispatcherFunction" && f.Properties["ReservedConcurrentExecutions"] != nil {
			t.Errorf("%s reserves concurrency: API functions share the account's unreserved pool", id)
		}
	}
	tpl := loadTemplate(t)
	p := tpl.Parameters["DispatcherConcurrency"]
	if p["MinValue"] != float64(2) || p["MaxValue"] != float64(1000) {
		t.Errorf("DispatcherConcurrency bounds %v..%v, want SQS's 2..1000", p["MinValue"], p["MaxValue"])
	}
}
