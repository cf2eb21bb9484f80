// Package app wires the service together from its configuration: logger,
// stores, upstream client and the HTTP dependencies. Lambda functions and
// the local server both start here, so they run the same code.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go/logging"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/observe"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/sdkbody"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/tracing"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
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
	// Events and Deliveries keep notification events and webhook
	// deliveries; Jobs is the local delivery queue's persistence (embedded
	// store only, nil with DynamoDB, where SQS carries the jobs).
	Events     notifications.EventStore
	Deliveries webhooks.DeliveryStore
	Jobs       localqueue.JobStore
	// Sweeper deletes records past their retention periodically (embedded
	// store only; DynamoDB's TTL does it there).
	Sweeper Sweeper
	// History keeps merchants' event histories; DeliveryPages lists their
	// deliveries in pages (the lookups).
	History       History
	DeliveryPages lookup.Deliveries
	closeFn       func() error
}

// History is the store of merchants' event histories: written with each
// notification item (notifications.EventStore.CommitItem), read by the
// lookups.
type History interface {
	lookup.Events
}

// Sweeper runs the embedded store's retention sweep until ctx ends.
type Sweeper interface {
	SweepEvery(ctx context.Context, interval time.Duration, log *slog.Logger)
}

// SweepInterval is how often the local server sweeps the embedded store.
const SweepInterval = time.Hour

// Close releases the adapter (the embedded store's file lock).
func (s *Stores) Close() error {
	if s.closeFn == nil {
		return nil
	}
	return s.closeFn()
}

// AWSConfig loads the AWS SDK configuration (AWS_ENDPOINT_URL is honoured by
// the SDK itself, which is how tests point it at moto); instrument (e.g.
// Tracer.InstrumentAWS) is applied to it.
func AWSConfig(ctx context.Context, instrument ...func(*aws.Config)) (aws.Config, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return c, fmt.Errorf("load AWS config: %w", err)
	}
	c.Logger = sdkLogger{NewLogger(os.Stdout, slog.LevelInfo)}
	// Request bodies go to the transport as plain readers: an answer that
	// arrives whole is not lost to the SDK's early close (sdkbody).
	c.HTTPClient = sdkbody.Client(c.HTTPClient)
	for _, f := range instrument {
		f(&c)
	}
	return c, nil
}

// sdkLogger writes the AWS SDK's own messages (such as a retried
// response's unread body) as JSON log lines like every other; the SDK's
// default logger writes plain text.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelInfo
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "aws sdk", "detail", fmt.Sprintf(format, v...))
}

// OpenStores opens the configured store adapter; instrument (e.g.
// Tracer.InstrumentAWS) is applied to the AWS config of the DynamoDB client.
func OpenStores(ctx context.Context, cfg config.Config, clk clock.Clock, instrument ...func(*aws.Config)) (*Stores, error) {
	return openStores(ctx, cfg, clk, nil, instrument...)
}

// openStores is OpenStores with options of the DynamoDB adapter.
func openStores(ctx context.Context, cfg config.Config, clk clock.Clock, dynamoOpts []dynamo.Option, instrument ...func(*aws.Config)) (*Stores, error) {
	switch cfg.Store {
	case config.StoreEmbedded:
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		st, err := embedded.Open(filepath.Join(cfg.DataDir, "paysvc.db"), embedded.WithClock(clk))
		if err != nil {
			return nil, err
		}
		return &Stores{Tenants: st, Idem: st, Limits: st, Payments: st, Events: st, Deliveries: st, Jobs: st, Sweeper: st,
			History: st, DeliveryPages: st, closeFn: st.Close}, nil
	case config.StoreDynamo:
		ac, err := AWSConfig(ctx, instrument...)
		if err != nil {
			return nil, err
		}
		if ac.BaseEndpoint != nil {
			ac.HTTPClient = oneAtATime(ac.HTTPClient)
		}
		st := dynamo.New(dynamodb.NewFromConfig(ac), cfg.Table, clk, dynamoOpts...)
		return &Stores{Tenants: st, Idem: st, Limits: st, Payments: st, Events: st, Deliveries: st,
			History: st, DeliveryPages: st}, nil
	}
	return nil, fmt.Errorf("unknown store %q", cfg.Store)
}

// oneAtATime is an HTTP client for the DynamoDB of a local endpoint
// (AWS_ENDPOINT_URL: moto): it sends one request at a time. moto's
// transactions are not safe against concurrent requests to their table —
// one whose condition fails restores the table as it was when it began,
// losing writes committed meanwhile — where DynamoDB's are; requests in
// turn still interleave as they do against DynamoDB. (A deployed stack
// has no endpoint set: its client is the SDK's.)
func oneAtATime(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	return &serialClient{c: c}
}

type serialClient struct {
	mu sync.Mutex
	c  aws.HTTPClient
}

// Do sends r once the request before it is answered (moto answers whole
// documents, so its work on a request ends with its response's headers).
func (s *serialClient) Do(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Do(r)
}

// App is a wired service.
type App struct {
	Config config.Config
	Log    *slog.Logger
	Clock  clock.Clock
	Stores *Stores
	// Secrets are the upstream secrets as read at start. In AWS
	// (PAYSVC_UPSTREAM_SECRET_ARN) SecretCache keeps them current: the
	// upstream client and the notifications handler read it on every use.
	Secrets     config.Secrets
	SecretCache *SecretCache // nil without PAYSVC_UPSTREAM_SECRET_ARN
	Deps        *httpapi.Deps
	// Payments is the payments service the API runs on (also the one whose
	// Recover the recovery function and the local server run).
	Payments *payments.Service
	// Metrics (EMF) and Tracer (X-Ray) are set in Lambda, nil locally; both
	// are no-ops when nil. Webhook code reports deliveries with
	// Metrics.WebhookDelivery and wraps its HTTP client with Tracer.HTTPClient.
	Metrics *observe.Metrics
	Tracer  *tracing.Tracer

	dynamoOpts []dynamo.Option // WithDynamoOptions
}

