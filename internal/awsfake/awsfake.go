// Package awsfake serves the two AWS APIs a deployment hook uses that moto
// does not have: CodeDeploy's Lambda deployment targets and lifecycle hook
// status (JSON 1.1 protocol), and Lambda's Invoke (REST), each on an
// http.Handler for httptest. The AWS SDK reaches them through its
// service-specific endpoint settings (AWS_ENDPOINT_URL_CODEDEPLOY,
// AWS_ENDPOINT_URL_LAMBDA); they record every call for the test to check.
// Signatures are not checked.
package awsfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// LambdaTarget is one function a fake deployment moves.
type LambdaTarget struct {
	Function       string
	Alias          string // default "live"
	CurrentVersion string
	TargetVersion  string
	// Phase is the traffic lifecycle event in progress: BeforeAllowTraffic
	// or AfterAllowTraffic.
	Phase string
}

// HookStatus is one PutLifecycleEventHookExecutionStatus call.
type HookStatus struct {
	DeploymentID    string
	HookExecutionID string
	Status          string // Succeeded, Failed
}

// CodeDeploy is a fake CodeDeploy endpoint.
type CodeDeploy struct {
	mu          sync.Mutex
	deployments map[string][]LambdaTarget
	reports     []HookStatus
	calls       []string
}

// NewCodeDeploy returns a CodeDeploy without deployments.
func NewCodeDeploy() *CodeDeploy { return &CodeDeploy{deployments: map[string][]LambdaTarget{}} }

// AddDeployment makes deployment id move targets.
func (c *CodeDeploy) AddDeployment(id string, targets ...LambdaTarget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deployments[id] = targets
}

// Reports returns the hook statuses reported so far.
func (c *CodeDeploy) Reports() []HookStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]HookStatus(nil), c.reports...)
}

// Calls returns the operations called so far, in order.
func (c *CodeDeploy) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

const targetPrefix = "CodeDeploy_20141006."

// ServeHTTP answers ListDeploymentTargets, BatchGetDeploymentTargets and
// PutLifecycleEventHookExecutionStatus.
func (c *CodeDeploy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	var in struct {
		DeploymentID    string   `json:"deploymentId"`
		TargetIDs       []string `json:"targetIds"`
		HookExecutionID string   `json:"lifecycleEventHookExecutionId"`
		Status          string   `json:"status"`
	}
	body, err := io.ReadAll(r.Body)
	if !ok || err != nil || json.Unmarshal(body, &in) != nil {
		jsonError(w, "ValidationException", "not a CodeDeploy JSON 1.1 request")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, op)
	targets, known := c.deployments[in.DeploymentID]
	if !known {
		jsonError(w, "DeploymentDoesNotExistException", fmt.Sprintf("deployment %s does not exist", in.DeploymentID))
		return
	}
	switch op {
	case "ListDeploymentTargets":
		ids := []string{}
		for _, t := range targets {
			ids = append(ids, targetID(t))
		}
		writeJSON(w, map[string]any{"targetIds": ids})
	case "BatchGetDeploymentTargets":
		out := []any{}
		for _, id := range in.TargetIDs {
			for _, t := range targets {
				if targetID(t) == id {
					out = append(out, lambdaTarget(in.DeploymentID, t))
				}
			}
		}
		writeJSON(w, map[string]any{"deploymentTargets": out})
	case "PutLifecycleEventHookExecutionStatus":
		if in.HookExecutionID == "" || (in.Status != "Succeeded" && in.Status != "Failed") {
			jsonError(w, "ValidationException", "hook execution id and status Succeeded or Failed required")
			return
		}
		c.reports = append(c.reports, HookStatus{DeploymentID: in.DeploymentID, HookExecutionID: in.HookExecutionID, Status: in.Status})
		writeJSON(w, map[string]any{"lifecycleEventHookExecutionId": in.HookExecutionID})
	default:
		jsonError(w, "UnknownOperationException", "awsfake: CodeDeploy "+op+" is not served")
	}
}

