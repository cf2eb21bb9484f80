package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// Queues are the delivery queue's adapters for a configuration: SQS when
// PAYSVC_QUEUE_URL is set, else the local queue in the embedded store.
type Queues struct {
	Queue       queue.Queue
	DeadLetters queue.DeadLetters
	Local       *localqueue.Queue // nil with SQS
	SQS         *sqsqueue.Queue   // nil locally
}

// OpenQueues opens the delivery queue.
func OpenQueues(ctx context.Context, cfg config.Config, stores *Stores, clk clock.Clock, log *slog.Logger, instrument ...func(*aws.Config)) (*Queues, error) {
	if cfg.QueueURL != "" {
		ac, err := AWSConfig(ctx, instrument...)
		if err != nil {
			return nil, err
		}
		q := sqsqueue.New(sqs.NewFromConfig(ac), cfg.QueueURL, cfg.DLQURL)
		return &Queues{Queue: q, DeadLetters: q, SQS: q}, nil
	}
	if stores.Jobs == nil {
		return nil, errors.New("PAYSVC_QUEUE_URL is required: the local delivery queue needs the embedded store")
	}
	q := localqueue.New(stores.Jobs, clk, log, 0)
	return &Queues{Queue: q, DeadLetters: q, Local: q}, nil
}

// EnsureQueues creates the deliveries queue and its DLQ on the configured
// AWS endpoint when the dynamo store runs locally without PAYSVC_QUEUE_URL
// (moto), and sets their URLs in cfg. In AWS the template owns the queues.
func EnsureQueues(ctx context.Context, cfg *config.Config) error {
	if cfg.Store != config.StoreDynamo || cfg.QueueURL != "" {
		return nil
	}
	ac, err := AWSConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(ac)
	cfg.QueueURL, cfg.DLQURL, err = sqsqueue.CreateQueues(ctx, client, cfg.Table+"-deliveries")
	return err
}

// NewInbox wires the inbound notification processing onto q: the
// notifications endpoint's port. The upstream's HMAC key (Secrets.HMACKey)
// is required.
func NewInbox(a *App, q queue.Queue) (*connector.Inbox, error) {
	return newInbox(a, newReceiver(a, q), a.Secrets)
}

func newReceiver(a *App, q queue.Queue) *notifications.Receiver {
	r := receiverOn(a.Config, a.Stores, a.Clock, a.Log, q)
	if a.Metrics != nil {
		r.Metrics = a.Metrics
	}
	return r
}

func newInbox(a *App, r *notifications.Receiver, s config.Secrets) (*connector.Inbox, error) {
	signer, err := upstream.NewSigner(s.HMACKey)
	if err != nil {
		return nil, fmt.Errorf("notifications: the upstream HMAC key (hmacKey / PAYSVC_UPSTREAM_HMAC_KEY): %w", err)
	}
	// The type/data bodies carry no HMAC: only the endpoint's basic auth
	// (httpapi.BasicAuth, checked when a username is set) admits them.
	return &connector.Inbox{Signer: signer, Receiver: r, Log: a.Log, BasicAuth: s.NotificationUsername != ""}, nil
}

// NotificationAuth is the optional basic auth of the notifications
// endpoint, from the upstream secret.
func NotificationAuth(s config.Secrets) httpapi.BasicAuth {
	return httpapi.BasicAuth{Username: s.NotificationUsername, Password: s.NotificationPassword}
}

// DispatcherOptions tune NewDispatcher; the zero value is production.
type DispatcherOptions struct {
	Timeout time.Duration    // per attempt (default sender.DefaultTimeout)
	Rand    func() float64   // jitter source (default math/rand)
	Metrics webhooks.Metrics // attempt metrics (default none)
	Sender  webhooks.Poster  // replaces the HTTP sender (tests)
}

