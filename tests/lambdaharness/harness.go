// Package lambdaharness ties the Lambda Runtime API harness
// (internal/lambdaharness: a real bootstrap binary as a subprocess against
// an in-process Runtime API) to a test: Start fails the test when the
// binary cannot start, stops it when the test ends and, when the test
// failed, writes the function's logs to the test log. BuildBootstrap builds
// the binaries.
//
//	bin := lambdaharness.BuildBootstrap(t, "config")
//	h := lambdaharness.Start(t, bin, map[string]string{"PAYSVC_STORE": "embedded"})
//	out, err := h.Invoke(ctx, event)
package lambdaharness

import (
	"testing"

	"github.com/yp/paysvc/internal/lambdaharness"
)

// The harness's types and options (internal/lambdaharness).
type (
	Harness       = lambdaharness.Harness
	Options       = lambdaharness.Options
	Result        = lambdaharness.Result
	FunctionError = lambdaharness.FunctionError
	InitError     = lambdaharness.InitError
	InvokeOption  = lambdaharness.InvokeOption
)

// Runtime API headers.
const (
	HeaderRequestID          = lambdaharness.HeaderRequestID
	HeaderDeadlineMs         = lambdaharness.HeaderDeadlineMs
	HeaderInvokedFunctionArn = lambdaharness.HeaderInvokedFunctionArn
	HeaderTraceID            = lambdaharness.HeaderTraceID
	HeaderFunctionErrorType  = lambdaharness.HeaderFunctionErrorType
	MaxResponseBytes         = lambdaharness.MaxResponseBytes
)

// ErrStopped: the function's process is not running.
var ErrStopped = lambdaharness.ErrStopped

// Invocation options.
var (
	WithTimeout   = lambdaharness.WithTimeout
	WithDeadline  = lambdaharness.WithDeadline
	WithRequestID = lambdaharness.WithRequestID
	WithTraceID   = lambdaharness.WithTraceID
)

// StartWithOptions runs binary with env and opts (Dir defaults to a
// directory of the test), failing t when it cannot start, and stops it
// when the test ends.
func StartWithOptions(t testing.TB, binary string, env map[string]string, opts Options) *Harness {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	h, err := lambdaharness.Start(binary, env, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		if t.Failed() {
			t.Logf("lambdaharness: logs of %s:\n%s", h.FunctionName(), h.Logs())
		}
	})
	return h
}
