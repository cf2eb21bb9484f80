package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/observe"
	"github.com/yp/paysvc/shared/smoketest"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/tracing"
)

// SmokeTest builds the deployment gate of the smoke test function (the
// CodeDeploy hook of every function's deployment) from its environment,
// or logs why it cannot and exits: PAYSVC_SMOKE_TARGETS (kind=function
// pairs), PAYSVC_CANARY_SECRET_ARN (optional: the canary merchant's key)
// and PAYSVC_ENVIRONMENT. Its CodeDeploy and Lambda clients honour the
// AWS SDK's endpoint settings (AWS_ENDPOINT_URL_CODEDEPLOY,
// AWS_ENDPOINT_URL_LAMBDA), which is how tests point them at fakes. The
// init is logged and recorded like every function's.
func SmokeTest(ctx context.Context) *smoketest.Gate {
	start := time.Now()
	g, m, tr, log, err := smokeTest(ctx)
	if err != nil {
		Exit(log, err)
	}
	logInit(start, m, tr, log)
	return g
}

// smokeTest wires the gate from the environment. The logger is returned
// even on error, to report it.
func smokeTest(ctx context.Context) (*smoketest.Gate, *observe.Metrics, *tracing.Tracer, *slog.Logger, error) {
	log := NewLogger(os.Stdout, slog.LevelInfo)
	cfg, err := config.FromEnv(os.Getenv, config.StoreDynamo)
	if err != nil {
		return nil, nil, nil, log, err
	}
	log = NewLogger(os.Stdout, cfg.LogLevel)
	kinds, err := smoketest.ParseKinds(os.Getenv("PAYSVC_SMOKE_TARGETS"))
	if err != nil {
		return nil, nil, nil, log, fmt.Errorf("PAYSVC_SMOKE_TARGETS: %w", err)
	}
	tr, err := tracing.New(os.Getenv, log)
	if err != nil {
		return nil, nil, nil, log, err
	}
	m := observe.New(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), clock.System{})
	ac, err := AWSConfig(ctx, tr.InstrumentAWS)
	if err != nil {
		return nil, nil, nil, log, err
	}
	g := &smoketest.Gate{
		Deployments: smoketest.CodeDeploy{Client: codedeploy.NewFromConfig(ac)},
		Invoker:     smoketest.Lambda{Client: lambda.NewFromConfig(ac)},
		Kinds:       kinds,
		Live:        cfg.Environment == tenant.EnvLive,
		Log:         log,
	}
	if arn := os.Getenv("PAYSVC_CANARY_SECRET_ARN"); arn != "" {
		g.Canary = smoketest.CanaryFromSecret(secretsmanager.NewFromConfig(ac), arn)
	}
	return g, m, tr, log, nil
}
