package app

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/recordupdates/sqsupdates"
)

// RecordUpdatesHandler is the record updates function's SQS handler: it
// applies the record updates the API functions deferred
// (PAYSVC_RECORD_UPDATES_QUEUE_URL, PAYSVC_RECORD_UPDATES_DLQ_URL).
func RecordUpdatesHandler(a *App) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	q, ok := a.Pending.(*sqsupdates.Queue)
	if !ok {
		return nil, errors.New("PAYSVC_RECORD_UPDATES_QUEUE_URL is required by the record updates function")
	}
	return q.LambdaHandler(a.Stores.Payments, a.Log), nil
}

// RunRecordUpdates applies the record updates the API defers until ctx
// ends, where no function does it: locally, from the embedded store, or
// from the queue on moto (a dynamo store with PAYSVC_RECORD_UPDATES_QUEUE_URL).
func RunRecordUpdates(ctx context.Context, a *App) {
	switch q := a.Pending.(type) {
	case *sqsupdates.Queue:
		q.Poll(ctx, a.Stores.Payments, a.Log)
	default:
		if a.LocalUpdates != nil {
			a.LocalUpdates.Run(ctx)
		}
	}
}
