package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/webhooks"
)

// runbookBlock is one ```sh block of docs/runbook.md.
type runbookBlock struct {
	section  string // the heading above it
	script   string
	embedded bool // <!-- runbook-test: embedded -->: the local server's store
	line     int
}

var (
	fenceRE   = regexp.MustCompile("(?s)(<!-- runbook-test: embedded -->\\n)?```sh\\n(.*?)```")
	headingRE = regexp.MustCompile(`(?m)^#{2,3} (.*)$`)
)

func runbookText(t *testing.T) string {
	t.Helper()
	return string(readFile(t, filepath.Join(repoRoot, "docs", "runbook.md")))
}

// runbookBlocks returns the runbook's sh blocks in order.
func runbookBlocks(t *testing.T) []runbookBlock {
	t.Helper()
	text := runbookText(t)
	var out []runbookBlock
	for _, m := range fenceRE.FindAllStringSubmatchIndex(text, -1) {
		section := ""
		for _, h := range headingRE.FindAllStringSubmatchIndex(text[:m[0]], -1) {
			section = text[h[2]:h[3]]
		}
		out = append(out, runbookBlock{section: section, script: text[m[4]:m[5]], embedded: m[2] >= 0,
			line: strings.Count(text[:m[0]], "\n") + 1})
	}
	if len(out) < 10 {
		t.Fatalf("docs/runbook.md has %d sh blocks", len(out))
	}
	return out
}

// localCommandRE finds the commands that run here for real: the admin
// CLI (DynamoDB and SQS on moto, or the embedded store) and the AWS CLI's
// SQS, DynamoDB and Secrets Manager commands (moto).
var localCommandRE = regexp.MustCompile(`paysvc-admin [a-z-]+(?: [a-z-]+)?|aws (?:sqs|dynamodb|secretsmanager) [a-z-]+`)

// notOnMoto are AWS CLI commands of local services that moto does not
// implement: they go to the stand-in like the AWS-only ones.
var notOnMoto = map[string]string{
	"aws sqs start-message-move-task":            "moto has no message move tasks",
	"aws sqs list-message-move-tasks":            "moto has no message move tasks",
	"aws dynamodb describe-contributor-insights": "moto has no Contributor Insights",
	"aws dynamodb update-contributor-insights":   "moto has no Contributor Insights",
}