// Option configures New.
type Option func(*App)

// WithObservability records metrics with m and traces with t: API requests,
// AWS SDK calls (DynamoDB) and upstream calls. Either may be nil.
func WithObservability(m *observe.Metrics, t *tracing.Tracer) Option {
	return func(a *App) { a.Metrics, a.Tracer = m, t }
}

// WithDynamoOptions configures the DynamoDB adapter when cfg.Store is
// dynamo: tests use dynamo.WithDeliveryShards to keep listings quick on
// moto. Every process on a table must use the same options.
func WithDynamoOptions(opts ...dynamo.Option) Option {
	return func(a *App) { a.dynamoOpts = append(a.dynamoOpts, opts...) }
}

// New wires the HTTP service from cfg: stores, secrets, upstream client and
// handler dependencies.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, clk clock.Clock, opts ...Option) (*App, error) {
	a := &App{Config: cfg, Log: log, Clock: clk}
	for _, o := range opts {
		o(a)
	}
	stores, err := openStores(ctx, cfg, clk, a.dynamoOpts, a.Tracer.InstrumentAWS)
	if err != nil {
		return nil, err
	}
	secrets := cfg.Secrets
	if cfg.UpstreamSecretARN != "" {
		ac, err := AWSConfig(ctx, a.Tracer.InstrumentAWS)
		if err != nil {
			_ = stores.Close()
			return nil, err
		}
		src := SecretsManagerSource(secretsmanager.NewFromConfig(ac), cfg.UpstreamSecretARN, func(written time.Time) {
			a.Metrics.UpstreamSecretAge(clk.Now().Sub(written))
		})
		a.SecretCache = NewSecretCache(src, clk, log)
		if secrets, _, err = a.SecretCache.Get(ctx); err != nil {
			_ = stores.Close()
			return nil, err
		}
	}
	up := upstream.New(upstream.Config{BaseURL: cfg.UpstreamURL, APIKey: secrets.APIKey, Timeout: cfg.UpstreamTimeout,
		HTTPClient: a.upstreamHTTPClient()})
	svc := payments.NewService(stores.Payments, connector.New(up), clk, log)
	a.Payments = svc
	if a.Metrics != nil {
		svc.CountRecordUpdates(a.Metrics)
	}
	d := &httpapi.Deps{
		Auth:     tenant.NewAuthenticator(stores.Tenants, cfg.Environment, clk, cfg.AuthCacheTTL),
		Limiter:  ratelimit.New(stores.Limits, clk, cfg.RatePerSecond, cfg.RateBurst, log),
		Idem:     idempotency.New(stores.Idem, clk, 0, 0, log),
		Payments: svc,
		Lookup:   lookup.New(stores.Payments, stores.History, stores.DeliveryPages),
		Log:      log,
		Clock:    clk,
	}
	if a.Metrics != nil {
		d.Metrics = a.Metrics
	}
	if a.Tracer != nil {
		d.Tracer = a.Tracer
	}
	a.Stores, a.Secrets, a.Deps = stores, secrets, d
	return a, nil
}

// upstreamHTTPClient is the upstream client's HTTP client with metrics,
// tracing and the current API key from SecretCache, or nil (the client's
// own default) when there is none of them. Like that default it does not
// follow redirects.
func (a *App) upstreamHTTPClient() *http.Client {
	if a.Metrics == nil && !a.Tracer.Enabled() && a.SecretCache == nil {
		return nil
	}
	var rt http.RoundTripper = a.Metrics.UpstreamTransport(a.Tracer.Transport(upstream.NewTransport()))
	if a.SecretCache != nil {
		rt = upstreamKeyTransport{cache: a.SecretCache, next: rt}
	}
	return &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Lambda builds the App of a Lambda function from its environment, with EMF
// metrics on stdout and X-Ray, or logs why it cannot and exits (the runtime
// reports the init failure). The init duration is logged and recorded.
func Lambda(ctx context.Context) *App {
	start := time.Now()
	a, log, err := lambdaApp(ctx)
	if err != nil {
		Exit(log, err)
	}
	logInit(start, a.Metrics, a.Tracer, log)
	return a
}

// logInit logs and records the init duration of a function started at start.
func logInit(start time.Time, m *observe.Metrics, tr *tracing.Tracer, log *slog.Logger) {
	initDuration := time.Since(start)
	m.ColdStart(initDuration)
	log.Info("init", "initDurationMs", float64(initDuration.Microseconds())/1000, "tracing", tr.Enabled())
}

// lambdaApp wires the App from the Lambda environment. The logger is
// returned even on error, to report it.
func lambdaApp(ctx context.Context) (*App, *slog.Logger, error) {
	log := NewLogger(os.Stdout, slog.LevelInfo)
	cfg, err := config.FromEnv(os.Getenv, config.StoreDynamo)
	if err != nil {
		return nil, log, err
	}
	log = NewLogger(os.Stdout, cfg.LogLevel)
	tr, err := tracing.New(os.Getenv, log)
	if err != nil {
		return nil, log, err
	}
	// The version serving the invocation (a number behind the live alias):
	// the request metrics' Version dimension, which the rollback alarms of
	// a deployment read.
	m := observe.New(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"), clock.System{},
		observe.WithVersion(os.Getenv("AWS_LAMBDA_FUNCTION_VERSION")))
	a, err := New(ctx, cfg, log, clock.System{}, WithObservability(m, tr))
	return a, log, err
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
