package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// samconfig parses samconfig.toml (python's tomllib; the module has no TOML
// dependency).
func samconfig(t *testing.T) map[string]any {
	t.Helper()
	out, err := exec.Command("python3", "-c", `import json, sys, tomllib
json.dump(tomllib.load(open(sys.argv[1], "rb")), sys.stdout)`, filepath.Join(repoRoot, "samconfig.toml")).Output()
	if err != nil {
		t.Fatalf("parse samconfig.toml: %v", err)
	}
	var m map[string]any
	decodeJSON(t, out, &m)
	return m
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, _ := v.(map[string]any)
		v = mm[p]
	}
	return v
}

var overrideRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// overrides returns an environment's parameter_overrides.
func overrides(t *testing.T, cfg map[string]any, env string) map[string]string {
	t.Helper()
	s, _ := dig(cfg, env, "deploy", "parameters", "parameter_overrides").(string)
	out := map[string]string{}
	for _, m := range overrideRE.FindAllStringSubmatch(s, -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("[%s] has no parameter_overrides", env)
	}
	return out
}

// TestTemplateParametersRefusePlaceholders: a value still holding a
// placeholder cannot be deployed: the parameter's AllowedPattern refuses it
// (CloudFormation checks it before creating anything).
func TestTemplateParametersRefusePlaceholders(t *testing.T) {
	tpl := loadTemplate(t)
	cases := map[string]struct{ good, bad []string }{
		"UpstreamUrl": {
			good: []string{"https://checkout-test.adyen.com/v71", "https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout/v71"},
			bad: []string{"https://{prefix}-checkout-live.adyenpayments.com/checkout/v71", "https://<live-prefix>-checkout-live.adyenpayments.com/checkout/v71",
				"http://checkout-test.adyen.com/v71", "https://checkout-test.adyen.com/v71?x=1", "https:// spaced.example/v71"},
		},
		"UpstreamSecretArn": {
			good: []string{"arn:aws:secretsmanager:eu-west-1:210987654321:secret:paysvc/live/upstream-Q1w2E3"},
			bad: []string{"arn:aws:secretsmanager:eu-west-1:<account-id>:secret:paysvc/live/upstream-<suffix>",
				"arn:aws:secretsmanager:eu-west-1:210987654321:secret:paysvc/live/upstream", "paysvc/live/upstream"},
		},
		"AlarmTopicArn": {
			good: []string{"", "arn:aws:sns:eu-west-1:210987654321:paysvc-live-alarms"},
			bad:  []string{"arn:aws:sns:eu-west-1:<account-id>:paysvc-live-alarms", "arn:aws:sns:eu-west-1:{account}:x"},
		},
		"AlarmEmail": {
			good: []string{"", "oncall@example.com"},
			bad:  []string{"<oncall address>", "oncall"},
		},
	}
	// Every placeholder of samconfig.toml is refused too.
	cfg := samconfig(t)
	for env := range cfg {
		if env == "version" {
			continue
		}
		for k, v := range overrides(t, cfg, env) {
			if c, ok := cases[k]; ok && strings.ContainsAny(v, "<{") {
				c.bad = append(c.bad, v)
				cases[k] = c
			}
		}
	}
	for name, c := range cases {
		p := tpl.Parameters[name]
		pattern, _ := p["AllowedPattern"].(string)
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Errorf("%s: AllowedPattern %q: %v", name, pattern, err)
			continue
		}
		full := func(v string) bool { m := re.FindString(v); return m == v && re.MatchString(v) }
		if def, ok := p["Default"].(string); ok && !full(def) {
			t.Errorf("%s: its Default %q is refused by its pattern", name, def)
		}
		for _, v := range c.good {
			if !full(v) {
				t.Errorf("%s: %q refused, want accepted", name, v)
			}
		}
		for _, v := range c.bad {
			if full(v) {
				t.Errorf("%s: %q accepted, want refused", name, v)
			}
		}
	}
}

