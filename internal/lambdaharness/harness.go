// Package lambdaharness runs a real Lambda `bootstrap` binary as a subprocess
// against an in-process implementation of the Lambda Runtime API
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html) served on
// a loopback httptest server, so tests and benchmarks can invoke the exact
// binaries that are deployed (built for the host architecture) without Docker,
// SAM or an AWS account. The tests use it through tests/lambdaharness (which
// ties a harness to a test), the bench command directly:
//
//	h, err := lambdaharness.Start(bin, map[string]string{"PAYSVC_STORE": "embedded"}, lambdaharness.Options{})
//	defer h.Close()
//	out, err := h.Invoke(ctx, event)
//
// One harness is one execution environment: invocations are handed to the
// runtime one at a time, in order. A function that does not answer by its
// deadline (plus a grace period) gets a Sandbox.Timedout error and its process
// is stopped, as Lambda does; the harness is then no longer usable.
package lambdaharness

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runtime API paths and headers (API version 2018-06-01).
const (
	apiPrefix = "/2018-06-01/runtime"

	HeaderRequestID          = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMs         = "Lambda-Runtime-Deadline-Ms"
	HeaderInvokedFunctionArn = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID            = "Lambda-Runtime-Trace-Id"
	HeaderFunctionErrorType  = "Lambda-Runtime-Function-Error-Type"
	trailerErrorType         = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody         = "Lambda-Runtime-Function-Error-Body"

	// MaxResponseBytes is Lambda's limit for a synchronous response payload.
	MaxResponseBytes = 6 * 1024 * 1024
)

// Options tune a harness. The zero value is usable: every field has a default.
type Options struct {
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME; default "paysvc-<dir of binary>".
	FunctionName string
	// Region is AWS_REGION / AWS_DEFAULT_REGION; default "eu-west-1".
	Region string
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE; default 128.
	MemoryMB int
	// Timeout is the function timeout, used for each invocation's deadline
	// unless the invocation sets its own; default 30s.
	Timeout time.Duration
	// TimeoutGrace is how long after the deadline the harness waits for an
	// answer before reporting Sandbox.Timedout and stopping the process;
	// default 1s.
	TimeoutGrace time.Duration
	// InitTimeout bounds the wait for the runtime's first /next call
	// (WaitReady, and the first Invoke); default 10s.
	InitTimeout time.Duration
	// InheritEnv lists variables of the test process passed to the function
	// (besides PATH, TMPDIR and GOCOVERDIR, which always are when set).
	InheritEnv []string
	// Dir is the working directory of the process; default a temp dir
	// (Lambda's is /var/task, read-only, with the binary in it).
	Dir string
}

// FunctionError is an invocation that failed: what the function posted to
// /invocation/{id}/error, or a failure the harness observed (Sandbox.Timedout,
// Runtime.ExitError, Function.ResponseSizeTooLarge), in Lambda's error shape.
type FunctionError struct {
	RequestID string
	// Type is errorType from the payload, else the Lambda-Runtime-Function-Error-Type header.
	Type    string
	Message string
	// Payload is the raw error document, e.g. {"errorMessage":..,"errorType":..}.
	Payload json.RawMessage
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("lambda function error %s: %s", e.Type, e.Message)
}

// InitError is a runtime that failed before it was ready for invocations: it
// posted /runtime/init/error, exited, or did not call /next within InitTimeout.
type InitError struct {
	Type    string
	Message string
	Payload json.RawMessage
	// Exit is the process's exit error when it exited during init.
	Exit error
}

func (e *InitError) Error() string {
	if e.Exit != nil {
		return fmt.Sprintf("lambda init failed: %s: %s (process: %v)", e.Type, e.Message, e.Exit)
	}
	return fmt.Sprintf("lambda init failed: %s: %s", e.Type, e.Message)
}

// ErrStopped is returned by Invoke once the process has exited or was stopped.
var ErrStopped = errors.New("lambdaharness: function process is not running")

