package lambdaharness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/tests/lambdaharness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lambdaharness.CleanupBuilds()
	os.Exit(code)
}

const echoPkg = "./tests/lambdaharness/testdata/echo"

type echoReply struct {
	Event struct {
		Mode string `json:"mode"`
		Msg  string `json:"msg"`
	} `json:"event"`
	RequestID    string            `json:"requestId"`
	FunctionArn  string            `json:"functionArn"`
	TraceID      string            `json:"traceId"`
	DeadlineMs   int64             `json:"deadlineMs"`
	FunctionName string            `json:"functionName"`
	MemoryMB     int               `json:"memoryMB"`
	Env          map[string]string `json:"env"`
}

// waitBound bounds the waits of these tests (the context of their calls,
// the echo function's start): a failure bound only, generous so that a
// loaded machine does not fail them.
const waitBound = 60 * time.Second

func startEcho(t *testing.T, env map[string]string, opts lambdaharness.Options) *lambdaharness.Harness {
	t.Helper()
	bin := lambdaharness.BuildBootstrap(t, echoPkg)
	if opts.InitTimeout == 0 {
		opts.InitTimeout = waitBound
	}
	return lambdaharness.StartWithOptions(t, bin, env, opts)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	t.Cleanup(cancel)
	return ctx
}

func TestInvokeSuccess(t *testing.T) {
	t.Parallel()
	bin := lambdaharness.BuildBootstrap(t, echoPkg)
	before := time.Now()
	h := lambdaharness.StartWithOptions(t, bin, map[string]string{"ECHO_EXTRA": "hello"},
		lambdaharness.Options{FunctionName: "echo-fn", MemoryMB: 256, InitTimeout: waitBound})
	ctx := ctxFor(t)

	if err := h.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	// The cold start is measured within the start and the wait for it.
	if d, most := h.InitDuration(), time.Since(before); d <= 0 || d > most {
		t.Fatalf("InitDuration = %v, want a positive cold start of at most the %v from start to ready", d, most)
	}

	var ids []string
	for i, msg := range []string{"one", "two"} {
		res, err := h.Do(ctx, []byte(`{"mode":"echo","msg":"`+msg+`"}`))
		if err != nil {
			t.Fatalf("Do #%d: %v", i, err)
		}
		if res.Err != nil {
			t.Fatalf("Do #%d: function error %v", i, res.Err)
		}
		var got echoReply
		if err := json.Unmarshal(res.Payload, &got); err != nil {
			t.Fatalf("reply %s: %v", res.Payload, err)
		}
		if got.Event.Mode != "echo" || got.Event.Msg != msg {
			t.Errorf("event round trip: got %+v", got.Event)
		}
		if got.RequestID != res.RequestID || got.RequestID == "" {
			t.Errorf("request id: function saw %q, harness sent %q", got.RequestID, res.RequestID)
		}
		if got.TraceID != res.TraceID || !strings.HasPrefix(got.TraceID, "Root=1-") {
			t.Errorf("_X_AMZN_TRACE_ID: function saw %q, harness sent %q", got.TraceID, res.TraceID)
		}
		if got.FunctionArn != h.FunctionArn() || !strings.HasSuffix(got.FunctionArn, ":function:echo-fn") {
			t.Errorf("function arn: %q (harness %q)", got.FunctionArn, h.FunctionArn())
		}
		if got.DeadlineMs != res.Deadline.UnixMilli() {
			t.Errorf("deadline: function saw %d, harness sent %d", got.DeadlineMs, res.Deadline.UnixMilli())
		}
		if got.FunctionName != "echo-fn" || got.MemoryMB != 256 {
			t.Errorf("lambdacontext: name %q memory %d", got.FunctionName, got.MemoryMB)
		}
		if got.Env["_HANDLER"] != "bootstrap" || got.Env["AWS_REGION"] != "eu-west-1" || got.Env["ECHO_EXTRA"] != "hello" {
			t.Errorf("env: %v", got.Env)
		}
		ids = append(ids, res.RequestID)
	}
	if ids[0] == ids[1] {
		t.Errorf("request ids not unique: %v", ids)
	}

	// Invoke: the plain API.
	out, err := h.Invoke(ctx, []byte(`{"mode":"echo","msg":"three"}`), lambdaharness.WithRequestID("req-fixed"), lambdaharness.WithTraceID("Root=1-00000000-000000000000000000000001;Sampled=0"))
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	var got echoReply
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "req-fixed" || got.TraceID != "Root=1-00000000-000000000000000000000001;Sampled=0" {
		t.Errorf("invoke options ignored: %+v", got)
	}

	if logs := h.Logs(); !strings.Contains(logs, "echo: mode=echo request="+ids[0]) {
		t.Errorf("logs do not contain the function's output:\n%s", logs)
	}
}