// NewDispatcher wires the webhook dispatcher.
func NewDispatcher(a *App, opts DispatcherOptions) *webhooks.Dispatcher {
	sender := opts.Sender
	if sender == nil {
		sender = newSender(a, opts.Timeout)
	}
	return &webhooks.Dispatcher{
		Deliveries: a.Stores.Deliveries, Tenants: a.Stores.Tenants, Sender: sender,
		Clock: a.Clock, Rand: opts.Rand, Log: a.Log, Metrics: opts.Metrics,
	}
}

// newSender is the webhook sender of deliveries and tests (SSRF rules,
// traced in Lambda).
func newSender(a *App, timeout time.Duration) *sender.Sender {
	cfg := sender.Config{Timeout: timeout, AllowLocal: a.Config.WebhookAllowLocal}
	if a.Tracer.Enabled() {
		cfg.Wrap = a.Tracer.Transport
	}
	return sender.New(cfg)
}

// WireWebhookSelfService sets a.Deps.Webhooks (retry a delivery, send a
// test event) over q; with q nil the configured queue is opened. sender
// nil: the production sender.
func WireWebhookSelfService(ctx context.Context, a *App, q queue.Queue, sender webhooks.Poster) error {
	if q == nil {
		qs, err := OpenQueues(ctx, a.Config, a.Stores, a.Clock, a.Log, a.Tracer.InstrumentAWS)
		if err != nil {
			return err
		}
		q = qs.Queue
	}
	if sender == nil {
		sender = newSender(a, 0)
	}
	a.Deps.Webhooks = &webhooks.SelfService{
		Deliveries: a.Stores.Deliveries, Subscriptions: a.Stores.Tenants, Queue: q, Sender: sender,
		Clock: a.Clock, Live: a.Config.Environment == tenant.EnvLive,
	}
	return nil
}

// NewWebhookAdmin returns the operator functions (list and redrive
// deliveries, redrive the dead-letter queue) over stores and the
// configured queue; the admin CLI calls it with the stores it opened.
func NewWebhookAdmin(ctx context.Context, cfg config.Config, stores *Stores, clk clock.Clock, log *slog.Logger) (*webhooks.Admin, error) {
	q, err := OpenQueues(ctx, cfg, stores, clk, log)
	if err != nil {
		return nil, err
	}
	return &webhooks.Admin{Deliveries: stores.Deliveries, Queue: q.Queue, DeadLetters: q.DeadLetters, Clock: clk}, nil
}

// NewNotificationRouter wires what paysvc-admin needs to list and route
// unroutable notifications: a Receiver over the stores and the configured
// queues, without the HMAC key (the events were verified on arrival).
func NewNotificationRouter(ctx context.Context, cfg config.Config, stores *Stores, clk clock.Clock, log *slog.Logger) (*notifications.Receiver, error) {
	q, err := OpenQueues(ctx, cfg, stores, clk, log)
	if err != nil {
		return nil, err
	}
	return receiverOn(cfg, stores, clk, log, q.Queue), nil
}

// receiverOn is the notifications receiver over stores, its deliveries
// queued on q.
func receiverOn(cfg config.Config, stores *Stores, clk clock.Clock, log *slog.Logger, q queue.Queue) *notifications.Receiver {
	return &notifications.Receiver{
		Events: stores.Events, Payments: stores.Payments, Tenants: stores.Tenants, Deliveries: stores.Deliveries,
		Queue: q, Clock: clk, Log: log, Live: cfg.Environment == tenant.EnvLive,
	}
}