// Result is the full outcome of one invocation.
type Result struct {
	RequestID string
	TraceID   string
	Deadline  time.Time
	// Payload is the response body when the invocation succeeded.
	Payload json.RawMessage
	// ContentType of the response as posted by the runtime.
	ContentType string
	// Err is set when the function failed (it is also Invoke's error).
	Err *FunctionError
	// Duration is from handing the event to the runtime to its answer.
	Duration time.Duration
}

// InvokeOption changes one invocation.
type InvokeOption func(*invocation)

// WithTimeout sets the invocation's deadline to now + d.
func WithTimeout(d time.Duration) InvokeOption {
	return func(inv *invocation) { inv.deadline = time.Now().Add(d) }
}

// WithDeadline sets the invocation's deadline.
func WithDeadline(t time.Time) InvokeOption {
	return func(inv *invocation) { inv.deadline = t }
}

// WithRequestID sets the request id (default: a fresh, unique one).
func WithRequestID(id string) InvokeOption {
	return func(inv *invocation) { inv.id = id }
}

// WithTraceID sets the X-Ray trace header value (default: a fresh, sampled one).
func WithTraceID(trace string) InvokeOption {
	return func(inv *invocation) { inv.traceID = trace }
}

type invocation struct {
	id       string
	traceID  string
	deadline time.Time
	event    []byte
	sentAt   time.Time
	done     chan Result // buffered(1): written once by the API handlers
}

// Harness is one running bootstrap process and its Runtime API.
type Harness struct {
	opts    Options
	arn     string
	tempDir string // removed by Close when Start made it

	srv  *httptest.Server
	cmd  *exec.Cmd
	logs lockedBuffer

	queue chan *invocation // invocations waiting for the runtime's /next

	mu        sync.Mutex
	inflight  map[string]*invocation
	seq       int
	started   time.Time
	readyAt   time.Time
	initErr   *InitError
	exitErr   error
	stopping  bool
	closeOnce sync.Once

	ready    chan struct{} // closed at the first /next
	failed   chan struct{} // closed on /init/error
	exited   chan struct{} // closed when the process has exited
	closing  chan struct{} // closed by Close
	invokeMu sync.Mutex    // one invocation at a time, like one execution environment
}

