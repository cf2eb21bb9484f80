package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/payments"
)

// RecoverBatch bounds the operations one recovery pass repeats.
const RecoverBatch = 100

// RecoverInterval is how often the local server runs a recovery pass (the
// recovery function runs one a minute, on its schedule).
const RecoverInterval = 30 * time.Second

// RecoveryHandler is the recovery function's handler: each scheduled
// event runs a recovery pass (payments.Service.Recover: the operations
// whose answer was lost, their calls repeated).
func RecoveryHandler(a *App) (func(context.Context, json.RawMessage) (payments.Recovered, error), error) {
	idx, ok := a.Stores.Payments.(payments.InFlight)
	if !ok {
		return nil, fmt.Errorf("the payment store %T does not list operations in flight", a.Stores.Payments)
	}
	return func(ctx context.Context, _ json.RawMessage) (payments.Recovered, error) {
		r, err := Recover(ctx, a.Payments, idx, a.Log)
		a.Metrics.RecoveryPass(r.Answered, r.Unknown, err != nil)
		return r, err
	}, nil
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

// RunRecovery runs a recovery pass every RecoverInterval until ctx ends,
// where no function does it: the local server.
//
// On the embedded store, which only this process can open, every operation
// requested before it started has no live request: the first pass repairs
// them at once (payments.Service.RecoverBefore), a crash's lost answers
// included.
func RunRecovery(ctx context.Context, a *App) {
	idx, ok := a.Stores.Payments.(payments.InFlight)
	if !ok || a.Payments == nil {
		return
	}
	if a.Config.Store == config.StoreEmbedded {
		RecoverOrphans(ctx, a.Payments, idx, a.Clock.Now(), a.Log)
	}
	t := time.NewTicker(RecoverInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = Recover(ctx, a.Payments, idx, a.Log)
		}
	}
}