func runDeployCheck(t *testing.T, samconfigPath, env string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot, ".ci", "deploy-check.sh"), "--config-env", env}, args...)...)
	cmd.Env = append(os.Environ(), "SAMCONFIG="+samconfigPath)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDeployCheck: `make deploy-check` refuses the committed samconfig.toml
// (placeholders) naming every placeholder, accepts real values, and refuses
// an unsafe live configuration.
func TestDeployCheck(t *testing.T) {
	repoConfig, _ := filepath.Abs(filepath.Join(repoRoot, "samconfig.toml"))
	for _, env := range []string{"default", "test", "prod"} {
		out, err := runDeployCheck(t, repoConfig, env)
		if err == nil || !strings.Contains(out, "NOT ready to deploy") || !strings.Contains(out, "UpstreamSecretArn=") {
			t.Errorf("[%s] with placeholders: err %v, output:\n%s", env, err, out)
		}
		if env == "prod" && !strings.Contains(out, "UpstreamUrl=") {
			t.Errorf("[prod]: the upstream URL placeholder is not named:\n%s", out)
		}
	}

	cases := []struct {
		name      string
		overrides string
		args      []string // more deploy-check arguments
		stack     string   // default paysvc-x
		ok        bool
		mention   string
	}{
		{"live, ready", liveReady, nil, "", true, "OK"},
		{"test stack without a topic", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q`, liveSecret), nil, "", true, "own topic"},
		{"live at once", liveReady, []string{"--parameter-overrides", `DeploymentStrategy="AllAtOnce"`}, "", false, "DeploymentStrategy=AllAtOnce"},
		{"live at once, emergency", liveReady, []string{"--parameter-overrides", `DeploymentStrategy="AllAtOnce"`, "--emergency"}, "", true, "WARNING: DeploymentStrategy=AllAtOnce"},
		{"live without a topic", liveReady, []string{"--parameter-overrides", `AlarmTopicArn=""`}, "", false, "AlarmTopicArn"},
		{"live on the test upstream", liveReady, []string{"--parameter-overrides", `UpstreamUrl="https://checkout-test.adyen.com/v71"`}, "", false, "test environment"},
		{"live without the canary key", liveReady, []string{"--parameter-overrides", `CanaryKeySecretArn=""`}, "", false, "CanaryKeySecretArn: a live stack's smoke test"},
		{"live without the notifications cap", liveReady, []string{"--parameter-overrides", `NotificationsReservedConcurrency="0"`}, "", false, "NotificationsReservedConcurrency: live caps it"},
		{"live without the webhooks cap", liveReady, []string{"--parameter-overrides", `WebhooksReservedConcurrency="0"`}, "", false, "WebhooksReservedConcurrency: live caps it"},
		{"reservations above the account's quota", liveReady, []string{"--parameter-overrides", `PaymentsReservedConcurrency="900"`}, "", false, "leave fewer than 100 of AccountConcurrencyLimit=1000 unreserved"},
		{"a bigger quota takes them", liveReady, []string{"--parameter-overrides", `PaymentsReservedConcurrency="900" AccountConcurrencyLimit="3000"`}, "", true, "OK"},
		{"stack name too long for the sampling rule", liveReady, nil, "paysvc-live-eu-west-1-payments-api", false, "longer than 32 characters"},
		{"example account", `Environment="test" UpstreamSecretArn="arn:aws:secretsmanager:eu-west-1:111111111111:secret:paysvc/dev/upstream-AbCdEf"`, nil, "", false, "example account id"},
		{"reservation below the cap", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q DispatcherConcurrency="10" DispatcherReservedConcurrency="5"`, liveSecret), nil, "", false, "DispatcherReservedConcurrency=5"},
		{"no secret", `Environment="test"`, nil, "", false, "UpstreamSecretArn: required"},
		{"unknown parameter", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q Nope="1"`, liveSecret), nil, "", false, "Nope: not a parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeSamconfig(t, tc.stack, tc.overrides)
			out, err := runDeployCheck(t, path, "x", tc.args...)
			if (err == nil) != tc.ok || !strings.Contains(out, tc.mention) {
				t.Errorf("ok %v (err %v), want %v, mentioning %q:\n%s", err == nil, err, tc.ok, tc.mention, out)
			}
		})
	}
}

// A live configuration deploy-check accepts.
const (
	liveSecret = "arn:aws:secretsmanager:eu-west-1:210987654321:secret:paysvc/live/upstream-Q1w2E3"
	liveTopic  = "arn:aws:sns:eu-west-1:210987654321:paysvc-live-alarms"
	liveURL    = "https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout/v71"
	liveCanary = "arn:aws:secretsmanager:eu-west-1:210987654321:secret:paysvc/live/canary-Z9y8X7"
)

var liveReady = fmt.Sprintf(`Environment="live" UpstreamUrl=%q UpstreamSecretArn=%q AlarmTopicArn=%q DeploymentStrategy="Canary10Percent5Minutes" `+
	`DispatcherConcurrency="20" DispatcherReservedConcurrency="20" NotificationsReservedConcurrency="50" WebhooksReservedConcurrency="10" `+
	`CanaryKeySecretArn=%q`, liveURL, liveSecret, liveTopic, liveCanary)

// writeSamconfig writes a samconfig.toml with one environment, x, of stack
// stack (default paysvc-x) with these parameter_overrides.
func writeSamconfig(t *testing.T, stack, overrides string) string {
	t.Helper()
	if stack == "" {
		stack = "paysvc-x"
	}
	path := filepath.Join(t.TempDir(), "samconfig.toml")
	content := fmt.Sprintf("version = 0.1\n[x.global.parameters]\nstack_name = %q\n[x.deploy.parameters]\ncapabilities = \"CAPABILITY_IAM\"\nparameter_overrides = %q\n",
		stack, overrides)
	writeFile(t, path, []byte(content), 0o600)
	return path
}

// TestDeployCheckOverridesAdd: overrides given on the command line add to
// the environment's (a key given replaces that key only), and
// --print-overrides prints the merged list, the only thing on stdout,
// which sam deploy gets from make deploy.
func TestDeployCheckOverridesAdd(t *testing.T) {
	path := writeSamconfig(t, "", liveReady)
	cmd := exec.Command("bash", filepath.Join(repoRoot, ".ci", "deploy-check.sh"), "--config-env", "x",
		"--parameter-overrides", `LogLevel="debug" DispatcherConcurrency="25" DispatcherReservedConcurrency="25"`, "--print-overrides")
	cmd.Env = append(os.Environ(), "SAMCONFIG="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy-check: %v\n%s", err, stderr.String())
	}
	got := map[string]string{}
	for _, m := range overrideRE.FindAllStringSubmatch(string(out), -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{}
	for _, m := range overrideRE.FindAllStringSubmatch(liveReady, -1) {
		want[m[1]] = m[2]
	}
	want["LogLevel"], want["DispatcherConcurrency"], want["DispatcherReservedConcurrency"] = "debug", "25", "25"
	if jsonText(got) != jsonText(want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("merged overrides\n%s\nwant %v", out, want)
	}
	if !strings.Contains(stderr.String(), "OK") {
		t.Errorf("the verdict goes to stderr with --print-overrides: %s", stderr.String())
	}
}

// TestMakeDeployPassesTheMergedOverrides runs `make deploy` (but its
// template lint) with a stand-in for the SAM CLI that records its arguments: sam deploy gets the
// environment's overrides with PARAMETER_OVERRIDES on top, as deploy-check
// checked them; EMERGENCY=1 lets a live deploy at once through.
func TestMakeDeployPassesTheMergedOverrides(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "sam-calls")
	fake := filepath.Join(dir, "sam")
	writeFile(t, fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> "+record+"\necho --- >> "+record+"\n"), 0o755)
	path := writeSamconfig(t, "", liveReady)
	root, _ := filepath.Abs(repoRoot)
	run := func(extra ...string) (string, error) {
		_ = os.Remove(record)
		// -o lint-template: make deploy's template lint is
		// TestTemplate*'s and .ci/check-template.sh's business.
		args := append([]string{"-C", root, "-o", "lint-template", "deploy", "CONFIG_ENV=x", "SAMCONFIG=" + path, "SAM=" + fake}, extra...)
		out, err := exec.Command("make", args...).CombinedOutput()
		calls, _ := os.ReadFile(record)
		return string(out) + "\n" + string(calls), err
	}
	out, err := run(`PARAMETER_OVERRIDES=LogLevel="debug" DeploymentStrategy="Linear10PercentEvery1Minute"`)
	if err != nil {
		t.Fatalf("make deploy: %v\n%s", err, out)
	}
	_, deploy, _ := strings.Cut(out, "deploy\n--config-env\nx\n--config-file\n"+path+"\n--parameter-overrides\n")
	overrides, _, _ := strings.Cut(deploy, "\n")
	for _, want := range []string{`LogLevel="debug"`, `DeploymentStrategy="Linear10PercentEvery1Minute"`, `Environment="live"`,
		`CanaryKeySecretArn="` + liveCanary + `"`, `NotificationsReservedConcurrency="50"`} {
		if !strings.Contains(overrides, want) {
			t.Errorf("sam deploy --parameter-overrides lacks %s:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "build\n--config-env\nx\n") {
		t.Errorf("no sam build:\n%s", out)
	}
	if out, err := run(`PARAMETER_OVERRIDES=DeploymentStrategy="AllAtOnce"`); err == nil || strings.Contains(out, "--parameter-overrides\n") {
		t.Errorf("a live deploy at once went through:\n%s", out)
	}
	out, err = run(`PARAMETER_OVERRIDES=DeploymentStrategy="AllAtOnce"`, "EMERGENCY=1")
	if err != nil || !strings.Contains(out, `DeploymentStrategy="AllAtOnce"`) || !strings.Contains(out, "WARNING") {
		t.Errorf("an emergency deploy at once: %v\n%s", err, out)
	}
}

// TestSamconfigDeploymentSettings: live deploys by canary, the others at
// once; the live dispatcher's reservation covers its cap; `sam local
// start-api` does not take make run's port.
func TestSamconfigDeploymentSettings(t *testing.T) {
	cfg := samconfig(t)
	want := map[string]string{"default": "AllAtOnce", "test": "AllAtOnce", "prod": "Canary10Percent5Minutes"}
	for env, strategy := range want {
		o := overrides(t, cfg, env)
		if o["DeploymentStrategy"] != strategy {
			t.Errorf("[%s] DeploymentStrategy = %q, want %s", env, o["DeploymentStrategy"], strategy)
		}
		if env == "prod" && (o["Environment"] != "live" || o["DispatcherReservedConcurrency"] != o["DispatcherConcurrency"] || o["DispatcherConcurrency"] == "") {
			t.Errorf("[prod] Environment %q, DispatcherConcurrency %q, reserved %q", o["Environment"], o["DispatcherConcurrency"], o["DispatcherReservedConcurrency"])
		}
		if env == "prod" && (o["NotificationsReservedConcurrency"] == "" || o["WebhooksReservedConcurrency"] == "" || o["CanaryKeySecretArn"] == "") {
			t.Errorf("[prod] caps notifications %q, webhooks %q; canary key %q", o["NotificationsReservedConcurrency"], o["WebhooksReservedConcurrency"], o["CanaryKeySecretArn"])
		}
		if port := dig(cfg, env, "local_start_api", "parameters", "port"); port == float64(3000) {
			t.Errorf("[%s] sam local start-api on port 3000, the port of make run", env)
		}
	}
}

// TestTemplateAlarmsHaveARunbookEntry: every alarm notifies a topic and has
// a section in docs/runbook.md saying what to do; the operations alarms
// the service needs exist.
func TestTemplateAlarmsHaveARunbookEntry(t *testing.T) {
	runbook := string(readFile(t, filepath.Join(repoRoot, "docs", "runbook.md")))
	tpl := loadTemplate(t)
	names := map[string]bool{}
	// Component alarms of a composite have no actions: the composite
	// notifies.
	composed := map[string]bool{}
	for _, r := range tpl.Resources {
		if r.Type == "AWS::CloudWatch::CompositeAlarm" {
			for _, m := range regexp.MustCompile(`ALARM\(\\"\$\{([A-Za-z0-9]+)\}\\"\)`).FindAllStringSubmatch(jsonText(r.Properties["AlarmRule"]), -1) {
				composed[m[1]] = true
			}
		}
	}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" && r.Type != "AWS::CloudWatch::CompositeAlarm" {
			continue
		}
		name := strings.TrimPrefix(jsonText(r.Properties["AlarmName"]), `{"Fn::Sub":"${AWS::StackName}-`)
		name = strings.TrimSuffix(name, `"}`)
		names[name] = true
		if !strings.Contains(runbook, "`"+name+"`") {
			t.Errorf("%s: alarm %s has no entry in docs/runbook.md", id, name)
		}
		actions := jsonText(r.Properties["AlarmActions"])
		switch {
		case composed[id] && r.Properties["AlarmActions"] != nil:
			t.Errorf("%s: a composite's component notifies itself (%s)", id, actions)
		case !composed[id] && !strings.Contains(actions, "AlarmTopic"):
			t.Errorf("%s: AlarmActions %s, want the alarm topic", id, actions)
		}
	}
	if len(composed) != 2 {
		t.Errorf("composite alarm components %v, want notifications-silent's two", composed)
	}
	for _, n := range []string{"dynamodb-throttles", "dynamodb-system-errors", "deliveries-queue-age", "api-latency-p99",
		"notifications-401-rate", "api-5xx-rate", "deliveries-dlq", "notifications-unroutable",
		"notifications-silent", "merchant-api-401-surge", "merchant-api-429-surge", "account-concurrency", "upstream-secret-age",
		"payments-upstream-latency-p99", "payments-upstream-error-rate", "payments-version-5xx", "payments-version-errors"} {
		if !names[n] {
			t.Errorf("no alarm %s", n)
		}
	}
}

