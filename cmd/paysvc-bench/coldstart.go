package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/internal/lambdaharness"
	"github.com/yp/paysvc/internal/motoserver"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

// Values the sample events of events/ carry (events/README.md; test only).
const (
	sampleAPIKey         = "yp_test_demoKey000000000000000000000000000000000000"
	sampleNotifyUser     = "paysvc-notify"
	sampleNotifyPassword = "notify-test-password"
)

// lambdaFlags are the Makefile's LAMBDA_FLAGS.
var lambdaFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// fnResult is one function's cold-start figures.
type fnResult struct {
	Name      string
	Pkg       string
	SizeArm64 int64 // bytes; 0 when not built
	SizeAmd64 int64
	BuildErr  string
	Starts    int
	Init      []time.Duration
	First     []time.Duration // first request after init
	Warm      []time.Duration // the request after it
	PeakRSSKB []int64         // VmHWM after the two requests
	// CPU time of the process (every thread, from /proc schedstat): the
	// init, the first request and the next one.
	InitCPU, FirstCPU, WarmCPU []time.Duration
	FirstRoute                 string // what the first request was
	Err                        string
}

// coldStartResult is item 3.
type coldStartResult struct {
	Functions []fnResult
	Missing   []string // functions named in the Makefile without a package
	Probes    []sizeProbe
}

// sizeProbe is the arm64 size of an empty program importing packages.
type sizeProbe struct {
	Name    string
	Imports []string
	Size    int64
}

// sizeProbes tell where the functions' bytes come from: what importing a
// dependency alone costs (its init functions keep its code reachable).
var sizeProbes = []sizeProbe{
	{Name: "empty program", Imports: []string{"fmt"}},
	{Name: "AWS SDK (config, DynamoDB, Secrets Manager, SQS)", Imports: []string{
		"github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/dynamodb",
		"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "github.com/aws/aws-sdk-go-v2/service/sqs"}},
	{Name: "aws-lambda-go + API Gateway proxy adapter", Imports: []string{
		"github.com/aws/aws-lambda-go/lambda", "github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"}},
	{Name: "gRPC", Imports: []string{"google.golang.org/grpc"}},
	{Name: "X-Ray SDK", Imports: []string{"github.com/aws/aws-xray-sdk-go/v2/xray"}},
}

// buildProbes builds each size probe: a main.go in a temporary directory
// built as a file argument from the module root, so it resolves the
// module's dependency versions without touching the tree.
func buildProbes(ctx context.Context, root, dir string) ([]sizeProbe, error) {
	var out []sizeProbe
	for i, p := range sizeProbes {
		src := filepath.Join(dir, fmt.Sprintf("probe%d", i), "main.go")
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString("package main\n\nimport (\n")
		for _, imp := range p.Imports {
			fmt.Fprintf(&b, "\t_ %q\n", imp)
		}
		b.WriteString(")\n\nfunc main() {}\n")
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		size, err := buildBootstrap(ctx, root, src, "arm64", filepath.Join(filepath.Dir(src), "bootstrap"))
		if err != nil {
			return nil, err
		}
		p.Size = size
		out = append(out, p)
	}
	return out, nil
}

// moduleRoot is the directory of go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// notOnRequestPath are function packages whose cold start no request
// waits for: the deployment hook (its events come from CodeDeploy).
var notOnRequestPath = map[string]bool{"smoketest": true}

// discoverFunctions lists functions/* packages with a main.go, plus the
// extra packages asked for (module-relative, e.g. the harness's echo).
func discoverFunctions(root string, cfg *config) ([]fnResult, error) {
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		return nil, err
	}
	var out []fnResult
	for _, e := range entries {
		if !e.IsDir() || !wanted(cfg.Functions, e.Name()) || notOnRequestPath[e.Name()] {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "functions", e.Name(), "main.go")); err != nil {
			continue
		}
		out = append(out, fnResult{Name: e.Name(), Pkg: "./functions/" + e.Name()})
	}
	for _, p := range cfg.ColdStartPkgs {
		out = append(out, fnResult{Name: filepath.Base(p), Pkg: p})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// makefileFunctions reads FUNCTIONS := … from the Makefile.
func makefileFunctions(root string) []string {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":="); ok && strings.TrimSpace(k) == "FUNCTIONS" {
			return strings.Fields(v)
		}
	}
	return nil
}

