package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/recordupdates/sqsupdates"
	"github.com/yp/paysvc/shared/testutil/moto"
)

// TestPendingUpdatesWiring: with the embedded store the payments service
// defers to the store's bucket and the local server runs it; with the
// record updates queue it sends to SQS, and the consumer function's
// handler needs that queue.
func TestPendingUpdatesWiring(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	clk := clock.NewFake(time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC))
	open := func(env map[string]string, store string) *App {
		t.Helper()
		cfg, err := config.FromEnv(func(k string) string { return env[k] }, store)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(ctx, cfg, log, clk)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Stores.Close() })
		return a
	}

	local := open(map[string]string{"PAYSVC_DATA_DIR": t.TempDir(), "PAYSVC_UPSTREAM_URL": "http://127.0.0.1:1"}, config.StoreEmbedded)
	if local.LocalUpdates == nil || local.Pending != local.LocalUpdates {
		t.Fatalf("embedded store: Pending %T, LocalUpdates %v; want the store's bucket", local.Pending, local.LocalUpdates)
	}
	if _, err := RecordUpdatesHandler(local); err == nil {
		t.Fatal("the record updates function started without its queue")
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { RunRecordUpdates(runCtx, local); close(done) }()
	stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a failure bound only
		t.Fatal("RunRecordUpdates did not stop with its context")
	}

	for k, v := range map[string]string{"AWS_ENDPOINT_URL": moto.Endpoint(t), "AWS_REGION": moto.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		t.Setenv(k, v)
	}
	queued := open(map[string]string{"PAYSVC_STORE": config.StoreDynamo, "PAYSVC_TABLE": moto.TableName(t),
		"PAYSVC_RECORD_UPDATES_QUEUE_URL": "http://127.0.0.1:1/000000000000/updates",
		"PAYSVC_RECORD_UPDATES_DLQ_URL":   "http://127.0.0.1:1/000000000000/updates-dlq"}, config.StoreDynamo)
	if _, ok := queued.Pending.(*sqsupdates.Queue); !ok || queued.LocalUpdates != nil {
		t.Fatalf("with the queue: Pending %T, LocalUpdates %v; want the SQS adapter", queued.Pending, queued.LocalUpdates)
	}
	if h, err := RecordUpdatesHandler(queued); err != nil || h == nil {
		t.Fatalf("record updates handler: %v", err)
	}
}
