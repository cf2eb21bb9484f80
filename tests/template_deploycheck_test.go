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
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
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

func runDeployCheck(t *testing.T, samconfigPath, env string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, ".ci", "deploy-check.sh"), "--config-env", env)
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

	const secret = "arn:aws:secretsmanager:eu-west-1:210987654321:secret:paysvc/live/upstream-Q1w2E3"
	const topic = "arn:aws:sns:eu-west-1:210987654321:paysvc-live-alarms"
	const liveURL = "https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout/v71"
	cases := []struct {
		name      string
		overrides string
		ok        bool
		mention   string
	}{
		{"live, ready", fmt.Sprintf(`Environment="live" UpstreamUrl=%q UpstreamSecretArn=%q AlarmTopicArn=%q DeploymentStrategy="Canary10Percent5Minutes" DispatcherConcurrency="20" DispatcherReservedConcurrency="20"`, liveURL, secret, topic), true, "OK"},
		{"test stack without a topic", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q`, secret), true, "own topic"},
		{"live at once", fmt.Sprintf(`Environment="live" UpstreamUrl=%q UpstreamSecretArn=%q AlarmTopicArn=%q DeploymentStrategy="AllAtOnce"`, liveURL, secret, topic), false, "DeploymentStrategy=AllAtOnce"},
		{"live without a topic", fmt.Sprintf(`Environment="live" UpstreamUrl=%q UpstreamSecretArn=%q DeploymentStrategy="Canary10Percent5Minutes"`, liveURL, secret), false, "AlarmTopicArn"},
		{"live on the test upstream", fmt.Sprintf(`Environment="live" UpstreamSecretArn=%q AlarmTopicArn=%q DeploymentStrategy="Canary10Percent5Minutes"`, secret, topic), false, "test environment"},
		{"example account", `Environment="test" UpstreamSecretArn="arn:aws:secretsmanager:eu-west-1:111111111111:secret:paysvc/dev/upstream-AbCdEf"`, false, "example account id"},
		{"reservation below the cap", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q DispatcherConcurrency="10" DispatcherReservedConcurrency="5"`, secret), false, "DispatcherReservedConcurrency=5"},
		{"no secret", `Environment="test"`, false, "UpstreamSecretArn: required"},
		{"unknown parameter", fmt.Sprintf(`Environment="test" UpstreamSecretArn=%q Nope="1"`, secret), false, "Nope: not a parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "samconfig.toml")
			content := "version = 0.1\n[x.global.parameters]\nstack_name = \"paysvc-x\"\n[x.deploy.parameters]\ncapabilities = \"CAPABILITY_IAM\"\nparameter_overrides = " +
				fmt.Sprintf("%q", tc.overrides) + "\n"
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := runDeployCheck(t, path, "x")
			if (err == nil) != tc.ok || !strings.Contains(out, tc.mention) {
				t.Errorf("ok %v (err %v), want %v, mentioning %q:\n%s", err == nil, err, tc.ok, tc.mention, out)
			}
		})
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
		if port := dig(cfg, env, "local_start_api", "parameters", "port"); port == float64(3000) {
			t.Errorf("[%s] sam local start-api on port 3000, the port of make run", env)
		}
	}
}

// TestTemplateAlarmsHaveARunbookEntry: every alarm notifies a topic and has
// a section in docs/runbook.md saying what to do; the operations alarms
// the service needs exist.
func TestTemplateAlarmsHaveARunbookEntry(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	runbook := string(raw)
	tpl := loadTemplate(t)
	names := map[string]bool{}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		name := strings.TrimPrefix(jsonText(r.Properties["AlarmName"]), `{"Fn::Sub":"${AWS::StackName}-`)
		name = strings.TrimSuffix(name, `"}`)
		names[name] = true
		if !strings.Contains(runbook, "`"+name+"`") {
			t.Errorf("%s: alarm %s has no entry in docs/runbook.md", id, name)
		}
		if actions := jsonText(r.Properties["AlarmActions"]); !strings.Contains(actions, "AlarmTopic") {
			t.Errorf("%s: AlarmActions %s, want the alarm topic", id, actions)
		}
	}
	for _, n := range []string{"dynamodb-throttles", "dynamodb-system-errors", "deliveries-queue-age", "api-latency-p99",
		"notifications-401-rate", "api-5xx-rate", "deliveries-dlq"} {
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
		if r.Type == "AWS::CloudWatch::Alarm" && !shown[id] {
			t.Errorf("alarm %s is not on the dashboard's alarm widget", id)
		}
	}
}