// buildBootstrap builds pkg for linux/arch the way the Makefile does.
func buildBootstrap(ctx context.Context, root, pkg, arch, out string) (int64, error) {
	args := append([]string{"build"}, lambdaFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("go build %s (%s): %v: %s", pkg, arch, err, strings.TrimSpace(stderr.String()))
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// coldEnv is what the functions run against: DynamoDB, SQS and Secrets
// Manager on moto, the simulator, a webhook receiver and an X-Ray sink,
// with the in-process service to create the inputs of each start.
type coldEnv struct {
	rt   *rtEnv
	env  map[string]string
	seq  int
	root string
}

// newColdEnv sets up the functions' AWS side, secret and X-Ray sink on top
// of an rtEnv (which brings the table, queues, simulator and receiver).
func newColdEnv(t *section, root string) (*coldEnv, error) {
	rt, err := newRTEnv(t, false)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	// The events' API key, next to the demo tenant's own.
	prov := &provision.Provisioner{Store: rt.st, Env: tenant.EnvTest, Clock: rt.disp.Clock}
	if err := prov.ApplySeed(ctx, provision.Seed{APIKeys: []provision.SeedKey{{
		Key: sampleAPIKey, MerchantID: "m_demo", Name: "sample events", Permissions: []tenant.Permission{"*"},
	}}}); err != nil {
		return nil, fmt.Errorf("seed sample key: %w", err)
	}
	// The upstream secret, as deployed: read by every function at init.
	secretJSON, _ := json.Marshal(map[string]string{
		"apiKey": benchSimAPIKey, "hmacKey": benchSimHMACKey,
		"notificationUsername": sampleNotifyUser, "notificationPassword": sampleNotifyPassword,
	})
	sm := secretsmanager.NewFromConfig(rt.awsCfg)
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("paysvc/bench/" + rt.table), SecretString: aws.String(string(secretJSON)),
	})
	if err != nil {
		return nil, fmt.Errorf("create secret: %w", err)
	}
	t.Cleanup(func() {
		_, _ = sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
			SecretId: out.ARN, ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
	// X-Ray: the daemon address Lambda sets; a UDP sink here.
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = udp.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return &coldEnv{rt: rt, root: root, env: map[string]string{
		"PAYSVC_ENVIRONMENT":         "test",
		"PAYSVC_STORE":               "dynamo",
		"PAYSVC_TABLE":               rt.table,
		"PAYSVC_LOG_LEVEL":           "info",
		"PAYSVC_UPSTREAM_URL":        rt.sim.URL + rt.sim.Sim.BasePath(),
		"PAYSVC_UPSTREAM_SECRET_ARN": aws.ToString(out.ARN),
		"PAYSVC_UPSTREAM_TIMEOUT":    "10s",
		"PAYSVC_RATE_PER_SECOND":     "100",
		"PAYSVC_RATE_BURST":          "200",
		"PAYSVC_QUEUE_URL":           rt.queueURL,
		"PAYSVC_DLQ_URL":             rt.dlqURL,
		"PAYSVC_WEBHOOK_ALLOW_LOCAL": "true", // the webhook receiver is on 127.0.0.1
		"AWS_ENDPOINT_URL":           rt.endpoint,
		"AWS_ACCESS_KEY_ID":          "test",
		"AWS_SECRET_ACCESS_KEY":      "test",
		"AWS_XRAY_DAEMON_ADDRESS":    udp.LocalAddr().String(),
	}}, nil
}

// sampleEvent reads events/<name>.json as a generic document.
func (c *coldEnv) sampleEvent(name string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(c.root, "events", name+".json"))
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	return ev, json.Unmarshal(b, &ev)
}

// apiEvent is a sample API Gateway event with a fresh request id and
// Idempotency-Key, and edit applied.
func (c *coldEnv) apiEvent(name string, edit func(ev map[string]any)) ([]byte, error) {
	ev, err := c.sampleEvent(name)
	if err != nil {
		return nil, err
	}
	c.seq++
	uniq := fmt.Sprintf("bench-cold-%d-%d", time.Now().UnixNano(), c.seq)
	if rc, ok := ev["requestContext"].(map[string]any); ok {
		rc["requestId"] = uniq
	}
	// The Idempotency-Key, in both header maps, when the sample has one.
	h, _ := ev["headers"].(map[string]any)
	if _, ok := h["Idempotency-Key"]; ok {
		h["Idempotency-Key"] = uniq
		if mv, ok := ev["multiValueHeaders"].(map[string]any); ok {
			mv["Idempotency-Key"] = []any{uniq}
		}
	}
	if edit != nil {
		edit(ev)
	}
	return json.Marshal(ev)
}

// pspPath points a sample modification event at payment psp.
func pspPath(ev map[string]any, psp string) {
	ev["path"] = strings.Replace(ev["path"].(string), "QFQTPCQ8HXSKGK82", psp, 1)
	if pp, ok := ev["pathParameters"].(map[string]any); ok {
		pp["pspReference"] = psp
	}
}

// notificationBody is a signed AUTHORISATION notification for a payment
// started through the service (its record exists).
func (c *coldEnv) notificationBody(t *section) (string, upstream.NotificationRequestItem, error) {
	psp, err := c.rt.pay(fmt.Sprintf("bench-cold-notif-%d-%d", time.Now().UnixNano(), c.seq))
	if err != nil {
		return "", upstream.NotificationRequestItem{}, err
	}
	c.rt.flush(t)
	it, err := c.rt.notification(psp, upstream.EventAuthorisation)
	if err != nil {
		return "", it, err
	}
	b, err := notificationJSON(it)
	return string(b), it, err
}

// request returns the event of a representative request of function fn and
// what it is; a new input (payment, notification, delivery) each call.
func (c *coldEnv) request(t *section, fn string) ([]byte, string, error) {
	switch fn {
	case "config", "sessions", "payments":
		b, err := c.apiEvent(fn, nil)
		return b, map[string]string{"config": "GET config", "sessions": "POST sessions", "payments": "POST payments"}[fn], err
	case "modifications", "lookups":
		event, what := "captures", "POST captures"
		if fn == "lookups" {
			event, what = "payment-lookup", "GET payment (lookup)"
		}
		psp, err := c.rt.pay(fmt.Sprintf("bench-cold-%s-%d-%d", fn, time.Now().UnixNano(), c.seq))
		if err != nil {
			return nil, "", err
		}
		b, err := c.apiEvent(event, func(ev map[string]any) { pspPath(ev, psp) })
		return b, what, err
	case "webhooks":
		b, err := c.apiEvent("webhooks-test", nil)
		return b, "POST webhooks/test (a loopback target, refused by the SSRF rules)", err
	case "notifications":
		body, _, err := c.notificationBody(t)
		if err != nil {
			return nil, "", err
		}
		b, err := c.apiEvent("notification-authorisation", func(ev map[string]any) { ev["body"] = body })
		return b, "POST notification (AUTHORISATION)", err
	case "dispatcher":
		// A delivery made by the receiver in process, as one SQS message.
		body, item, err := c.notificationBody(t)
		if err != nil {
			return nil, "", err
		}
		if _, err := c.rt.receiver.Accept(context.Background(), []byte(body)); err != nil {
			return nil, "", err
		}
		id := webhooks.DeliveryID(notifications.EventID(notifications.DedupKey(connector.Notification(item))), "sub_bench")
		job, err := queue.Job{DeliveryID: id, Attempt: 1}.Encode()
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{
			MessageId: fmt.Sprintf("bench-%d", c.seq), ReceiptHandle: "bench-receipt", Body: job,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:" + motoserver.Region + ":123456789012:bench-deliveries", AWSRegion: motoserver.Region,
		}}})
		return b, "SQS batch of 1 delivery (webhook POST to 127.0.0.1)", err
	case "scheduler":
		ev, err := c.sampleEvent("schedule-scheduler")
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(ev)
		return b, "scheduler pass (recovery, pre-expiry notices)", err
	case "echo":
		return []byte(`{"mode":"echo","msg":"bench"}`), "echo event", nil
	}
	return nil, "", fmt.Errorf("no representative request known for function %s", fn)
}

