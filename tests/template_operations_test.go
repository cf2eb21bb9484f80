package tests

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/observe"
)

// upstreamEndpoints are the upstream calls of each function, as the EMF
// Operation dimension names them (observe.Operation of the client's paths).
var upstreamEndpoints = map[string][][2]string{ // function -> method, path as the client sends it
	"SessionsFunction": {{http.MethodPost, "/v71/sessions"}},
	"PaymentsFunction": {{http.MethodPost, "/v71/paymentMethods"}, {http.MethodPost, "/v71/payments"},
		{http.MethodPost, "/v71/payments/details"}, {http.MethodDelete, "/v71/storedPaymentMethods/M5N7TQ4TG5PFWR50"}},
	"ModificationsFunction": {{http.MethodPost, "/v71/payments/QFQTPCQ8HXSKGK82/captures"}, {http.MethodPost, "/v71/payments/QFQTPCQ8HXSKGK82/refunds"},
		{http.MethodPost, "/v71/payments/QFQTPCQ8HXSKGK82/reversals"}, {http.MethodPost, "/v71/payments/QFQTPCQ8HXSKGK82/cancels"},
		{http.MethodPost, "/v71/payments/QFQTPCQ8HXSKGK82/amountUpdates"}},
}

// alarmMetric is one metric an alarm reads.
type alarmMetric struct {
	Namespace, Name, Stat string
	Period                string
	Dims                  map[string]string // name -> JSON of the value
}

// alarmMetrics returns the metrics of an alarm (single metric or math).
func alarmMetrics(props map[string]any) []alarmMetric {
	var out []alarmMetric
	dims := func(v any) map[string]string {
		m := map[string]string{}
		for _, d := range asList(v) {
			dm := d.(map[string]any)
			m[fmt.Sprint(dm["Name"])] = strings.Trim(jsonText(dm["Value"]), `"`)
		}
		return m
	}
	if props["MetricName"] != nil {
		out = append(out, alarmMetric{Namespace: fmt.Sprint(props["Namespace"]), Name: fmt.Sprint(props["MetricName"]),
			Stat: fmt.Sprint(props["Statistic"]), Period: jsonText(props["Period"]), Dims: dims(props["Dimensions"])})
	}
	for _, q := range asList(props["Metrics"]) {
		st, ok := q.(map[string]any)["MetricStat"].(map[string]any)
		if !ok {
			continue
		}
		m := st["Metric"].(map[string]any)
		out = append(out, alarmMetric{Namespace: jsonText(m["Namespace"]), Name: fmt.Sprint(m["MetricName"]),
			Stat: fmt.Sprint(st["Stat"]), Period: jsonText(st["Period"]), Dims: dims(m["Dimensions"])})
	}
	return out
}

func alarmExpressions(props map[string]any) []string {
	var out []string
	for _, q := range asList(props["Metrics"]) {
		if e, ok := q.(map[string]any)["Expression"]; ok {
			out = append(out, jsonText(e))
		}
	}
	return out
}

