package tests

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The routes of docs/architecture.md, and the function serving each.
var wantRoutes = map[string]string{
	"GET /v1/ecom/config":                                                     "ConfigFunction",
	"POST /v1/ecom/{siteId}/sessions":                                         "SessionsFunction",
	"POST /v1/ecom/{siteId}/payment-methods":                                  "PaymentsFunction",
	"POST /v1/ecom/{siteId}/payments":                                         "PaymentsFunction",
	"POST /v1/ecom/{siteId}/payments/details":                                 "PaymentsFunction",
	"DELETE /v1/ecom/{siteId}/stored-payment-methods/{storedPaymentMethodId}": "PaymentsFunction",
	"POST /v1/ecom/{siteId}/payments/{pspReference}/captures":                 "ModificationsFunction",
	"POST /v1/ecom/{siteId}/payments/{pspReference}/reversals":                "ModificationsFunction",
	"POST /v1/ecom/{siteId}/payments/{pspReference}/cancels":                  "ModificationsFunction",
	"POST /v1/ecom/{siteId}/payments/{pspReference}/amount-updates":           "ModificationsFunction",
	"POST /v1/ecom/{siteId}/payments/{pspReference}/refunds":                  "ModificationsFunction",
	"GET /v1/ecom/{siteId}/payments/{pspReference}":                           "LookupsFunction",
	"GET /v1/ecom/events":                                                     "LookupsFunction",
	"GET /v1/ecom/webhook-deliveries":                                         "LookupsFunction",
	"POST /v1/ecom/webhook-deliveries/{deliveryId}/retry":                     "WebhooksFunction",
	"POST /v1/ecom/webhooks/test":                                             "WebhooksFunction",
	"POST /v1/notifications/upstream":                                         "NotificationsFunction",
}

// Function logical id -> Go main package under ./functions.
var wantFunctions = map[string]string{
	"ConfigFunction":            "config",
	"SessionsFunction":          "sessions",
	"PaymentsFunction":          "payments",
	"ModificationsFunction":     "modifications",
	"LookupsFunction":           "lookups",
	"WebhooksFunction":          "webhooks",
	"NotificationsFunction":     "notifications",
	"WebhookDispatcherFunction": "dispatcher",
	"SchedulerFunction":         "scheduler",
	"SmokeTestFunction":         "smoketest",
}

// smokeTestFunction is the deployment gate: CodeDeploy invokes it (the
// pre- and post-traffic hook), neither API Gateway nor a queue.
const smokeTestFunction = "SmokeTestFunction"

const repoRoot = ".."

// cfnTemplate is the part of a SAM template the tests read. Intrinsics come
// out as maps ({"Ref": "X"}), the short forms (!Ref) already expanded.
type cfnTemplate struct {
	Globals struct {
		Function map[string]any `json:"Function"`
	} `json:"Globals"`
	Parameters map[string]map[string]any `json:"Parameters"`
	Resources  map[string]cfnResource    `json:"Resources"`
	Mappings   map[string]any            `json:"Mappings"`
	Rules      map[string]any            `json:"Rules"`
	Outputs    map[string]map[string]any `json:"Outputs"`
}

type cfnResource struct {
	Type       string         `json:"Type"`
	Metadata   map[string]any `json:"Metadata"`
	Properties map[string]any `json:"Properties"`
}

var (
	templateOnce sync.Once
	templateVal  *cfnTemplate
	templateErr  error
)

// loadTemplate converts template.yaml to JSON with cfn-lint's YAML loader
// (it understands the CloudFormation tags; the module has no YAML dependency).
func loadTemplate(t *testing.T) *cfnTemplate {
	t.Helper()
	templateOnce.Do(func() {
		const script = `import json, sys
from cfnlint.decode import decode
tpl, errs = decode(sys.argv[1])
if errs or tpl is None:
    sys.exit("cannot parse %s: %s" % (sys.argv[1], "; ".join(str(e) for e in errs)))
json.dump(tpl, sys.stdout)`
		python, err := exec.LookPath("python3")
		if err != nil {
			templateErr = err
			return
		}
		cmd := exec.Command(python, "-c", script, filepath.Join(repoRoot, "template.yaml"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			templateErr = &exec.Error{Name: "python3 cfnlint.decode (is cfn-lint installed?): " + stderr.String(), Err: err}
			return
		}
		templateVal = &cfnTemplate{}
		templateErr = json.Unmarshal(out, templateVal)
	})
	if templateErr != nil {
		t.Fatalf("load template.yaml: %v", templateErr)
	}
	return templateVal
}

// functions returns the AWS::Serverless::Function resources by logical id.
func (tpl *cfnTemplate) functions() map[string]cfnResource {
	out := map[string]cfnResource{}
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Serverless::Function" {
			out[id] = r
		}
	}
	return out
}