// TestRunbookCommandsRun runs every sh block of docs/runbook.md, as an
// operator would paste it into the shell the runbook sets up, against a
// stack stand-in: DynamoDB, SQS and Secrets Manager on moto with the tables,
// queues and secret of a deployed stack, a merchant with a dead-lettered
// delivery, and the stack's OperatorEnvironment output as the template
// computes it. The admin CLI (the real binary) and the AWS CLI's SQS,
// DynamoDB and Secrets Manager commands run for real; the commands that need
// the deployed stack (CloudWatch, Logs, CodeDeploy, Lambda, …) go to a
// stand-in that records them (listed in the log). Every block must succeed,
// and every local command of the runbook must have run.
func TestRunbookCommandsRun(t *testing.T) {
	for _, tool := range []string{"aws", "jq", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/test.sh checks it): %v", tool, err)
		}
	}
	realAWS, _ := exec.LookPath("aws")
	st := newRunbookStack(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	calls := filepath.Join(dir, "calls")
	outputs := filepath.Join(dir, "outputs")
	for _, d := range []string{bin, outputs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The admin CLI as `make admin` builds it, behind a wrapper that
	// records each call.
	root, _ := filepath.Abs(repoRoot)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "paysvc-admin"), "./cmd/paysvc-admin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build paysvc-admin: %v\n%s", err, out)
	}
	writeScript(t, filepath.Join(bin, "paysvc-admin"), fmt.Sprintf(`echo "REAL paysvc-admin $*" >> %q
exec %q "$@"`, calls, filepath.Join(dir, "paysvc-admin")))
	// The AWS CLI: SQS, DynamoDB and Secrets Manager to moto, the stack's
	// outputs from the template, everything else recorded as stubbed.
	var moved []string
	for cmd := range notOnMoto {
		moved = append(moved, strings.TrimPrefix(cmd, "aws "))
	}
	writeScript(t, filepath.Join(bin, "aws"), fmt.Sprintf(`calls=%q
case "$1 $2" in
  "cloudformation describe-stacks")
    key=$(printf '%%s\n' "$@" | grep -o "OutputKey=='[A-Za-z]*'" | head -1 | cut -d"'" -f2)
    echo "STUB aws $*" >> "$calls"
    if [ -n "$key" ] && [ -f %q/"$key" ]; then cat %q/"$key"; fi
    exit 0 ;;
esac
for m in %s; do
  if [ "$1 $2" = "$m" ]; then echo "STUB aws $*" >> "$calls"; exit 0; fi
done
case "$1" in
  sqs|dynamodb|secretsmanager) echo "REAL aws $*" >> "$calls"; exec %q --endpoint-url "$AWS_ENDPOINT_URL" "$@" ;;
esac
echo "STUB aws $*" >> "$calls"
exit 0`, calls, outputs, outputs, shellWords(moved), realAWS))
	writeScript(t, filepath.Join(bin, "sleep"), "exit 0") // nothing waits in a test

	for key, value := range st.outputs(t) {
		writeFile(t, filepath.Join(outputs, key), []byte(value+"\n"), 0o644)
	}
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + dir, "AWS_ENDPOINT_URL=" + st.endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_DEFAULT_REGION=" + moto.Region, "AWS_PAGER=", "AWS_CONFIG_FILE=" + filepath.Join(dir, "aws-config"),
		"CANARY_ACCOUNT=DemoShopECOM", "CANARY_CLIENT_KEY=test_CANARY0000000000000000000000", "CANARY_SPLIT_ACCOUNT=BA_canary",
	}
	blocks := runbookBlocks(t)
	setup := blocks[0]
	if !strings.Contains(setup.section, "Your shell") || !strings.Contains(setup.script, "OperatorEnvironment") {
		t.Fatalf("the runbook's first sh block is not the shell set-up: %s", setup.section)
	}
	for _, b := range blocks {
		name := fmt.Sprintf("line %d (%s)", b.line, b.section)
		script := "set -euo pipefail\n" + setup.script + "\n" + b.script
		blockEnv := env
		if b.embedded {
			script = "set -euo pipefail\n" + b.script
			blockEnv = append(env, "PAYSVC_STORE=embedded", "PAYSVC_DATA_DIR="+filepath.Join(dir, "embedded"))
		}
		cmd := exec.Command("bash", "-c", script)
		cmd.Env, cmd.Dir = blockEnv, dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("docs/runbook.md %s failed: %v\n%s\n---\n%s", name, err, b.script, out)
		}
	}

	// Every local command of the runbook ran for real.
	log := readFile(t, calls)
	ran := map[string]bool{}
	var stubbed []string
	sc := bufio.NewScanner(strings.NewReader(string(log)))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "REAL "); ok {
			for _, m := range localCommandRE.FindAllString(rest, 1) {
				ran[m] = true
			}
		} else if f := strings.Fields(strings.TrimPrefix(line, "STUB ")); len(f) >= 3 && !slices.Contains(stubbed, strings.Join(f[:3], " ")) {
			stubbed = append(stubbed, strings.Join(f[:3], " "))
		}
	}
	for _, b := range blocks {
		for _, m := range localCommandRE.FindAllString(b.script, -1) {
			if _, skip := notOnMoto[m]; !skip && !ran[m] {
				t.Errorf("docs/runbook.md line %d: %q did not run", b.line, m)
			}
		}
	}
	sort.Strings(stubbed)
	t.Logf("ran for real: %d kinds of command; to the stand-in (they need the deployed stack, or moto lacks them): %s",
		len(ran), strings.Join(stubbed, ", "))

	// What the DLQ section's commands did: the dead letter was redriven.
	ctx := context.Background()
	d, err := dynamo.New(st.ddb, st.table, clock.System{}).GetDelivery(ctx, st.deliveryID)
	if err != nil || d.Status != webhooks.StatusPending || d.Redrives != 1 {
		t.Errorf("the dead-lettered delivery after the runbook: %+v, %v; want pending, redriven once", d, err)
	}
	if n := sqsDepth(t, st.sqs, st.dlqURL); n != 0 {
		t.Errorf("%d dead letters left after delivery redrive-dlq", n)
	}
}

// TestRunbookCoversEveryAlarm: every alarm that notifies has a section
// whose heading names it, with at least three commands to start with and
// how to confirm it recovered.
func TestRunbookCoversEveryAlarm(t *testing.T) {
	text := runbookText(t)
	sections := map[string]string{} // heading -> body
	hs := regexp.MustCompile(`(?m)^### (.*)$`).FindAllStringSubmatchIndex(text, -1)
	for i, h := range hs {
		end := len(text)
		if i+1 < len(hs) {
			end = hs[i+1][0]
		}
		if next := strings.Index(text[h[1]:end], "\n## "); next >= 0 {
			end = h[1] + next
		}
		sections[text[h[2]:h[3]]] = text[h[1]:end]
	}
	tpl := loadTemplate(t)
	n := 0
	for id, r := range tpl.Resources {
		if (r.Type != "AWS::CloudWatch::Alarm" && r.Type != "AWS::CloudWatch::CompositeAlarm") || r.Properties["AlarmActions"] == nil {
			continue
		}
		n++
		name := strings.TrimSuffix(strings.TrimPrefix(jsonText(r.Properties["AlarmName"]), `{"Fn::Sub":"${AWS::StackName}-`), `"}`)
		var body string
		for heading, b := range sections {
			if strings.Contains(heading, "`"+name+"`") {
				body = b
			}
		}
		if body == "" {
			t.Errorf("%s: no section of docs/runbook.md is headed by `%s`", id, name)
			continue
		}
		commands := 0
		for _, m := range fenceRE.FindAllStringSubmatch(body, -1) {
			for _, l := range strings.Split(m[2], "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					commands++
				}
			}
		}
		if commands < 3 || !strings.Contains(body, "**Recovered when**") {
			t.Errorf("%s: the section of `%s` has %d commands (want at least 3) and says how it recovers: %v",
				id, name, commands, strings.Contains(body, "**Recovered when**"))
		}
	}
	if n < 40 {
		t.Errorf("only %d alarms notify", n)
	}
	// The runbook no longer claims Resource=<fn>:live shows the new version.
	if strings.Contains(text, "new version are under `FunctionName`+`Resource=") {
		t.Error("the runbook says the alias's Resource dimension shows the new version")
	}
}

