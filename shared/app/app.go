// Package app wires the service together from its configuration: logger,
// stores, upstream client and the HTTP dependencies. Lambda functions and
// the local server both start here, so they run the same code.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// NewLogger returns the JSON logger every component uses.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// Stores are the storage ports, all served by one adapter.
type Stores struct {
	Tenants  tenant.Store
	Idem     idempotency.Store
	Limits   ratelimit.Store
	Payments payments.Store
	closeFn  func() error
}

// Close releases the adapter (the embedded store's file lock).
func (s *Stores) Close() error {
	if s.closeFn == nil {
		return nil
	}
	return s.closeFn()
}

// AWSConfig loads the AWS SDK configuration (AWS_ENDPOINT_URL is honoured by
// the SDK itself, which is how tests point it at moto).
func AWSConfig(ctx context.Context) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("load AWS config: %w", err)
	}
	return c, nil
}

// OpenStores opens the configured store adapter.
func OpenStores(ctx context.Context, cfg config.Config, clk clock.Clock) (*Stores, error) {
	switch cfg.Store {
	case config.StoreEmbedded:
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		st, err := embedded.Open(filepath.Join(cfg.DataDir, "paysvc.db"), embedded.WithClock(clk))
		if err != nil {
			return nil, err
		}
		return &Stores{Tenants: st, Idem: st, Limits: st, Payments: st, closeFn: st.Close}, nil
	case config.StoreDynamo:
		ac, err := AWSConfig(ctx)
		if err != nil {
			return nil, err
		}
		st := dynamo.New(dynamodb.NewFromConfig(ac), cfg.Table, clk)
		return &Stores{Tenants: st, Idem: st, Limits: st, Payments: st}, nil
	}
	return nil, fmt.Errorf("unknown store %q", cfg.Store)
}

// App is a wired service.
type App struct {
	Config  config.Config
	Log     *slog.Logger
	Clock   clock.Clock
	Stores  *Stores
	Secrets config.Secrets
	Deps    *httpapi.Deps
}

// New wires the HTTP service from cfg: stores, secrets, upstream client and
// handler dependencies.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, clk clock.Clock) (*App, error) {
	stores, err := OpenStores(ctx, cfg, clk)
	if err != nil {
		return nil, err
	}
	secrets, err := LoadSecrets(ctx, cfg)
	if err != nil {
		_ = stores.Close()
		return nil, err
	}
	up := upstream.New(upstream.Config{BaseURL: cfg.UpstreamURL, APIKey: secrets.APIKey, Timeout: cfg.UpstreamTimeout})
	d := &httpapi.Deps{
		Auth:     tenant.NewAuthenticator(stores.Tenants, cfg.Environment, clk, cfg.AuthCacheTTL),
		Limiter:  ratelimit.New(stores.Limits, clk, cfg.RatePerSecond, cfg.RateBurst, log),
		Idem:     idempotency.New(stores.Idem, clk, 0, 0, log),
		Payments: payments.NewService(stores.Payments, up, clk, log),
		Log:      log,
		Clock:    clk,
	}
	return &App{Config: cfg, Log: log, Clock: clk, Stores: stores, Secrets: secrets, Deps: d}, nil
}

// Lambda builds the App of a Lambda function from its environment, or logs
// why it cannot and exits (the runtime reports the init failure).
func Lambda(ctx context.Context) *App {
	log := NewLogger(os.Stdout, slog.LevelInfo)
	cfg, err := config.FromEnv(os.Getenv, config.StoreDynamo)
	if err == nil {
		log = NewLogger(os.Stdout, cfg.LogLevel)
		var a *App
		if a, err = New(ctx, cfg, log, clock.System{}); err == nil {
			return a
		}
	}
	log.Error("init failed", "err", err.Error())
	os.Exit(1)
	return nil
}

// EnsureTable creates the DynamoDB table when it does not exist (local runs
// against moto; in AWS the template owns the table).
func EnsureTable(ctx context.Context, cfg config.Config) error {
	if cfg.Store != config.StoreDynamo {
		return nil
	}
	ac, err := AWSConfig(ctx)
	if err != nil {
		return err
	}
	return dynamo.CreateTable(ctx, dynamodb.NewFromConfig(ac), cfg.Table)
}
