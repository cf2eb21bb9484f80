package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
)

// The one scheduler (docs/expiry.md "The scheduler"): every timed job of
// the service runs in one pass, Tick — in AWS the scheduler function,
// which an EventBridge Scheduler schedule invokes every minute; locally
// RunScheduler's ticker. Each job reads its own time-ordered index up to
// the injected clock's now (no table scan): the recovery pass (operations
// whose answer was lost, payments.Service.Recover) and the pre-expiry
// notices (payments.Service.ExpiryNotices).

// RecoverBatch bounds the operations one recovery pass repeats, and
// NoticeBatch the pre-expiry notices one pass sends.
const (
	RecoverBatch = 100
	NoticeBatch  = 100
)

// TickInterval is how often the local server runs a scheduler pass (the
// scheduler function runs one a minute, on its schedule).
const TickInterval = 30 * time.Second

// Schedule is what the scheduler's jobs read of the payment store: its
// operations in flight and its expiry index.
type Schedule interface {
	payments.InFlight
	Expiring(ctx context.Context, before time.Time, limit int) ([]string, error)
}

// Pass is what one scheduler pass did.
type Pass struct {
	payments.Recovered
	NoticesSent    int // pre-expiry notices sent
	NoticesDropped int // expiry index entries dropped without a notice (captured, cancelled meanwhile)
}

// Scheduler returns one scheduler pass on a, its service events queued on
// q: the recovery pass, then the pre-expiry notices, each emitted as a
// service event through the notifications pipeline (stored, on the
// payment's timeline, delivered as a webhook). A failure of one job does
// not stop the other; the errors are returned joined.
func Scheduler(a *App, q queue.Queue) (func(context.Context) (Pass, error), error) {
	idx, ok := a.Stores.Payments.(Schedule)
	if !ok || a.Payments == nil {
		return nil, fmt.Errorf("the payment store %T has no schedule (operations in flight, expiry index)", a.Stores.Payments)
	}
	emit := emitter(a, newReceiver(a, q))
	return func(ctx context.Context) (Pass, error) {
		var p Pass
		r, rerr := Recover(ctx, a.Payments, idx, a.Log)
		p.Recovered = r
		a.Metrics.RecoveryPass(r.Answered, r.Unknown, rerr != nil)
		sent, dropped, nerr := a.Payments.ExpiryNotices(ctx, idx, a.Config.ExpiryNoticeLead, NoticeBatch, emit)
		p.NoticesSent, p.NoticesDropped = sent, dropped
		level := slog.LevelDebug
		if sent+dropped > 0 {
			level = slog.LevelInfo
		}
		if nerr != nil {
			level = slog.LevelError
		}
		a.Log.Log(ctx, level, "expiry notices", "sent", sent, "dropped", dropped, "err", errString(nerr))
		return p, errors.Join(rerr, nerr)
	}, nil
}

// emitter is the service events' way in: recv.Accept, as a platform
// notification's, with the merchant's upstream account filled in.
func emitter(a *App, recv *notifications.Receiver) func(context.Context, payments.Notification) error {
	live := strconv.FormatBool(recv.Live)
	return func(ctx context.Context, n payments.Notification) error {
		if n.MerchantAccountCode == "" {
			h, err := a.Stores.Payments.GetPayment(ctx, n.PSPReference)
			if err != nil {
				return err
			}
			m, err := a.Stores.Tenants.GetMerchant(ctx, h.MerchantID)
			if err != nil {
				return fmt.Errorf("merchant %s of payment %s: %w", h.MerchantID, n.PSPReference, err)
			}
			n.MerchantAccountCode = m.UpstreamAccount
		}
		return recv.Accept(ctx, live, []payments.Notification{n})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// SchedulerHandler is the scheduler function's handler: each scheduled
// event runs one pass (Scheduler).
func SchedulerHandler(ctx context.Context, a *App) (func(context.Context, json.RawMessage) (Pass, error), error) {
	q, err := OpenQueues(ctx, a.Config, a.Stores, a.Clock, a.Log, a.Tracer.InstrumentAWS)
	if err != nil {
		return nil, err
	}
	tick, err := Scheduler(a, q.Queue)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ json.RawMessage) (Pass, error) { return tick(ctx) }, nil
}

// Recover runs one recovery pass and logs what it did.
func Recover(ctx context.Context, svc *payments.Service, idx payments.InFlight, log *slog.Logger) (payments.Recovered, error) {
	r, err := svc.Recover(ctx, idx, RecoverBatch)
	level := slog.LevelDebug
	if r != (payments.Recovered{}) {
		level = slog.LevelInfo
	}
	if err != nil {
		level = slog.LevelError
		log.Log(ctx, level, "recovery pass failed for some operations", "answered", r.Answered, "unknown", r.Unknown,
			"skipped", r.Skipped, "err", err.Error())
		return r, err
	}
	log.Log(ctx, level, "recovery pass", "answered", r.Answered, "unknown", r.Unknown, "skipped", r.Skipped)
	return r, nil
}

// RecoverOrphans runs recovery passes over the operations requested
// before `before` (no request of theirs is running) while a pass answers a
// whole batch; what is left is the regular passes' work.
func RecoverOrphans(ctx context.Context, svc *payments.Service, idx payments.InFlight, before time.Time, log *slog.Logger) {
	for {
		r, err := svc.RecoverBefore(ctx, idx, before, RecoverBatch)
		if err != nil {
			log.ErrorContext(ctx, "recovery at start failed for some operations", "answered", r.Answered, "err", err.Error())
			return
		}
		if r != (payments.Recovered{}) {
			log.InfoContext(ctx, "recovery at start", "answered", r.Answered, "unknown", r.Unknown, "skipped", r.Skipped)
		}
		if r.Answered < RecoverBatch {
			return
		}
	}
}

// RunScheduler runs a scheduler pass every TickInterval of wall time
// until ctx ends, where no function does it: the local server (its service
// events queued on q). What is due is decided on the App's clock. extra,
// when set, runs after each pass: the local server's in-process platform
// simulator doing what the platform does on its own time.
//
// On the embedded store, which only this process can open, every operation
// requested before it started has no live request: the first pass repairs
// them at once (payments.Service.RecoverBefore), a crash's lost answers
// included.
func RunScheduler(ctx context.Context, a *App, q queue.Queue, extra func()) {
	tick, err := Scheduler(a, q)
	if err != nil {
		return
	}
	if a.Config.Store == config.StoreEmbedded {
		RecoverOrphans(ctx, a.Payments, a.Stores.Payments.(Schedule), a.Clock.Now(), a.Log)
	}
	t := time.NewTicker(TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = tick(ctx)
			if extra != nil {
				extra()
			}
		}
	}
}