func alias(t LambdaTarget) string {
	if t.Alias == "" {
		return "live"
	}
	return t.Alias
}

func targetID(t LambdaTarget) string { return t.Function + ":" + alias(t) }

// lambdaTarget is a DeploymentTarget of type LambdaTarget, with the
// traffic lifecycle events as CodeDeploy reports them during t.Phase.
func lambdaTarget(deploymentID string, t LambdaTarget) map[string]any {
	before, allow, after := "InProgress", "Pending", "Pending"
	weight := 0.0
	if t.Phase == "AfterAllowTraffic" {
		before, allow, after, weight = "Succeeded", "Succeeded", "InProgress", 100
	}
	return map[string]any{
		"deploymentTargetType": "LambdaTarget",
		"lambdaTarget": map[string]any{
			"deploymentId": deploymentID,
			"targetId":     targetID(t),
			"targetArn":    "arn:aws:lambda:eu-west-1:123456789012:function:" + targetID(t),
			"status":       "InProgress",
			"lifecycleEvents": []any{
				map[string]any{"lifecycleEventName": "BeforeAllowTraffic", "status": before},
				map[string]any{"lifecycleEventName": "AllowTraffic", "status": allow},
				map[string]any{"lifecycleEventName": "AfterAllowTraffic", "status": after},
			},
			"lambdaFunctionInfo": map[string]any{
				"functionName": t.Function, "functionAlias": alias(t), "currentVersion": t.CurrentVersion,
				"targetVersion": t.TargetVersion, "targetVersionWeight": weight,
			},
		},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func jsonError(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// InvokeFunc runs one invocation of a function version: its answer, or
// functionError set (e.g. "Unhandled") when the function failed.
type InvokeFunc func(ctx context.Context, version string, payload []byte) (answer []byte, functionError string, err error)

// Invocation is one Invoke call.
type Invocation struct {
	Function  string
	Qualifier string // as asked: a version or an alias
	Version   string // the version that ran
	Payload   []byte
}

// Lambda is a fake Lambda Invoke endpoint.
type Lambda struct {
	mu    sync.Mutex
	fns   map[string]lambdaFn
	calls []Invocation
}

type lambdaFn struct {
	aliases map[string]string // alias -> version
	invoke  InvokeFunc
}

// NewLambda returns a Lambda without functions.
func NewLambda() *Lambda { return &Lambda{fns: map[string]lambdaFn{}} }

// Register serves function name with invoke; aliases maps each alias to
// the version it routes to.
func (l *Lambda) Register(name string, aliases map[string]string, invoke InvokeFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns[name] = lambdaFn{aliases: aliases, invoke: invoke}
}

// Invocations returns the calls so far, in order.
func (l *Lambda) Invocations() []Invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Invocation(nil), l.calls...)
}

// ServeHTTP answers POST /2015-03-31/functions/{name}/invocations (a
// synchronous invocation; ?Qualifier= a version or an alias).
func (l *Lambda) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		restError(w, http.StatusNotFound, "ResourceNotFoundException", "awsfake: only Invoke is served")
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		restError(w, http.StatusBadRequest, "InvalidParameterValueException", "awsfake: only RequestResponse invocations")
		return
	}
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		restError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	qualifier := r.URL.Query().Get("Qualifier")
	l.mu.Lock()
	fn, known := l.fns[name]
	version := qualifier
	if v, isAlias := fn.aliases[qualifier]; isAlias {
		version = v
	}
	if qualifier == "" {
		version = "$LATEST"
	}
	l.calls = append(l.calls, Invocation{Function: name, Qualifier: qualifier, Version: version, Payload: payload})
	l.mu.Unlock()
	if !known {
		restError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	answer, functionError, err := fn.invoke(r.Context(), version, payload)
	if err != nil {
		restError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", version)
	if functionError != "" {
		w.Header().Set("X-Amz-Function-Error", functionError)
	}
	_, _ = w.Write(answer)
}

func restError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