// prop is a function property as SAM sees it: the function's own value, else Globals.
func (tpl *cfnTemplate) prop(fn cfnResource, name string) any {
	if v, ok := fn.Properties[name]; ok {
		return v
	}
	return tpl.Globals.Function[name]
}

// envVars is a function's environment variables after SAM merges Globals in.
func (tpl *cfnTemplate) envVars(fn cfnResource) map[string]any {
	out := map[string]any{}
	for _, src := range []map[string]any{tpl.Globals.Function, fn.Properties} {
		env, _ := src["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			out[k] = v
		}
	}
	return out
}

func events(fn cfnResource) map[string]map[string]any {
	out := map[string]map[string]any{}
	evs, _ := fn.Properties["Events"].(map[string]any)
	for name, ev := range evs {
		m, _ := ev.(map[string]any)
		out[name] = m
	}
	return out
}

// apiRoutes maps "METHOD path" to the functions that declare it.
func (tpl *cfnTemplate) apiRoutes(t *testing.T) map[string][]string {
	t.Helper()
	routes := map[string][]string{}
	for id, fn := range tpl.functions() {
		for name, ev := range events(fn) {
			if ev["Type"] != "Api" {
				continue
			}
			p, _ := ev["Properties"].(map[string]any)
			method, _ := p["Method"].(string)
			path, _ := p["Path"].(string)
			if !reflect.DeepEqual(p["RestApiId"], map[string]any{"Ref": "PaySvcApi"}) {
				t.Errorf("%s event %s: RestApiId = %v, want !Ref PaySvcApi (else SAM creates an implicit API)", id, name, p["RestApiId"])
			}
			key := strings.ToUpper(method) + " " + path
			routes[key] = append(routes[key], id)
		}
	}
	return routes
}

func TestTemplateRoutesEachGoToExactlyOneFunction(t *testing.T) {
	tpl := loadTemplate(t)
	routes := tpl.apiRoutes(t)
	for route, want := range wantRoutes {
		got := routes[route]
		if len(got) != 1 || got[0] != want {
			t.Errorf("route %s is served by %v, want exactly [%s]", route, got, want)
		}
	}
	// Each documented path also has an ANY method on the function serving it
	// (405 yp_9005 with Allow from the function; TestTemplateWrongMethodGoesToTheFunction).
	pathFn := map[string]string{}
	for route, fn := range wantRoutes {
		_, path, _ := strings.Cut(route, " ")
		pathFn[path] = fn
	}
	for path, fn := range pathFn {
		if got := routes["ANY "+path]; len(got) != 1 || got[0] != fn {
			t.Errorf("ANY %s is served by %v, want exactly [%s] (wrong methods must reach the function for its 405)", path, got, fn)
		}
	}
	for route, fns := range routes {
		_, path, _ := strings.Cut(route, " ")
		if _, ok := wantRoutes[route]; !ok && !(strings.HasPrefix(route, "ANY ") && pathFn[path] != "") {
			t.Errorf("unexpected route %s -> %v (add it to wantRoutes if intended)", route, fns)
		}
	}
}

func TestTemplateFunctionsAndBuildSettings(t *testing.T) {
	tpl := loadTemplate(t)
	fns := tpl.functions()
	var ids []string
	for id := range fns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var want []string
	for id := range wantFunctions {
		want = append(want, id)
	}
	sort.Strings(want)
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("functions = %v, want %v", ids, want)
	}

	for id, fn := range fns {
		checks := []struct {
			prop string
			want any
		}{
			{"Runtime", "provided.al2023"},
			{"Architectures", []any{"arm64"}},
			{"Handler", "bootstrap"},
			{"Tracing", "Active"},
			{"CodeUri", "."},
		}
		for _, c := range checks {
			if got := tpl.prop(fn, c.prop); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: %s = %v, want %v", id, c.prop, got, c.want)
			}
		}
		if fn.Metadata["BuildMethod"] != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, fn.Metadata["BuildMethod"])
		}
		timeout, _ := tpl.prop(fn, "Timeout").(float64)
		if !notBehindAPI[id] && id != smokeTestFunction && (timeout <= 0 || timeout > 29) {
			t.Errorf("%s: Timeout = %v, want 1..29 s (API Gateway integration limit)", id, timeout)
		}
		logging, _ := fn.Properties["LoggingConfig"].(map[string]any)
		if logging["LogGroup"] == nil {
			t.Errorf("%s: LoggingConfig.LogGroup not set (explicit log group with retention)", id)
		}
		if env := tpl.envVars(fn); env["PAYSVC_TABLE"] == nil || env["PAYSVC_STORE"] != "dynamo" {
			t.Errorf("%s: PAYSVC_TABLE/PAYSVC_STORE not set: %v", id, env)
		}
	}
}