// TestTemplateSilentFailuresHaveAlarms: each failure that used to be
// silent has its alarm, reading the metric that shows it.
func TestTemplateSilentFailuresHaveAlarms(t *testing.T) {
	tpl := loadTemplate(t)
	props := func(id string) map[string]any {
		r, ok := tpl.Resources[id]
		if !ok {
			t.Fatalf("no resource %s", id)
		}
		return r.Properties
	}

	t.Run("upstream error ratio and p99 latency per endpoint", func(t *testing.T) {
		for fn, calls := range upstreamEndpoints {
			short := strings.TrimSuffix(fn, "Function")
			for alarm, metrics := range map[string][]string{
				short + "UpstreamErrorRateAlarm": {observe.MetricUpstreamErrors, observe.MetricUpstreamRequests},
				short + "UpstreamLatencyAlarm":   {observe.MetricUpstreamLatency, observe.MetricUpstreamRequests},
			} {
				got := map[string]bool{}
				for _, m := range alarmMetrics(props(alarm)) {
					if m.Namespace != `"PaySvc"` || m.Dims["Function"] != `{"Ref":"`+fn+`"}` || m.Period != "300" {
						t.Errorf("%s: metric %+v, want PaySvc of %s per 5 minutes", alarm, m, fn)
					}
					if m.Name == observe.MetricUpstreamLatency && m.Stat != "p99" {
						t.Errorf("%s: latency %s, want p99", alarm, m.Stat)
					}
					got[m.Name+" "+m.Dims["Operation"]] = true
				}
				for _, c := range calls {
					op := observe.Operation(c[0], c[1])
					for _, name := range metrics {
						if !got[name+" "+op] {
							t.Errorf("%s does not read %s of endpoint %q", alarm, name, op)
						}
					}
				}
				if len(got) != len(metrics)*len(calls) {
					t.Errorf("%s reads %v, want %d endpoints", alarm, got, len(calls))
				}
			}
			if th := jsonText(props(short + "UpstreamLatencyAlarm")["Threshold"]); th != `{"Ref":"UpstreamLatencyP99AlarmMs"}` {
				t.Errorf("%sUpstreamLatencyAlarm threshold %s", short, th)
			}
		}
	})

	t.Run("unroutable notifications", func(t *testing.T) {
		m := alarmMetrics(props("NotificationsUnroutableAlarm"))
		if len(m) != 1 || m[0].Name != observe.MetricUnroutable || m[0].Dims["Function"] != `{"Ref":"NotificationsFunction"}` {
			t.Errorf("NotificationsUnroutableAlarm reads %+v, want %s of NotificationsFunction", m, observe.MetricUnroutable)
		}
		// Account-level notifications are routine (one REPORT_AVAILABLE
		// per report): no alarm reads their metric.
		for id, r := range tpl.Resources {
			if r.Type != "AWS::CloudWatch::Alarm" {
				continue
			}
			for _, m := range alarmMetrics(r.Properties) {
				if m.Name == observe.MetricAccountLevel {
					t.Errorf("%s reads %s: account-level notifications page no one", id, m.Name)
				}
			}
		}
	})

	t.Run("no notifications while payments are made", func(t *testing.T) {
		silent := tpl.Resources["NotificationsSilentAlarm"]
		rule := jsonText(silent.Properties["AlarmRule"])
		if silent.Type != "AWS::CloudWatch::CompositeAlarm" || !strings.Contains(rule, `ALARM(\"${NotificationsNoneComponentAlarm}\") AND ALARM(\"${PaymentsFlowingComponentAlarm}\")`) {
			t.Errorf("NotificationsSilentAlarm %s: %s", silent.Type, rule)
		}
		none, pays := props("NotificationsNoneComponentAlarm"), props("PaymentsFlowingComponentAlarm")
		if none["TreatMissingData"] != "breaching" || none["ComparisonOperator"] != "LessThanThreshold" || none["MetricName"] != observe.MetricRequests ||
			!strings.Contains(jsonText(none["Dimensions"]), "NotificationsFunction") {
			t.Errorf("none received: %v (no notification at all is the breach)", none)
		}
		if pays["TreatMissingData"] != "notBreaching" || pays["MetricName"] != observe.MetricUpstreamRequests ||
			!strings.Contains(jsonText(pays["Dimensions"]), `"POST /payments"`) {
			t.Errorf("payments made: %v", pays)
		}
		for _, p := range []map[string]any{none, pays} {
			if jsonText(p["Period"]) != `{"Fn::FindInMap":["NotificationSilence",{"Ref":"NotificationSilenceMinutes"},"Seconds"]}` {
				t.Errorf("component period %s, want NotificationSilenceMinutes", jsonText(p["Period"]))
			}
			if p["AlarmActions"] != nil || p["OKActions"] != nil {
				t.Errorf("a component alarm notifies: %v", p)
			}
		}
		for minutes, seconds := range map[string]float64{"10": 600, "15": 900, "30": 1800, "60": 3600} {
			if got := dig(templateMappings(t), "NotificationSilence", minutes, "Seconds"); got != seconds {
				t.Errorf("NotificationSilence %s minutes = %v s", minutes, got)
			}
		}
	})

	t.Run("401 and 429 surges on the merchant API", func(t *testing.T) {
		for filter, status := range map[string]string{"MerchantApi401MetricFilter": "401", "MerchantApi429MetricFilter": "429", "MerchantApiRequestsMetricFilter": ""} {
			p := props(filter)
			pattern := fmt.Sprint(p["FilterPattern"])
			if jsonText(p["LogGroupName"]) != `{"Ref":"ApiAccessLogGroup"}` || !strings.Contains(pattern, `$.resourcePath != "/v1/notifications/upstream"`) ||
				(status != "" && !strings.Contains(pattern, `$.status = "`+status+`"`)) {
				t.Errorf("%s: %v", filter, p)
			}
		}
		for alarm, metric := range map[string]string{"MerchantApi401SurgeAlarm": "MerchantApi401", "MerchantApi429SurgeAlarm": "MerchantApi429"} {
			got := map[string]bool{}
			for _, m := range alarmMetrics(props(alarm)) {
				got[m.Name] = true
			}
			if !got[metric] || !got["MerchantApiRequests"] {
				t.Errorf("%s reads %v, want %s of MerchantApiRequests", alarm, got, metric)
			}
		}
		// The filters read fields of the access log format.
		format := jsonText(tpl.Resources["PaySvcApi"].Properties["AccessLogSetting"])
		for _, field := range []string{`\"status\":\"$context.status\"`, `\"resourcePath\":\"$context.resourcePath\"`} {
			if !strings.Contains(format, field) {
				t.Errorf("the access log format lacks %s", field)
			}
		}
	})

	t.Run("account concurrency near its limit", func(t *testing.T) {
		p := props("AccountConcurrencyAlarm")
		names := map[string]bool{}
		for _, m := range alarmMetrics(p) {
			names[m.Name] = m.Namespace == `"AWS/Lambda"` && len(m.Dims) == 0
		}
		expr := strings.Join(alarmExpressions(p), " ")
		if !names["ClaimedAccountConcurrency"] || !names["ConcurrentExecutions"] || !strings.Contains(expr, "${AccountConcurrencyLimit}") ||
			jsonText(p["Threshold"]) != "80" {
			t.Errorf("AccountConcurrencyAlarm: %v, %s", names, expr)
		}
	})

	t.Run("stored records of an unknown format", func(t *testing.T) {
		m := alarmMetrics(props("StoredFormatUnknownAlarm"))
		if len(m) != 1 || m[0].Name != observe.MetricFormatUnknown || len(m[0].Dims) != 1 || m[0].Dims["Service"] != observe.ServiceName {
			t.Errorf("StoredFormatUnknownAlarm reads %+v, want %s under Service alone", m, observe.MetricFormatUnknown)
		}
	})

	t.Run("secret older than the policy", func(t *testing.T) {
		p := props("UpstreamSecretAgeAlarm")
		readers := map[string]bool{}
		for _, m := range alarmMetrics(p) {
			if m.Name != observe.MetricSecretAge || m.Stat != "Maximum" {
				t.Errorf("UpstreamSecretAgeAlarm reads %+v", m)
			}
			readers[strings.TrimSuffix(strings.TrimPrefix(m.Dims["Function"], `{"Ref":"`), `"}`)] = true
		}
		for fn := range secretReaders {
			if !readers[fn] {
				t.Errorf("UpstreamSecretAgeAlarm does not read the age %s reports", fn)
			}
		}
		if len(readers) != len(secretReaders) || jsonText(p["Threshold"]) != `{"Ref":"SecretMaxAgeDays"}` {
			t.Errorf("UpstreamSecretAgeAlarm: readers %v (want the %d functions that read the secret), threshold %s",
				readers, len(secretReaders), jsonText(p["Threshold"]))
		}
	})

	t.Run("UpstreamLatency dashboard widget", func(t *testing.T) {
		body := jsonText(tpl.Resources["OperationsDashboard"].Properties["DashboardBody"])
		for _, calls := range upstreamEndpoints {
			for _, c := range calls {
				if op := observe.Operation(c[0], c[1]); !strings.Contains(body, `\"`+op+`\"`) {
					t.Errorf("the dashboard's UpstreamLatency widget lacks %s", op)
				}
			}
		}
		if !strings.Contains(body, "UpstreamLatency p99 per endpoint") {
			t.Error("no UpstreamLatency widget on the dashboard (the runbook points to it)")
		}
	})
}