// Start runs binary (a Lambda bootstrap) with env on top of the standard
// Lambda variables. It returns once the process has started; it does not
// wait for the runtime to be ready (see WaitReady). Close stops it.
func Start(binary string, env map[string]string, opts Options) (*Harness, error) {
	abs, err := filepath.Abs(binary)
	if err != nil {
		return nil, fmt.Errorf("lambdaharness: %w", err)
	}
	if opts.FunctionName == "" {
		opts.FunctionName = "paysvc-" + filepath.Base(filepath.Dir(abs))
	}
	if opts.Region == "" {
		opts.Region = "eu-west-1"
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 128
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.TimeoutGrace == 0 {
		opts.TimeoutGrace = time.Second
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = 10 * time.Second
	}
	tempDir := ""
	if opts.Dir == "" {
		if tempDir, err = os.MkdirTemp("", "lambdaharness-"); err != nil {
			return nil, fmt.Errorf("lambdaharness: %w", err)
		}
		opts.Dir = tempDir
	}

	h := &Harness{
		tempDir:  tempDir,
		opts:     opts,
		arn:      fmt.Sprintf("arn:aws:lambda:%s:123456789012:function:%s", opts.Region, opts.FunctionName),
		queue:    make(chan *invocation),
		inflight: map[string]*invocation{},
		ready:    make(chan struct{}),
		failed:   make(chan struct{}),
		exited:   make(chan struct{}),
		closing:  make(chan struct{}),
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"/invocation/next", h.handleNext)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/response", h.handleResponse)
	mux.HandleFunc("POST "+apiPrefix+"/invocation/{id}/error", h.handleError)
	mux.HandleFunc("POST "+apiPrefix+"/init/error", h.handleInitError)
	h.srv = httptest.NewServer(mux) // 127.0.0.1:random
	addr := h.srv.Listener.Addr().(*net.TCPAddr)

	cmd := exec.Command(abs)
	cmd.Dir = opts.Dir
	cmd.Env = h.environment(addr.String(), env)
	cmd.Stdout = &h.logs // same writer: Go serialises writes from both pipes
	cmd.Stderr = &h.logs
	h.cmd = cmd

	h.started = time.Now()
	if err := cmd.Start(); err != nil {
		h.srv.Close()
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
		return nil, fmt.Errorf("lambdaharness: start %s: %w", binary, err)
	}
	go func() {
		err := cmd.Wait()
		h.mu.Lock()
		h.exitErr = err
		h.mu.Unlock()
		close(h.exited)
	}()
	return h, nil
}

func (h *Harness) environment(api string, extra map[string]string) []string {
	logStream := time.Now().UTC().Format("2006/01/02") + "/[$LATEST]0123456789abcdef0123456789abcdef"
	env := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          api,
		"_HANDLER":                        "bootstrap",
		"AWS_LAMBDA_FUNCTION_NAME":        h.opts.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(h.opts.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + h.opts.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      logStream,
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      h.opts.Region,
		"AWS_DEFAULT_REGION":              h.opts.Region,
		"AWS_XRAY_CONTEXT_MISSING":        "LOG_ERROR",
		"LAMBDA_TASK_ROOT":                h.opts.Dir,
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
	}
	for _, k := range append([]string{"PATH", "TMPDIR", "GOCOVERDIR"}, h.opts.InheritEnv...) {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// FunctionArn is the ARN sent as Lambda-Runtime-Invoked-Function-Arn.
func (h *Harness) FunctionArn() string { return h.arn }

// Logs returns everything the process wrote to stdout and stderr so far.
func (h *Harness) Logs() string { return h.logs.String() }

// InitDuration is the time from starting the process to its first call to
// /invocation/next (the cold-start init phase). It waits for that call (up
// to InitTimeout) and returns 0 if it never came.
func (h *Harness) InitDuration() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.InitTimeout)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readyAt.Sub(h.started)
}

// WaitReady waits until the runtime asks for its first invocation. It returns
// an *InitError when the runtime reported an init error or exited first, and
// ctx's error (or an *InitError after InitTimeout) when it takes too long.
func (h *Harness) WaitReady(ctx context.Context) error {
	timer := time.NewTimer(h.opts.InitTimeout)
	defer timer.Stop()
	select {
	case <-h.ready:
		return nil
	default:
	}
	select {
	case <-h.ready:
		return nil
	case <-h.failed:
		h.mu.Lock()
		defer h.mu.Unlock()
		e := *h.initErr
		return &e
	case <-h.exited:
		select {
		case <-h.ready: // raced: it was ready, then exited
			return nil
		default:
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.initErr != nil {
			e := *h.initErr
			e.Exit = h.exitErr
			return &e
		}
		return &InitError{Type: "Runtime.ExitError", Message: "process exited during init", Exit: h.exitErr}
	case <-timer.C:
		return &InitError{Type: "Runtime.InitTimeout", Message: fmt.Sprintf("no call to /invocation/next within %v", h.opts.InitTimeout)}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Invoke sends event to the function and returns its response payload. A
// function failure is returned as *FunctionError; harness failures (process
// not running, ctx done, init failed) as other errors.
func (h *Harness) Invoke(ctx context.Context, event []byte, opts ...InvokeOption) (json.RawMessage, error) {
	res, err := h.Do(ctx, event, opts...)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Payload, nil
}

// Do is Invoke returning the whole Result. err is only for harness failures;
// a function failure is in Result.Err.
func (h *Harness) Do(ctx context.Context, event []byte, opts ...InvokeOption) (*Result, error) {
	h.invokeMu.Lock()
	defer h.invokeMu.Unlock()

	if err := h.WaitReady(ctx); err != nil {
		return nil, err
	}
	if h.isStopped() {
		return nil, h.stoppedError()
	}

	h.mu.Lock()
	h.seq++
	seq := h.seq
	h.mu.Unlock()
	inv := &invocation{
		id:      fmt.Sprintf("00000000-0000-4000-8000-%012d", seq),
		traceID: fmt.Sprintf("Root=1-%08x-%024d;Parent=%016x;Sampled=1", time.Now().Unix(), seq, seq),
		event:   event,
		done:    make(chan Result, 1),
	}
	for _, o := range opts {
		o(inv)
	}
	if inv.deadline.IsZero() {
		inv.deadline = time.Now().Add(h.opts.Timeout)
	}

	h.mu.Lock()
	if _, dup := h.inflight[inv.id]; dup {
		h.mu.Unlock()
		return nil, fmt.Errorf("lambdaharness: request id %q already in flight", inv.id)
	}
	h.inflight[inv.id] = inv
	h.mu.Unlock()
	// The API handlers forget an invocation when it is answered. Otherwise
	// (exit, timeout) it is forgotten here - but not when ctx ends while the
	// function runs: its late answer must still be accepted, or the runtime
	// would treat the rejection as fatal and exit.
	forget := func() {
		h.mu.Lock()
		delete(h.inflight, inv.id)
		h.mu.Unlock()
	}

	// Hand the event to the runtime's (next) /next call.
	select {
	case h.queue <- inv:
	case <-h.exited:
		forget()
		return nil, h.stoppedError()
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}

	timeout := time.NewTimer(time.Until(inv.deadline) + h.opts.TimeoutGrace)
	defer timeout.Stop()
	select {
	case res := <-inv.done:
		return &res, nil
	case <-h.exited:
		select { // the answer may have arrived just before the exit
		case res := <-inv.done:
			return &res, nil
		default:
		}
		forget()
		h.mu.Lock()
		exitErr := h.exitErr
		stopping := h.stopping
		h.mu.Unlock()
		if stopping {
			return nil, ErrStopped
		}
		msg := "process exited before answering"
		if exitErr != nil {
			msg = exitErr.Error()
		}
		fe := &FunctionError{RequestID: inv.id, Type: "Runtime.ExitError", Message: msg}
		fe.Payload = mustJSON(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		return h.result(inv, fe), nil
	case <-timeout.C:
		forget()
		h.stop()
		fe := &FunctionError{RequestID: inv.id, Type: "Sandbox.Timedout",
			Message: fmt.Sprintf("Task timed out: no answer %v after the deadline", h.opts.TimeoutGrace)}
		fe.Payload = mustJSON(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		return h.result(inv, fe), nil
	case <-ctx.Done():
		// The function is still running; its answer will be discarded.
		return nil, ctx.Err()
	}
}

func (h *Harness) result(inv *invocation, fe *FunctionError) *Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &Result{RequestID: inv.id, TraceID: inv.traceID, Deadline: inv.deadline, Err: fe, Duration: time.Since(inv.sentAt)}
}

func (h *Harness) isStopped() bool {
	select {
	case <-h.exited:
		return true
	default:
		return false
	}
}

func (h *Harness) stoppedError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exitErr != nil && !h.stopping {
		return fmt.Errorf("%w (%v)", ErrStopped, h.exitErr)
	}
	return ErrStopped
}

// Close stops the process (SIGTERM, then SIGKILL after 2 s) and the Runtime
// API server, and removes the directory Start made. Calling it more than
// once is fine.
func (h *Harness) Close() {
	h.closeOnce.Do(func() {
		h.stop()
		close(h.closing)
		h.srv.Close()
		if h.tempDir != "" {
			_ = os.RemoveAll(h.tempDir)
		}
	})
}

// FunctionName is the function's name (AWS_LAMBDA_FUNCTION_NAME).
func (h *Harness) FunctionName() string { return h.opts.FunctionName }

func (h *Harness) stop() {
	h.mu.Lock()
	h.stopping = true
	h.mu.Unlock()
	if h.isStopped() || h.cmd.Process == nil {
		return
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(2 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

// --- Runtime API handlers ------------------------------------------------------

func (h *Harness) handleNext(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.readyAt.IsZero() {
		h.readyAt = time.Now()
		close(h.ready)
	}
	h.mu.Unlock()

	select {
	case inv := <-h.queue:
		h.mu.Lock()
		inv.sentAt = time.Now()
		h.mu.Unlock()
		w.Header().Set(HeaderRequestID, inv.id)
		w.Header().Set(HeaderDeadlineMs, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		w.Header().Set(HeaderInvokedFunctionArn, h.arn)
		w.Header().Set(HeaderTraceID, inv.traceID)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.event)
	case <-r.Context().Done():
	case <-h.closing:
		http.Error(w, `{"errorType":"Runtime.Shutdown","errorMessage":"harness closed"}`, http.StatusInternalServerError)
	}
}

func (h *Harness) lookup(w http.ResponseWriter, r *http.Request) (*invocation, bool) {
	id := r.PathValue("id")
	h.mu.Lock()
	inv, ok := h.inflight[id]
	started := ok && !inv.sentAt.IsZero()
	h.mu.Unlock()
	if !started {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequestID", "unknown or not-started request id "+id)
		return nil, false
	}
	return inv, true
}

func (h *Harness) handleResponse(w http.ResponseWriter, r *http.Request) {
	inv, ok := h.lookup(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes+1))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	res := Result{RequestID: inv.id, TraceID: inv.traceID, Deadline: inv.deadline, ContentType: r.Header.Get("Content-Type")}
	h.mu.Lock()
	res.Duration = time.Since(inv.sentAt)
	h.mu.Unlock()
	switch {
	case len(body) > MaxResponseBytes:
		_, _ = io.Copy(io.Discard, r.Body)
		res.Err = &FunctionError{RequestID: inv.id, Type: "Function.ResponseSizeTooLarge",
			Message: fmt.Sprintf("response payload larger than %d bytes", MaxResponseBytes)}
		res.Err.Payload = mustJSON(map[string]string{"errorType": res.Err.Type, "errorMessage": res.Err.Message})
		h.deliver(inv, res)
		writeAPIError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", res.Err.Message)
		return
	case r.Trailer.Get(trailerErrorType) != "":
		// The runtime failed while streaming the response body.
		payload, _ := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody))
		res.Err = functionError(inv.id, r.Trailer.Get(trailerErrorType), payload)
	default:
		res.Payload = json.RawMessage(body)
	}
	h.deliver(inv, res)
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func (h *Harness) handleError(w http.ResponseWriter, r *http.Request) {
	inv, ok := h.lookup(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
		return
	}
	res := Result{RequestID: inv.id, TraceID: inv.traceID, Deadline: inv.deadline,
		Err: functionError(inv.id, r.Header.Get(HeaderFunctionErrorType), body)}
	h.mu.Lock()
	res.Duration = time.Since(inv.sentAt)
	h.mu.Unlock()
	h.deliver(inv, res)
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func (h *Harness) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxResponseBytes))
	fe := functionError("", r.Header.Get(HeaderFunctionErrorType), body)
	h.mu.Lock()
	first := h.initErr == nil
	if first {
		h.initErr = &InitError{Type: fe.Type, Message: fe.Message, Payload: fe.Payload}
	}
	h.mu.Unlock()
	if first {
		close(h.failed)
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

// deliver hands a result to the waiting Invoke (if it still waits) and
// forgets the invocation: a second answer for it gets InvalidRequestID.
func (h *Harness) deliver(inv *invocation, res Result) {
	h.mu.Lock()
	delete(h.inflight, inv.id)
	h.mu.Unlock()
	select {
	case inv.done <- res:
	default:
	}
}

func functionError(id, headerType string, payload []byte) *FunctionError {
	fe := &FunctionError{RequestID: id, Type: headerType}
	var doc struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Valid(payload) {
		fe.Payload = json.RawMessage(bytes.Clone(payload))
		if json.Unmarshal(payload, &doc) == nil {
			if doc.ErrorType != "" {
				fe.Type = doc.ErrorType
			}
			fe.Message = doc.ErrorMessage
		}
	} else {
		fe.Message = strings.TrimSpace(string(payload))
		fe.Payload = mustJSON(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	return fe
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(map[string]string{"errorType": typ, "errorMessage": msg}))
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// lockedBuffer is an io.Writer safe for concurrent use and reading.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
