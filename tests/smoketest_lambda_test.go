package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/internal/awsfake"
	"github.com/yp/paysvc/shared/smoketest"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/tests/lambdaharness"
)

// smokeKinds maps each deployed function to its smoke test kind.
var smokeKinds = map[string]smoketest.Kind{
	"ConfigFunction": smoketest.KindConfig, "SessionsFunction": smoketest.KindSessions, "PaymentsFunction": smoketest.KindPayments,
	"ModificationsFunction": smoketest.KindModifications, "LookupsFunction": smoketest.KindLookups, "WebhooksFunction": smoketest.KindWebhooks,
	"NotificationsFunction": smoketest.KindNotifications, "WebhookDispatcherFunction": smoketest.KindDispatcher,
	"SchedulerFunction": smoketest.KindScheduler,
}

// TestLambdaSmokeTestGatesDeployments runs the smoke test function's real
// bootstrap under the Lambda Runtime API harness, as CodeDeploy runs it
// for each function's deployment, before and after traffic. Its CodeDeploy
// calls go to a fake endpoint (moto has no CodeDeploy) that serves the
// deployment's target and records the hook's status; its Lambda Invoke
// calls go to a fake endpoint that runs each function's real bootstrap,
// also under the harness, against DynamoDB and Secrets Manager on moto and
// the upstream simulator: the probes reach the handlers. Every healthy
// function passes; a version that answers wrongly and one that cannot
// start fail their deployment.
func TestLambdaSmokeTestGatesDeployments(t *testing.T) {
	e := newLambdaEnv(t)
	ctx := context.Background()
	e.newCanary(t, sampleAPIKey, "site_demo")

	lambda := awsfake.NewLambda()
	var targets []string
	register := func(name string, kind smoketest.Kind, h *lambdaharness.Harness) {
		targets = append(targets, string(kind)+"="+name)
		lambda.Register(name, map[string]string{"live": testFunctionVersion}, harnessInvoke(h))
	}
	for id, kind := range smokeKinds {
		register("paysvc-it-"+id, kind, e.start(t, id).h)
	}
	// A version that answers wrongly: a config function of the live
	// environment refuses the canary's test key (401, not the config).
	wrong := e.envFor(t, "ConfigFunction")
	wrong["PAYSVC_ENVIRONMENT"] = "live"
	register("paysvc-it-wrong-config", smoketest.KindConfig, lambdaharness.StartWithOptions(t, lambdaharness.BuildBootstrap(t, "config"), wrong,
		lambdaharness.Options{FunctionName: "paysvc-it-wrong-config", Region: moto.Region, Timeout: 15 * time.Second, InitTimeout: 20 * time.Second}))
	// A version that cannot start: a payments function whose
	// configuration does not parse fails its init.
	broken := e.envFor(t, "PaymentsFunction")
	broken["PAYSVC_UPSTREAM_TIMEOUT"] = "forever"
	register("paysvc-it-broken-payments", smoketest.KindPayments, lambdaharness.StartWithOptions(t, lambdaharness.BuildBootstrap(t, "payments"), broken,
		lambdaharness.Options{FunctionName: "paysvc-it-broken-payments", Region: moto.Region, Timeout: 15 * time.Second, InitTimeout: 20 * time.Second}))
	sort.Strings(targets)
	e.smokeTargets = strings.Join(targets, ",")

	codedeploy := awsfake.NewCodeDeploy()
	lambdaSrv, codedeploySrv := httptest.NewServer(lambda), httptest.NewServer(codedeploy)
	t.Cleanup(lambdaSrv.Close)
	t.Cleanup(codedeploySrv.Close)
	env := e.envFor(t, smokeTestFunction)
	env["AWS_ENDPOINT_URL_LAMBDA"] = lambdaSrv.URL
	env["AWS_ENDPOINT_URL_CODEDEPLOY"] = codedeploySrv.URL
	smoke := lambdaharness.StartWithOptions(t, lambdaharness.BuildBootstrap(t, "smoketest"), env, lambdaharness.Options{
		FunctionName: "paysvc-it-" + smokeTestFunction, Region: moto.Region, Timeout: 120 * time.Second, InitTimeout: 20 * time.Second})

	type deployment struct {
		id, function, phase string
		want                string // the hook status reported
	}
	var deployments []deployment
	for id := range smokeKinds {
		for _, phase := range []string{"BeforeAllowTraffic", "AfterAllowTraffic"} {
			deployments = append(deployments, deployment{fmt.Sprintf("d-%s-%s", strings.TrimSuffix(id, "Function"), phase), "paysvc-it-" + id, phase, "Succeeded"})
		}
	}
	deployments = append(deployments,
		deployment{"d-WRONG", "paysvc-it-wrong-config", "BeforeAllowTraffic", "Failed"},
		deployment{"d-BROKEN", "paysvc-it-broken-payments", "BeforeAllowTraffic", "Failed"})
	sort.Slice(deployments, func(i, j int) bool { return deployments[i].id < deployments[j].id })
	for _, d := range deployments {
		codedeploy.AddDeployment(d.id, awsfake.LambdaTarget{Function: d.function, CurrentVersion: "6", TargetVersion: testFunctionVersion, Phase: d.phase})
	}

	for i, d := range deployments {
		t.Run(d.id, func(t *testing.T) {
			hook := fmt.Sprintf(`{"DeploymentId":%q,"LifecycleEventHookExecutionId":"hook-%d"}`, d.id, i)
			rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			defer cancel()
			res, err := smoke.Do(rctx, []byte(hook))
			if err != nil || res.Err != nil {
				t.Fatalf("smoke test invocation: %v %v", err, res.Err)
			}
			var got *awsfake.HookStatus
			for _, r := range codedeploy.Reports() {
				if r.DeploymentID == d.id {
					r := r
					got = &r
				}
			}
			if got == nil || got.Status != d.want || got.HookExecutionID != fmt.Sprintf("hook-%d", i) {
				t.Fatalf("reported %+v, want %s\n%s", got, d.want, tail(smoke.Logs(), 3000))
			}
			// Before traffic the new version itself, after it the alias.
			wantQualifier := testFunctionVersion
			if d.phase == "AfterAllowTraffic" {
				wantQualifier = "live"
			}
			n := 0
			for _, inv := range lambda.Invocations() {
				if inv.Function == d.function && inv.Qualifier == wantQualifier && inv.Version == testFunctionVersion {
					n++
				}
			}
			if n == 0 {
				t.Errorf("%s was not invoked at %s", d.function, wantQualifier)
			}
		})
	}

	// What the probes did: the test environment's payment was sent, and
	// nothing reached the dead-letter queues.
	logs := smoke.Logs()
	for _, want := range []string{`"msg":"smoke test probe passed"`, `"probe":"POST payments with a test card (test upstream)"`,
		`"msg":"smoke test probe failed"`, `"function":"paysvc-it-wrong-config"`, `"function":"paysvc-it-broken-payments"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("smoke test logs lack %s", want)
		}
	}
	paid := false
	for _, inv := range lambda.Invocations() {
		if inv.Function == "paysvc-it-PaymentsFunction" && strings.Contains(string(inv.Payload), "test_4111111111111111") {
			paid = true
		}
	}
	if !paid {
		t.Error("no test payment was sent to the payments function")
	}
	for _, q := range []string{e.dlqURL} {
		if n := sqsDepth(t, e.sqs, q); n != 0 {
			t.Errorf("the probes left %d messages in %s", n, q)
		}
	}
	if strings.Contains(logs, e.secrets["merchant API key"]) {
		t.Error("the smoke test logged the canary key")
	}
}

// harnessInvoke serves a fake Lambda invocation with a function running
// under the harness: its answer, or its failure as Lambda reports it
// (FunctionError Unhandled with the error document).
func harnessInvoke(h *lambdaharness.Harness) awsfake.InvokeFunc {
	return func(ctx context.Context, _ string, payload []byte) ([]byte, string, error) {
		res, err := h.Do(ctx, payload)
		var initErr *lambdaharness.InitError
		switch {
		case errors.As(err, &initErr):
			b, _ := json.Marshal(map[string]string{"errorType": initErr.Type, "errorMessage": initErr.Message})
			return b, "Unhandled", nil
		case err != nil:
			return nil, "", err
		case res.Err != nil:
			return res.Err.Payload, "Unhandled", nil
		}
		return res.Payload, "", nil
	}
}

// newCanary stores the canary merchant's key as the smoke test reads it
// (CanaryKeySecretArn) and sets e.canaryARN.
func (e *lambdaEnv) newCanary(t *testing.T, apiKey, siteID string) {
	t.Helper()
	value, _ := json.Marshal(smoketest.Canary{APIKey: apiKey, SiteID: siteID})
	e.canaryARN = motoSecret(t, e.endpoint, "paysvc/it/canary-"+e.table, string(value))
}

// tail returns the end of s (logs in failures).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