func templateMappings(t *testing.T) map[string]any {
	t.Helper()
	return loadTemplate(t).Mappings
}

// TestTemplateAlarmsFitCloudWatchLimits: a metric math alarm reads at most
// 10 metrics and 10 expressions, exactly one of which it watches.
func TestTemplateAlarmsFitCloudWatchLimits(t *testing.T) {
	tpl := loadTemplate(t)
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" || r.Properties["Metrics"] == nil {
			continue
		}
		stats, exprs, returned := 0, 0, 0
		for _, q := range asList(r.Properties["Metrics"]) {
			qm := q.(map[string]any)
			if qm["MetricStat"] != nil {
				stats++
			}
			if qm["Expression"] != nil {
				exprs++
			}
			if qm["ReturnData"] == true {
				returned++
			}
		}
		if stats > 10 || exprs > 10 || returned != 1 {
			t.Errorf("%s: %d metrics, %d expressions, %d returned (CloudWatch: at most 10 and 10, one returned)", id, stats, exprs, returned)
		}
	}
}

// sizing is each function's memory (docs/sizing.md says why).
var sizing = map[string]int{
	"ConfigFunction": 256, "SessionsFunction": 512, "PaymentsFunction": 512, "ModificationsFunction": 512,
	"LookupsFunction": 256, "WebhooksFunction": 256, "NotificationsFunction": 512, "WebhookDispatcherFunction": 256,
	"SchedulerFunction": 128, "SmokeTestFunction": 128,
}

