// Command echo is a tiny Lambda function used to test the harness itself.
// The event selects what it does:
//
//	{"mode":"echo", ...}  returns the event and the invocation's context
//	{"mode":"error"}      returns an error
//	{"mode":"wait"}       blocks until the deadline, returns ctx.Err()
//	{"mode":"hang"}       ignores the deadline (the harness must time it out)
//	{"mode":"panic"}      panics (the runtime reports it, then the process exits)
//	{"mode":"big"}        returns a payload larger than Lambda's 6 MB limit
//
// With ECHO_INIT_FAIL set it reports an init error instead of starting.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Mode string `json:"mode"`
	Msg  string `json:"msg,omitempty"`
}

type reply struct {
	Event        event             `json:"event"`
	RequestID    string            `json:"requestId"`
	FunctionArn  string            `json:"functionArn"`
	TraceID      string            `json:"traceId"`
	DeadlineMs   int64             `json:"deadlineMs"`
	FunctionName string            `json:"functionName"`
	MemoryMB     int               `json:"memoryMB"`
	Env          map[string]string `json:"env"`
}

func handle(ctx context.Context, ev event) (any, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	log.Printf("echo: mode=%s request=%s", ev.Mode, lc.AwsRequestID)
	switch ev.Mode {
	case "error":
		return nil, errors.New("echo: asked to fail: " + ev.Msg)
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	case "hang":
		time.Sleep(time.Hour)
		return nil, nil
	case "panic":
		panic("echo: asked to panic")
	case "big":
		return strings.Repeat("x", 6*1024*1024+10), nil
	}
	return reply{
		Event:        ev,
		RequestID:    lc.AwsRequestID,
		FunctionArn:  lc.InvokedFunctionArn,
		TraceID:      os.Getenv("_X_AMZN_TRACE_ID"),
		DeadlineMs:   deadline.UnixMilli(),
		FunctionName: lambdacontext.FunctionName,
		MemoryMB:     lambdacontext.MemoryLimitInMB,
		Env: map[string]string{
			"_HANDLER":   os.Getenv("_HANDLER"),
			"AWS_REGION": os.Getenv("AWS_REGION"),
			"ECHO_EXTRA": os.Getenv("ECHO_EXTRA"),
		},
	}, nil
}

func main() {
	if os.Getenv("ECHO_INIT_FAIL") != "" {
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		body := `{"errorType":"Echo.InitFailed","errorMessage":"ECHO_INIT_FAIL is set"}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Echo.InitFailed")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
		fmt.Fprintln(os.Stderr, "echo: init failed")
		os.Exit(1)
	}
	lambda.Start(handle)
}