func TestTemplateDispatcherQueueSettings(t *testing.T) {
	tpl := loadTemplate(t)
	fn := tpl.Resources["WebhookDispatcherFunction"]
	var sqs map[string]any
	for _, ev := range events(fn) {
		if ev["Type"] == "SQS" {
			if sqs != nil {
				t.Fatal("dispatcher has more than one SQS event")
			}
			sqs, _ = ev["Properties"].(map[string]any)
		}
	}
	if sqs == nil {
		t.Fatal("dispatcher has no SQS event")
	}
	if !reflect.DeepEqual(sqs["Queue"], map[string]any{"Fn::GetAtt": []any{"DeliveriesQueue", "Arn"}}) {
		t.Errorf("SQS event queue = %v, want DeliveriesQueue.Arn", sqs["Queue"])
	}
	if sqs["BatchSize"] != float64(10) {
		t.Errorf("BatchSize = %v, want 10", sqs["BatchSize"])
	}
	if !reflect.DeepEqual(sqs["FunctionResponseTypes"], []any{"ReportBatchItemFailures"}) {
		t.Errorf("FunctionResponseTypes = %v", sqs["FunctionResponseTypes"])
	}

	timeout, _ := tpl.prop(fn, "Timeout").(float64)
	q := tpl.Resources["DeliveriesQueue"].Properties
	visibility, _ := q["VisibilityTimeout"].(float64)
	if timeout <= 15 || visibility < 6*timeout {
		t.Errorf("dispatcher timeout %v s must exceed the 15 s delivery timeout and queue visibility %v s must be >= 6x it", timeout, visibility)
	}
	redrive, _ := q["RedrivePolicy"].(map[string]any)
	if redrive["maxReceiveCount"] != float64(10) {
		t.Errorf("maxReceiveCount = %v, want 10 (the backstop for messages received again: crashed invocations, retries kept hidden)", redrive["maxReceiveCount"])
	}
	dlq := tpl.Resources["DeliveriesDLQ"].Properties
	if dlq["MessageRetentionPeriod"] != float64(14*24*3600) {
		t.Errorf("DLQ retention = %v, want 14 days", dlq["MessageRetentionPeriod"])
	}
	if qr, _ := q["MessageRetentionPeriod"].(float64); qr >= 14*24*3600 {
		t.Errorf("queue retention %v must be shorter than the DLQ's (enqueue time is kept on redrive)", qr)
	}
}

// notBehindAPI are the functions a queue or a schedule invokes (not API
// Gateway).
var notBehindAPI = map[string]bool{"WebhookDispatcherFunction": true, "SchedulerFunction": true}

// TestTemplateSchedulerSchedule: the one scheduler (docs/expiry.md) is an
// EventBridge Scheduler schedule invoking the scheduler function's live
// alias every minute through its own role; no SAM event (an EventBridge
// rule) invokes the function besides, and no other schedule exists.
func TestTemplateSchedulerSchedule(t *testing.T) {
	tpl := loadTemplate(t)
	if evs := events(tpl.Resources["SchedulerFunction"]); len(evs) != 0 {
		t.Fatalf("SchedulerFunction events %v, want none: the schedule invokes it", evs)
	}
	var schedules []string
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Scheduler::Schedule" || r.Type == "AWS::Events::Rule" {
			schedules = append(schedules, id)
		}
		for name, ev := range events(r) {
			if ev["Type"] == "Schedule" || ev["Type"] == "ScheduleV2" {
				t.Errorf("%s event %s is a schedule of its own: the scheduler function runs every timed job", id, name)
			}
		}
	}
	if len(schedules) != 1 || schedules[0] != "SchedulerSchedule" {
		t.Fatalf("schedules %v, want SchedulerSchedule alone", schedules)
	}
	props := tpl.Resources["SchedulerSchedule"].Properties
	target, _ := props["Target"].(map[string]any)
	if props["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("ScheduleExpression %v, want rate(1 minute)", props["ScheduleExpression"])
	}
	if ref, _ := target["Arn"].(map[string]any); ref["Ref"] != "SchedulerFunctionAliaslive" {
		t.Errorf("target %v, want the live alias (SchedulerFunctionAliaslive)", target["Arn"])
	}
	if role, _ := target["RoleArn"].(map[string]any); fmt.Sprint(role["Fn::GetAtt"]) != "[SchedulerInvokeRole Arn]" {
		t.Errorf("target role %v, want SchedulerInvokeRole", target["RoleArn"])
	}
}