var sizingRow = regexp.MustCompile("(?m)^\\| `([A-Za-z]+Function)` \\| ([0-9]+) MB \\|")

// TestTemplateFunctionSizing: every function's memory is the one
// docs/sizing.md decides from the measurements, and the page has a row for
// each function.
func TestTemplateFunctionSizing(t *testing.T) {
	tpl := loadTemplate(t)
	documented := map[string]int{}
	page := readFile(t, filepath.Join(repoRoot, "docs", "sizing.md"))
	for _, m := range sizingRow.FindAllStringSubmatch(string(page), -1) {
		documented[m[1]], _ = strconv.Atoi(m[2])
	}
	for id, fn := range tpl.functions() {
		mb, _ := tpl.prop(fn, "MemorySize").(float64)
		if int(mb) != sizing[id] || documented[id] != sizing[id] {
			t.Errorf("%s: MemorySize %v, docs/sizing.md %d MB, want %d", id, mb, documented[id], sizing[id])
		}
	}
	if len(sizing) != len(tpl.functions()) {
		t.Errorf("sizing lists %d functions, the template has %d", len(sizing), len(tpl.functions()))
	}
}

// TestTemplateEdgeAndSampling: the X-Ray sampling rule samples the API's
// stage; the WAF association and the custom domain exist only when their
// parameters are given (and the domain needs its certificate).
func TestTemplateEdgeAndSampling(t *testing.T) {
	tpl := loadTemplate(t)
	rule, _ := tpl.Resources["ApiSamplingRule"].Properties["SamplingRule"].(map[string]any)
	if tpl.Resources["ApiSamplingRule"].Type != "AWS::XRay::SamplingRule" ||
		jsonText(rule["ServiceName"]) != `{"Fn::Sub":"${AWS::StackName}-api/${Environment}"}` ||
		rule["ServiceType"] != "AWS::ApiGateway::Stage" || jsonText(rule["FixedRate"]) != `{"Ref":"TraceSamplingRate"}` {
		t.Errorf("sampling rule %v, want the API stage (%v) at TraceSamplingRate", rule, tpl.Resources["PaySvcApi"].Properties["Name"])
	}
	if got := jsonText(tpl.Resources["PaySvcApi"].Properties["Name"]); got != `{"Fn::Sub":"${AWS::StackName}-api"}` {
		t.Errorf("API name %s: the sampling rule's service name follows it", got)
	}
	params := map[string]string{
		"DomainName": "api.payments.example.com", "DomainCertificateArn": "arn:aws:acm:eu-west-1:210987654321:certificate/0a1b2c3d-0000-4000-8000-000000000001",
		"DomainHostedZoneId": "Z0123456789ABCDEFGHIJ", "WebAclArn": "arn:aws:wafv2:eu-west-1:210987654321:regional/webacl/paysvc/0a1b2c3d-0000-4000-8000-000000000002",
	}
	for p, v := range params {
		spec := tpl.Parameters[p]
		if spec["Default"] != "" || !regexp.MustCompile(fmt.Sprint(spec["AllowedPattern"])).MatchString(v) {
			t.Errorf("%s: default %v (want empty: optional), pattern %v refuses %s", p, spec["Default"], spec["AllowedPattern"], v)
		}
	}
	exp := expandTemplate(t, params)
	for id, want := range map[string]string{"ApiWebAclAssociation": "HasWebAcl", "ApiDomain": "HasDomain", "ApiDomainMapping": "HasDomain", "ApiDomainRecord": "HasDomainRecord"} {
		if got := exp.raw[id]["Condition"]; got != want {
			t.Errorf("%s: condition %v, want %s", id, got, want)
		}
	}
	waf := jsonText(exp.Resources["ApiWebAclAssociation"].Properties["ResourceArn"])
	if !strings.Contains(waf, "/restapis/${PaySvcApi}/stages/") {
		t.Errorf("WAF association on %s, want the API's stage", waf)
	}
	if got := jsonText(exp.Resources["ApiDomain"].Properties); !strings.Contains(got, `"SecurityPolicy":"TLS_1_2"`) || !strings.Contains(got, "REGIONAL") {
		t.Errorf("custom domain %s", got)
	}
	if got := jsonText(exp.Outputs["UpstreamNotificationUrl"]["Value"]); !strings.Contains(got, `"Fn::If":["HasDomain"`) {
		t.Errorf("UpstreamNotificationUrl %s: not on the custom domain when there is one", got)
	}
	if !strings.Contains(jsonText(tpl.Rules["DomainNeedsCertificate"]), "DomainCertificateArn") {
		t.Error("no rule requiring the certificate of a custom domain")
	}
}