func TestHandlerErrorIsReportedThroughErrorEndpoint(t *testing.T) {
	t.Parallel()
	h := startEcho(t, nil, lambdaharness.Options{})
	ctx := ctxFor(t)

	_, err := h.Invoke(ctx, []byte(`{"mode":"error","msg":"boom"}`))
	var fe *lambdaharness.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("Invoke error = %v, want *FunctionError", err)
	}
	if fe.Type != "errorString" || fe.Message != "echo: asked to fail: boom" {
		t.Errorf("function error = %+v", fe)
	}
	var doc map[string]any
	if err := json.Unmarshal(fe.Payload, &doc); err != nil || doc["errorMessage"] != "echo: asked to fail: boom" {
		t.Errorf("error payload %s (%v)", fe.Payload, err)
	}

	// A handled error does not end the execution environment.
	if _, err := h.Invoke(ctx, []byte(`{"mode":"echo"}`)); err != nil {
		t.Fatalf("invoke after a function error: %v", err)
	}
}

func TestDeadlineIsHonoured(t *testing.T) {
	t.Parallel()
	// The grace only bounds a failure: a handler that did not honour its
	// deadline answers (if ever) without the deadline error.
	h := startEcho(t, nil, lambdaharness.Options{TimeoutGrace: waitBound})
	ctx := ctxFor(t)
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	res, err := h.Do(ctx, []byte(`{"mode":"wait"}`), lambdaharness.WithTimeout(300*time.Millisecond))
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if res.Err == nil || !strings.Contains(res.Err.Message, "deadline exceeded") {
		t.Fatalf("want the handler's context deadline error, got payload %s err %v", res.Payload, res.Err)
	}
	// Not before its deadline (sent in whole milliseconds).
	if elapsed < res.Deadline.Sub(start)-time.Millisecond {
		t.Errorf("handler returned after %v, before its deadline %v", elapsed, res.Deadline.Sub(start))
	}
	// Still usable afterwards.
	if _, err := h.Invoke(ctx, []byte(`{"mode":"echo"}`)); err != nil {
		t.Fatalf("invoke after deadline: %v", err)
	}
}

func TestTimeoutStopsTheProcess(t *testing.T) {
	t.Parallel()
	h := startEcho(t, nil, lambdaharness.Options{TimeoutGrace: 100 * time.Millisecond})
	ctx := ctxFor(t)

	res, err := h.Do(ctx, []byte(`{"mode":"hang"}`), lambdaharness.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if res.Err == nil || res.Err.Type != "Sandbox.Timedout" {
		t.Fatalf("want Sandbox.Timedout, got %+v", res)
	}
	if _, err := h.Invoke(ctx, []byte(`{"mode":"echo"}`)); !errors.Is(err, lambdaharness.ErrStopped) {
		t.Fatalf("invoke after timeout: err = %v, want ErrStopped", err)
	}
}

func TestPanicIsReportedThenProcessExits(t *testing.T) {
	t.Parallel()
	h := startEcho(t, nil, lambdaharness.Options{})
	ctx := ctxFor(t)

	_, err := h.Invoke(ctx, []byte(`{"mode":"panic"}`))
	var fe *lambdaharness.FunctionError
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "asked to panic") {
		t.Fatalf("Invoke error = %v, want the panic as *FunctionError", err)
	}
	if _, err := h.Invoke(ctx, []byte(`{"mode":"echo"}`)); !errors.Is(err, lambdaharness.ErrStopped) {
		t.Fatalf("invoke after panic: err = %v, want ErrStopped", err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	t.Parallel()
	h := startEcho(t, nil, lambdaharness.Options{})
	_, err := h.Invoke(ctxFor(t), []byte(`{"mode":"big"}`))
	var fe *lambdaharness.FunctionError
	if !errors.As(err, &fe) || fe.Type != "Function.ResponseSizeTooLarge" {
		t.Fatalf("Invoke error = %v, want Function.ResponseSizeTooLarge", err)
	}
}

func TestInitError(t *testing.T) {
	t.Parallel()
	h := startEcho(t, map[string]string{"ECHO_INIT_FAIL": "1"}, lambdaharness.Options{})
	ctx := ctxFor(t)

	err := h.WaitReady(ctx)
	var ie *lambdaharness.InitError
	if !errors.As(err, &ie) || ie.Type != "Echo.InitFailed" {
		t.Fatalf("WaitReady = %v, want *InitError Echo.InitFailed", err)
	}
	if _, err := h.Invoke(ctx, []byte(`{}`)); !errors.As(err, &ie) {
		t.Fatalf("Invoke after init error = %v, want *InitError", err)
	}
	if h.InitDuration() != 0 {
		t.Errorf("InitDuration after a failed init = %v, want 0", h.InitDuration())
	}
}

func TestContextCancelledInvocationKeepsRuntimeAlive(t *testing.T) {
	t.Parallel()
	h := startEcho(t, nil, lambdaharness.Options{})
	ctx := ctxFor(t)
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	// The function waits for its own 400ms deadline; the caller gives up first.
	_, err := h.Invoke(short, []byte(`{"mode":"wait"}`), lambdaharness.WithTimeout(400*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke = %v, want context.DeadlineExceeded", err)
	}
	// The late answer is accepted and dropped; the next invocation works.
	if _, err := h.Invoke(ctx, []byte(`{"mode":"echo"}`)); err != nil {
		t.Fatalf("invoke after an abandoned one: %v", err)
	}
}
