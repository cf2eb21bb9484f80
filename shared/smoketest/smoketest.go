// Package smoketest gates a deployment: CodeDeploy runs it before a new
// function version gets any traffic (BeforeAllowTraffic) and once all
// traffic is on it (AfterAllowTraffic). It asks the deployment which
// function and version it moves, invokes that version directly with the
// probes of the function's kind (a request API Gateway would send, or an
// SQS batch), checks each answer, and reports the hook Succeeded or
// Failed: a failed hook stops the deployment and CodeDeploy rolls it back
// before the version served anyone (docs/runbook.md, Deploy).
//
// Before traffic the version is invoked by number, since the alias (and so
// the API's URL) still reaches the old one; after traffic through the
// alias, whose answer must then come from the new version.
package smoketest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Hook is CodeDeploy's lifecycle hook event.
type Hook struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Phase is the lifecycle event a hook runs for.
type Phase string

// The phases a Lambda deployment runs hooks in.
const (
	BeforeAllowTraffic Phase = "BeforeAllowTraffic"
	AfterAllowTraffic  Phase = "AfterAllowTraffic"
)

// Target is a function a deployment moves to a new version.
type Target struct {
	Function string // name
	Alias    string // the alias moved ("live")
	Version  string // the new version
	Phase    Phase  // the hook being run
}

// Deployments is CodeDeploy as the gate uses it.
type Deployments interface {
	// Targets returns the functions the deployment moves.
	Targets(ctx context.Context, deploymentID string) ([]Target, error)
	// Report tells CodeDeploy the hook's outcome.
	Report(ctx context.Context, h Hook, succeeded bool) error
}

// Answer is what an invocation returned.
type Answer struct {
	Payload []byte
	// ExecutedVersion is the version that ran (through an alias, the one
	// the alias routed to).
	ExecutedVersion string
	// FunctionError is set when the function failed (Unhandled, a crash or
	// timeout): Payload then holds the error.
	FunctionError string
}

// Invoker invokes a function synchronously.
type Invoker interface {
	// Invoke runs function at qualifier (a version or an alias) with payload.
	Invoke(ctx context.Context, function, qualifier string, payload []byte) (Answer, error)
}

// Gate runs the probes of each target of a deployment and reports the
// outcome. Kinds maps function names to their kind (PAYSVC_SMOKE_TARGETS);
// Canary loads the canary merchant's key (nil, or a nil key: only the
// probes that need none).
type Gate struct {
	Deployments Deployments
	Invoker     Invoker
	Kinds       map[string]Kind
	Canary      func(ctx context.Context) (*Canary, error)
	Live        bool
	Log         *slog.Logger
}

// Result is the outcome of one probe.
type Result struct {
	Target Target
	Probe  string
	Err    error // nil: passed
}

// Handle runs a hook: every probe of every target, then the report. It
// returns an error only when the report could not be made (CodeDeploy then
// fails the hook after its timeout); a failed probe is a Failed report.
func (g *Gate) Handle(ctx context.Context, h Hook) error {
	results, err := g.Run(ctx, h)
	ok := err == nil
	if err != nil {
		g.Log.ErrorContext(ctx, "smoke test could not run", "deploymentId", h.DeploymentID, "err", err.Error())
	}
	for _, r := range results {
		attrs := []any{"deploymentId", h.DeploymentID, "function", r.Target.Function, "version", r.Target.Version,
			"phase", string(r.Target.Phase), "probe", r.Probe}
		if r.Err != nil {
			ok = false
			g.Log.ErrorContext(ctx, "smoke test probe failed", append(attrs, "err", r.Err.Error())...)
			continue
		}
		g.Log.InfoContext(ctx, "smoke test probe passed", attrs...)
	}
	if err := g.Deployments.Report(ctx, h, ok); err != nil {
		return fmt.Errorf("smoketest: report deployment %s (succeeded %v): %w", h.DeploymentID, ok, err)
	}
	g.Log.InfoContext(ctx, "smoke test reported", "deploymentId", h.DeploymentID, "succeeded", ok)
	return nil
}

// Run runs every probe of every target of the hook's deployment. The error
// is for what prevents probing at all: no target, an unknown function, no
// canary key where one is configured.
func (g *Gate) Run(ctx context.Context, h Hook) ([]Result, error) {
	if h.DeploymentID == "" || h.LifecycleEventHookExecutionID == "" {
		return nil, errors.New("smoketest: hook event without DeploymentId or LifecycleEventHookExecutionId")
	}
	targets, err := g.Deployments.Targets(ctx, h.DeploymentID)
	if err != nil {
		return nil, fmt.Errorf("smoketest: targets of deployment %s: %w", h.DeploymentID, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("smoketest: deployment %s has no Lambda target", h.DeploymentID)
	}
	var canary *Canary
	if g.Canary != nil {
		if canary, err = g.Canary(ctx); err != nil {
			return nil, fmt.Errorf("smoketest: canary key: %w", err)
		}
	}
	var out []Result
	for _, t := range targets {
		kind, ok := g.Kinds[t.Function]
		if !ok {
			return out, fmt.Errorf("smoketest: function %s is not one this gate knows (PAYSVC_SMOKE_TARGETS)", t.Function)
		}
		probes, err := Probes(kind, Env{Live: g.Live, Canary: canary, Tag: tag(h.DeploymentID, t)})
		if err != nil {
			return out, err
		}
		for _, p := range probes {
			out = append(out, Result{Target: t, Probe: p.Name, Err: g.probe(ctx, t, p)})
		}
	}
	return out, nil
}

// probe sends one probe to the target: before traffic to its version,
// after traffic through its alias (the answer must come from the version).
func (g *Gate) probe(ctx context.Context, t Target, p Probe) error {
	qualifier := t.Version
	if t.Phase == AfterAllowTraffic && t.Alias != "" {
		qualifier = t.Alias
	}
	a, err := g.Invoker.Invoke(ctx, t.Function, qualifier, p.Event)
	if err != nil {
		return fmt.Errorf("invoke %s:%s: %w", t.Function, qualifier, err)
	}
	if a.FunctionError != "" {
		return fmt.Errorf("%s:%s failed (%s): %.300s", t.Function, qualifier, a.FunctionError, a.Payload)
	}
	if a.ExecutedVersion != "" && a.ExecutedVersion != t.Version {
		return fmt.Errorf("%s:%s ran version %s, want the deployment's %s", t.Function, qualifier, a.ExecutedVersion, t.Version)
	}
	return p.Expect(a.Payload)
}

// tag makes the idempotency keys and ids of a probe unique per deployment,
// function and phase, and recognisable in the logs.
func tag(deploymentID string, t Target) string {
	return strings.NewReplacer("_", "-", ":", "-").Replace(fmt.Sprintf("smoke-%s-%s-%s-%s", deploymentID, t.Function, t.Version, t.Phase))
}