// TestTemplateOperatorOutputs: the stack's outputs give the on-call shell
// what the runbook's commands use (OperatorEnvironment, set once with
// eval) and the CodeDeploy application.
func TestTemplateOperatorOutputs(t *testing.T) {
	exp := expandTemplate(t, liveParams)
	if got := jsonText(exp.Outputs["CodeDeployApplication"]["Value"]); got != `{"Ref":"ServerlessDeploymentApplication"}` {
		t.Errorf("CodeDeployApplication output %s", got)
	}
	env := jsonText(exp.Outputs["OperatorEnvironment"]["Value"])
	for _, want := range []string{"export ", "STACK=${AWS::StackName}", "PAYSVC_STORE=dynamo", "PAYSVC_ENVIRONMENT=${Environment}",
		"PAYSVC_TABLE=${PaymentsTable}", "PAYSVC_QUEUE_URL=${DeliveriesQueue}", "PAYSVC_DLQ_URL=${DeliveriesDLQ}",
		"DEPLOY_APP=${ServerlessDeploymentApplication}", "FN_PAYMENTS=${PaymentsFunction}", "FN_SMOKETEST=${SmokeTestFunction}"} {
		if !strings.Contains(env, want) {
			t.Errorf("OperatorEnvironment lacks %s: %s", want, env)
		}
	}
	for fn := range wantFunctions {
		if !strings.Contains(env, "=${"+fn+"}") {
			t.Errorf("OperatorEnvironment lacks the name of %s", fn)
		}
	}
}

// TestTemplateLogGroupsHaveRetention: every function writes to its own log
// group of this stack, with the stack's retention.
func TestTemplateLogGroupsHaveRetention(t *testing.T) {
	tpl := loadTemplate(t)
	for id, fn := range tpl.functions() {
		lc, _ := fn.Properties["LoggingConfig"].(map[string]any)
		ref, _ := lc["LogGroup"].(map[string]any)
		g := tpl.Resources[fmt.Sprint(ref["Ref"])]
		if g.Type != "AWS::Logs::LogGroup" || jsonText(g.Properties["RetentionInDays"]) != `{"Ref":"LogRetentionDays"}` ||
			!strings.Contains(jsonText(g.Properties["LogGroupName"]), "/aws/lambda/${AWS::StackName}/"+wantFunctions[id]) {
			t.Errorf("%s logs to %v: %v", id, ref["Ref"], g.Properties)
		}
	}
}