var makeTarget = regexp.MustCompile(`(?m)^(build-[A-Za-z0-9]+):`)

func TestMakefileHasBuildTargetPerFunction(t *testing.T) {
	targets := map[string]bool{}
	makefile := readFile(t, filepath.Join(repoRoot, "Makefile"))
	for _, m := range makeTarget.FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	tpl := loadTemplate(t)
	makeBin, makeErr := exec.LookPath("make")
	for id := range tpl.functions() {
		target := "build-" + id
		if !targets[target] {
			t.Errorf("Makefile has no target %s (sam build runs it for %s)", target, id)
			continue
		}
		if makeErr != nil {
			t.Fatalf("make not on PATH: %v", makeErr)
		}
		// Dry run: the recipe must build the right package, for Lambda, into ARTIFACTS_DIR.
		artifacts := filepath.Join(t.TempDir(), "artifacts")
		cmd := exec.Command(makeBin, "-n", "-C", repoRoot, target, "ARTIFACTS_DIR="+artifacts)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("make -n %s: %v\n%s", target, err, out)
			continue
		}
		recipe := string(out)
		for _, want := range []string{
			"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "go build", "-tags lambda.norpc", "-trimpath",
			artifacts + "/bootstrap", "./functions/" + wantFunctions[id],
		} {
			if !strings.Contains(recipe, want) {
				t.Errorf("make %s recipe lacks %q:\n%s", target, want, recipe)
			}
		}
	}
}

func TestTemplateGatewayResponsesUseServiceErrorBody(t *testing.T) {
	tpl := loadTemplate(t)
	responses, _ := tpl.Resources["PaySvcApi"].Properties["GatewayResponses"].(map[string]any)
	want := map[string]struct {
		status any // nil: keep API Gateway's own status
		code   string
	}{
		"THROTTLED":                    {float64(429), "yp_9006"},
		"QUOTA_EXCEEDED":               {float64(429), "yp_9006"},
		"MISSING_AUTHENTICATION_TOKEN": {float64(404), "yp_9004"},
		"RESOURCE_NOT_FOUND":           {float64(404), "yp_9004"},
		"REQUEST_TOO_LARGE":            {float64(413), "yp_2002"},
		"UNSUPPORTED_MEDIA_TYPE":       {float64(415), "yp_2002"},
		"BAD_REQUEST_BODY":             {float64(400), "yp_2002"},
		"DEFAULT_4XX":                  {nil, "yp_2002"},
		"DEFAULT_5XX":                  {float64(500), "yp_9000"},
	}
	for typ, w := range want {
		r, ok := responses[typ].(map[string]any)
		if !ok {
			t.Errorf("GatewayResponses.%s missing", typ)
			continue
		}
		if r["StatusCode"] != w.status {
			t.Errorf("%s: StatusCode = %v, want %v", typ, r["StatusCode"], w.status)
		}
		params, _ := r["ResponseParameters"].(map[string]any)
		headers, _ := params["Headers"].(map[string]any)
		if headers["Content-Type"] != "'application/json'" {
			t.Errorf("%s: Content-Type header = %v", typ, headers["Content-Type"])
		}
		templates, _ := r["ResponseTemplates"].(map[string]any)
		body, _ := templates["application/json"].(string)
		if !strings.Contains(body, `"errorCode":"`+w.code+`"`) || !strings.Contains(body, `"message":`) {
			t.Errorf("%s: body %s, want errorCode %s and a message", typ, body, w.code)
		}
	}
}