// NotificationsHandler is the notifications function's HTTP handler:
// POST /v1/notifications/upstream, JSON 404s elsewhere.
func NotificationsHandler(ctx context.Context, a *App) (http.Handler, error) {
	q, err := OpenQueues(ctx, a.Config, a.Stores, a.Clock, a.Log, a.Tracer.InstrumentAWS)
	if err != nil {
		return nil, err
	}
	// Merchant and subscription reads for every notification: cached per
	// instance like authentication (one merchant's partition serves at most
	// 3,000 reads/s; docs/scale.md).
	tenants := tenant.NewReadCache(a.Stores.Tenants, a.Clock, a.Config.AuthCacheTTL)
	recv := newReceiver(a, q.Queue)
	recv.Tenants = tenants
	build := func(s config.Secrets) (http.Handler, error) {
		inbox, err := newInbox(a, recv, s)
		if err != nil {
			return nil, err
		}
		return httpapi.Notifications(a.Deps, inbox, NotificationAuth(s), httpapi.NewHandler(a.Deps)), nil
	}
	if a.SecretCache == nil {
		return build(a.Secrets)
	}
	return newRotatingHandler(ctx, a.SecretCache, build, a.Log)
}

// rotatingHandler serves notifications with the HMAC key and basic-auth
// credentials of the current secret: a new secret value gets a new handler
// at the next request. A 401 (signature or credentials refused) schedules
// an early read of the secret, so after a rotation the upstream's retry of
// the refused notification is verified with the new key.
type rotatingHandler struct {
	cache *SecretCache
	build func(config.Secrets) (http.Handler, error)
	log   *slog.Logger

	mu      sync.Mutex
	version uint64
	h       http.Handler
}

func newRotatingHandler(ctx context.Context, cache *SecretCache, build func(config.Secrets) (http.Handler, error), log *slog.Logger) (*rotatingHandler, error) {
	r := &rotatingHandler{cache: cache, build: build, log: log}
	if _, err := r.current(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// current returns the handler of the current secret; when the secret cannot
// be read or its new value is unusable, the handler in use stays.
func (r *rotatingHandler) current(ctx context.Context) (http.Handler, error) {
	s, v, err := r.cache.Get(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && v != r.version {
		h, berr := r.build(s)
		if berr == nil {
			r.h, r.version = h, v
		}
		err = berr
	}
	if err != nil && r.h != nil {
		r.log.ErrorContext(ctx, "notifications: keeping the previous upstream secret", "err", err.Error())
		return r.h, nil
	}
	return r.h, err
}

func (r *rotatingHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h, _ := r.current(req.Context()) // never nil: newRotatingHandler built one
	sw := &httpapi.StatusWriter{ResponseWriter: w}
	h.ServeHTTP(sw, req)
	if sw.Status == http.StatusUnauthorized && r.cache.Refresh() {
		r.log.WarnContext(req.Context(), "notification refused (HMAC or basic auth): the upstream secret is read again before the next one")
	}
}

// DispatcherHandler is the dispatcher function's SQS handler.
func DispatcherHandler(ctx context.Context, a *App) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	q, err := OpenQueues(ctx, a.Config, a.Stores, a.Clock, a.Log, a.Tracer.InstrumentAWS)
	if err != nil {
		return nil, err
	}
	if q.SQS == nil {
		return nil, errors.New("PAYSVC_QUEUE_URL is required by the dispatcher function")
	}
	var m webhooks.Metrics
	if a.Metrics != nil {
		m = a.Metrics
	}
	// The development setting, in a function: a warning (the local
	// server's banner says it instead).
	if a.Config.WebhookAllowLocal {
		a.Log.Warn("webhooks may go to http(s)://localhost and 127.0.0.1 on any port: development only, deployed stages refuse such targets (PAYSVC_WEBHOOK_ALLOW_LOCAL)")
	}
	d := NewDispatcher(a, DispatcherOptions{Metrics: m})
	// The subscription read of every attempt: cached per instance (see
	// NotificationsHandler).
	d.Tenants = tenant.NewReadCache(a.Stores.Tenants, a.Clock, a.Config.AuthCacheTTL)
	return sqsqueue.LambdaHandler(q.SQS, d.Process, a.Clock, a.Log), nil
}

// Exit logs why a function cannot start and exits (the runtime reports
// the init failure).
func Exit(log *slog.Logger, err error) {
	log.Error("init failed", "err", err.Error())
	os.Exit(1)
}
