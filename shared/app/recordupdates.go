package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/recordupdates/sqsupdates"
)

// RecoverBatch bounds the operations one recovery pass repeats.
const RecoverBatch = 100

// RecoverInterval is how often the local server runs a recovery pass (the
// record updates function runs one a minute, on its schedule).
const RecoverInterval = 30 * time.Second

// RecordUpdatesHandler is the record updates function's handler: an SQS
// batch applies the record updates the API functions deferred
// (PAYSVC_RECORD_UPDATES_QUEUE_URL, PAYSVC_RECORD_UPDATES_DLQ_URL); the
// scheduled event runs a recovery pass (payments.Service.Recover: the
// operations whose answer was lost, their calls repeated).
func RecordUpdatesHandler(a *App) (func(context.Context, json.RawMessage) (any, error), error) {
	q, ok := a.Pending.(*sqsupdates.Queue)
	if !ok {
		return nil, errors.New("PAYSVC_RECORD_UPDATES_QUEUE_URL is required by the record updates function")
	}
	idx, ok := a.Stores.Payments.(payments.InFlight)
	if !ok {
		return nil, fmt.Errorf("the payment store %T does not list operations in flight", a.Stores.Payments)
	}
	updates := q.LambdaHandler(a.Stores.Payments, a.Log)
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var ev struct {
			DetailType string `json:"detail-type"`
		}
		if err := json.Unmarshal(raw, &ev); err == nil && ev.DetailType == "Scheduled Event" {
			r, err := Recover(ctx, a.Payments, idx, a.Log)
			a.Metrics.RecoveryPass(r.Answered, r.Unknown, err != nil)
			return r, err
		}
		var batch events.SQSEvent
		if err := json.Unmarshal(raw, &batch); err != nil {
			return nil, fmt.Errorf("record updates: not an SQS batch nor a scheduled event: %w", err)
		}
		return updates(ctx, batch)
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

// RunRecordUpdates applies the record updates the API defers, and runs a
// recovery pass every RecoverInterval, until ctx ends, where no function
// does it: locally, from the embedded store, or from the queue on moto (a
// dynamo store with PAYSVC_RECORD_UPDATES_QUEUE_URL).
//
// On the embedded store, which only this process can open, every operation
// requested before it started has no live request: the first pass repairs
// them at once (payments.Service.RecoverBefore), a crash's lost answers
// included.
func RunRecordUpdates(ctx context.Context, a *App) {
	if idx, ok := a.Stores.Payments.(payments.InFlight); ok && a.Payments != nil {
		started := a.Clock.Now()
		go func() {
			if a.Config.Store == config.StoreEmbedded {
				RecoverOrphans(ctx, a.Payments, idx, started, a.Log)
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
		}()
	}
	switch q := a.Pending.(type) {
	case *sqsupdates.Queue:
		q.Poll(ctx, a.Stores.Payments, a.Log)
	default:
		if a.LocalUpdates != nil {
			a.LocalUpdates.Run(ctx)
		}
	}
}