// TestTemplateDashboardShowsEveryAlarm: the dashboard body is JSON once
// substituted, and its alarm widget lists every alarm of the stack.
func TestTemplateDashboardShowsEveryAlarm(t *testing.T) {
	tpl := loadTemplate(t)
	sub, _ := tpl.Resources["OperationsDashboard"].Properties["DashboardBody"].(map[string]any)
	body, _ := sub["Fn::Sub"].(string)
	var dash struct {
		Widgets []struct {
			Type       string `json:"type"`
			Properties struct {
				Alarms []string `json:"alarms"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(regexp.MustCompile(`\$\{[^}]+\}`).ReplaceAllStringFunc(body, func(ref string) string {
		return strings.NewReplacer("${", "", "}", "", ".Arn", "").Replace(ref)
	})), &dash); err != nil {
		t.Fatalf("dashboard body is not JSON: %v", err)
	}
	shown := map[string]bool{}
	for _, w := range dash.Widgets {
		for _, a := range w.Properties.Alarms {
			shown[a] = true
		}
	}
	for id, r := range tpl.Resources {
		if (r.Type == "AWS::CloudWatch::Alarm" || r.Type == "AWS::CloudWatch::CompositeAlarm") && !shown[id] {
			t.Errorf("alarm %s is not on the dashboard's alarm widget", id)
		}
	}
}