// checkAnswer fails for a function error or a non-2xx proxy response.
func checkAnswer(res *lambdaharness.Result) error {
	if res.Err != nil {
		return res.Err
	}
	var proxy struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
	}
	if json.Unmarshal(res.Payload, &proxy) == nil && proxy.StatusCode != 0 && (proxy.StatusCode < 200 || proxy.StatusCode > 299) {
		return fmt.Errorf("status %d: %.300s", proxy.StatusCode, proxy.Body)
	}
	var sqsResp events.SQSEventResponse
	if json.Unmarshal(res.Payload, &sqsResp) == nil && len(sqsResp.BatchItemFailures) > 0 {
		return fmt.Errorf("batch item failures: %s", res.Payload)
	}
	return nil
}

// runColdStart is item 3.
func runColdStart(ctx context.Context, cfg *config) (*coldStartResult, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	fns, err := discoverFunctions(root, cfg)
	if err != nil {
		return nil, err
	}
	res := &coldStartResult{}
	if len(cfg.Functions) == 0 {
		for _, f := range makefileFunctions(root) {
			if _, err := os.Stat(filepath.Join(root, "functions", f, "main.go")); err != nil && !notOnRequestPath[f] {
				res.Missing = append(res.Missing, f)
			}
		}
	}
	if len(fns) == 0 {
		return res, errors.New("no function to measure")
	}
	err = runSection("coldstart", cfg.progress, func(t *section) error {
		bin, err := t.TempDir()
		if err != nil {
			return err
		}
		buildFunctions(ctx, cfg, root, bin, fns)
		if !cfg.Smoke && cfg.Arm64 {
			probes, err := buildProbes(ctx, root, filepath.Join(bin, "probes"))
			if err != nil {
				cfg.logf("coldstart: size probes: %v", err)
			}
			res.Probes = probes
		}
		return startFunctions(ctx, t, cfg, root, bin, fns)
	})
	res.Functions = fns
	var errs []error
	for _, f := range fns {
		if e := cmp.Or(f.BuildErr, f.Err); e != "" {
			errs = append(errs, fmt.Errorf("%s: %s", f.Name, e))
		}
	}
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// buildFunctions builds each function's bootstrap into bin/<arch>/<name>
// for amd64 (started) and, for functions/ with -arm64, arm64 (deployed:
// its size), noting sizes and build failures in fns.
func buildFunctions(ctx context.Context, cfg *config, root, bin string, fns []fnResult) {
	for i := range fns {
		f := &fns[i]
		arches := []string{"amd64"}
		if cfg.Arm64 && strings.HasPrefix(f.Pkg, "./functions/") {
			arches = append(arches, "arm64")
		}
		for _, arch := range arches {
			start := time.Now()
			size, err := buildBootstrap(ctx, root, f.Pkg, arch, filepath.Join(bin, arch, f.Name, "bootstrap"))
			if err != nil {
				f.BuildErr = err.Error()
				break
			}
			cfg.logf("coldstart: built %s for %s: %.1f MB in %s", f.Name, arch, float64(size)/1e6, time.Since(start).Round(time.Millisecond))
			if arch == "amd64" {
				f.SizeAmd64 = size
			} else {
				f.SizeArm64 = size
			}
		}
	}
}

// startFunctions measures the starts of each function built, on one
// coldEnv made for the first that needs it (echo needs none).
func startFunctions(ctx context.Context, t *section, cfg *config, root, bin string, fns []fnResult) error {
	var cenv *coldEnv
	for i := range fns {
		f := &fns[i]
		if f.BuildErr != "" {
			continue
		}
		if cenv == nil && f.Name != "echo" {
			var err error
			if cenv, err = newColdEnv(t, root); err != nil {
				return err
			}
		}
		if err := measureStarts(ctx, t, cfg, cenv, f, filepath.Join(bin, "amd64", f.Name, "bootstrap")); err != nil {
			f.Err = err.Error()
			cfg.logf("coldstart: %s: %v", f.Name, err)
		}
	}
	return nil
}

// measureStarts starts f cfg.Starts times: init time, the first request,
// the request after it, and the peak RSS of the process.
func measureStarts(ctx context.Context, t *section, cfg *config, c *coldEnv, f *fnResult, bin string) error {
	env := map[string]string{}
	if c != nil {
		env = c.env
	}
	for i := range cfg.Starts {
		var evs [2][]byte
		for k := range evs {
			var err error
			// c is nil for echo only, whose request needs no coldEnv.
			if evs[k], f.FirstRoute, err = c.request(t, f.Name); err != nil {
				return err
			}
		}
		h, startErr := lambdaharness.Start(bin, env, lambdaharness.Options{
			FunctionName: "paysvc-bench-" + f.Name, Region: motoserver.Region, MemoryMB: 128,
			Timeout: 30 * time.Second, InitTimeout: 20 * time.Second,
		})
		if startErr != nil {
			return startErr
		}
		err := func() error {
			defer h.Close()
			init := h.InitDuration()
			if init == 0 {
				return fmt.Errorf("start %d: init failed: %v\n%s", i+1, h.WaitReady(ctx), tail(h.Logs(), 2000))
			}
			cpu0, cpuOK := procCPU(h.Pid())
			var lat, cpu [2]time.Duration
			for k, ev := range evs {
				rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
				res, err := h.Do(rctx, ev)
				cancel()
				if err == nil {
					err = checkAnswer(res)
				}
				if err != nil {
					return fmt.Errorf("start %d, request %d (%s): %v\n%s", i+1, k+1, f.FirstRoute, err, tail(h.Logs(), 2000))
				}
				lat[k] = res.Duration
				c, ok := procCPU(h.Pid())
				cpuOK = cpuOK && ok
				cpu[k] = c
			}
			rss, ok := procKB(fmt.Sprintf("/proc/%d/status", h.Pid()), "VmHWM")
			if !ok {
				return fmt.Errorf("start %d: cannot read VmHWM of pid %d", i+1, h.Pid())
			}
			f.Init = append(f.Init, init)
			f.First = append(f.First, lat[0])
			f.Warm = append(f.Warm, lat[1])
			f.PeakRSSKB = append(f.PeakRSSKB, rss)
			if cpuOK {
				f.InitCPU = append(f.InitCPU, cpu0)
				f.FirstCPU = append(f.FirstCPU, cpu[0]-cpu0)
				f.WarmCPU = append(f.WarmCPU, cpu[1]-cpu[0])
			}
			f.Starts++
			return nil
		}()
		if err != nil {
			return err
		}
	}
	cfg.logf("coldstart: %s: %d starts, init median %s, first request median %s", f.Name, f.Starts,
		median(f.Init).Round(10*time.Microsecond), median(f.First).Round(10*time.Microsecond))
	return nil
}

// tail returns the last n bytes of s (for logs in errors).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