// runbookStack is what a deployed stack has, on moto.
type runbookStack struct {
	endpoint, table, stack string
	queueURL, dlqURL       string
	secretARN              string
	deliveryID             string
	ddb                    *dynamodb.Client
	sqs                    *sqs.Client
}

func newRunbookStack(t *testing.T) *runbookStack {
	t.Helper()
	ctx := context.Background()
	st := &runbookStack{endpoint: moto.Endpoint(t), table: moto.TableName(t)}
	st.stack = "paysvc-rb-" + strings.ToLower(st.table[len(st.table)-8:])
	st.ddb = moto.DynamoClient(t, st.endpoint)
	motoTable(t, st.ddb, st.table)
	st.sqs = moto.SQSClient(t, st.endpoint)
	st.queueURL, st.dlqURL = motoQueues(t, st.sqs, st.table+"-deliveries")
	st.secretARN = motoSecret(t, st.endpoint, "paysvc/"+st.stack+"/upstream", `{"apiKey":"sim_rb","hmacKey":"`+sampleHMACKey+`"}`)
	t.Cleanup(func() { // the canary key the runbook's commands store
		_, _ = secretsClient(st.endpoint).DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
			SecretId: aws.String("paysvc/" + st.stack + "/canary"), ForceDeleteWithoutRecovery: aws.Bool(true)})
	})

	// The demo tenant with a subscription, and one of its deliveries that
	// used up its attempts: failed, its job in the DLQ.
	store := dynamo.New(st.ddb, st.table, clock.System{})
	demo, err := provision.Demo(tenant.EnvTest)
	if err != nil {
		t.Fatal(err)
	}
	secretValue, err := tenant.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	demo.Subscriptions = []provision.SeedSub{{ID: "sub_demo", MerchantID: "m_demo", URL: "http://127.0.0.1:9/hooks", Secret: secretValue, AllowInsecureLocal: true}}
	if err := (&provision.Provisioner{Store: store, Env: tenant.EnvTest, Clock: clock.System{}}).ApplySeed(ctx, demo); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	st.deliveryID = "msg_runbook0000000000000001"
	if _, _, err := webhooks.CreateDelivery(ctx, store, webhooks.Delivery{ID: st.deliveryID, MerchantID: "m_demo", SubscriptionID: "sub_demo",
		EventCode: "AUTHORISATION", PSPReference: "RUNBOOK000000001", Payload: json.RawMessage(`{}`), Status: webhooks.StatusFailed,
		Attempts: 10, LastStatusCode: 503, LastError: "HTTP 503", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := sqsqueue.New(st.sqs, st.queueURL, st.dlqURL).DeadLetter(ctx, queue.Job{DeliveryID: st.deliveryID, Attempt: 10}); err != nil {
		t.Fatal(err)
	}
	return st
}

// outputs are the stack outputs the runbook reads, computed from
// template.yaml with this stand-in's resources: OperatorEnvironment as
// CloudFormation would substitute it.
func (st *runbookStack) outputs(t *testing.T) map[string]string {
	t.Helper()
	values := map[string]string{
		"AWS::StackName": st.stack, "AWS::Region": moto.Region, "Environment": "test",
		"PaymentsTable": st.table, "DeliveriesQueue": st.queueURL, "DeliveriesDLQ": st.dlqURL,
		"ServerlessDeploymentApplication": st.stack + "-ServerlessDeploymentApplication-RB",
		"UpstreamSecretArn":               st.secretARN, "CanaryKeySecretArn": "",
	}
	for fn := range wantFunctions {
		values[fn] = st.stack + "-" + fn + "-RB"
	}
	out := map[string]string{}
	for key, o := range loadTemplate(t).Outputs {
		sub, ok := o["Value"].(map[string]any)["Fn::Sub"].(string)
		if !ok {
			continue
		}
		var missing []string
		v := regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(sub, func(ref string) string {
			name := ref[2 : len(ref)-1]
			val, ok := values[name]
			if !ok {
				missing = append(missing, name)
			}
			return val
		})
		if key == "OperatorEnvironment" && len(missing) > 0 {
			t.Fatalf("OperatorEnvironment names %v: give them a value in this test", missing)
		}
		if len(missing) == 0 {
			out[key] = v
		}
	}
	if out["OperatorEnvironment"] == "" {
		t.Fatal("template.yaml has no OperatorEnvironment output")
	}
	return out
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	writeFile(t, path, []byte("#!/usr/bin/env bash\n"+body+"\n"), 0o755)
}

// shellWords quotes each item for a shell word list.
func shellWords(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

func sqsDepth(t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		var k int
		fmt.Sscan(v, &k)
		n += k
	}
	return n
}
