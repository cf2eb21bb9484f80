package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testutil/hang"
)

// TestEmbeddedStartRecoversOrphans: on the embedded store (only this
// process can open it), RunScheduler's first pass repeats every
// operation requested before the process started — a predecessor's
// capture whose answer its crash lost — without waiting RecoverAfter, and
// leaves one requested after the start to the regular passes.
func TestEmbeddedStartRecoversOrphans(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"merchantAccount":"AcmeECOM","paymentPspReference":"PSP0000000000001","pspReference":"MOD0000000000001",`+
			`"status":"received","amount":{"value":300,"currency":"EUR"}}`)
	}))
	t.Cleanup(up.Close)
	started := make(chan struct{})
	log := slog.New(&onMessage{Handler: slog.NewJSONHandler(io.Discard, nil), msg: "recovery at start", seen: started})
	clk := clock.NewFake(time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC))
	a := openApp(t, map[string]string{"PAYSVC_DATA_DIR": t.TempDir(), "PAYSVC_UPSTREAM_URL": up.URL}, config.StoreEmbedded, log, clk)

	const psp = "PSP0000000000001"
	inFlight := func(key string) payments.Entry {
		e := payments.Entry{Ref: "op_" + key, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
			Amount: money.Amount{Value: 300, Currency: "EUR"}, UpstreamKey: key, Account: "AcmeECOM", At: clk.Now()}}
		if err := a.Stores.Payments.Write(ctx, payments.Write{PSP: psp, Delta: e.Contribution(), Entries: []payments.Entry{e},
			At: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	h := payments.Head{PSPReference: psp, MerchantID: "m_1", SiteID: "site_1", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		Authorised: 1000, Version: 1, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}
	if err := a.Stores.Payments.Write(ctx, payments.Write{PSP: psp, Put: &h, At: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	orphan := inFlight("orphan-key-000000000000000000000000000000")
	clk.Advance(time.Second)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { RunScheduler(runCtx, a, nil, nil); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	select {
	case <-started:
	case <-hang.Deadline(t):
		t.Fatal("no recovery pass at start")
	}
	es, err := a.Stores.Payments.GetEntries(ctx, psp, "MOD0000000000001")
	if err != nil || len(es) != 1 || es[0].AwaitsAnswer() || es[0].Requested == nil || es[0].Requested.UpstreamKey != orphan.Requested.UpstreamKey {
		t.Fatalf("the orphan after the start's pass: %+v, %v; want it answered under MOD0000000000001", es, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d upstream calls, want the orphan's one repeat", n)
	}
}

// openApp is an App on env's configuration for store, closed with t.
func openApp(t *testing.T, env map[string]string, store string, log *slog.Logger, clk clock.Clock) *App {
	t.Helper()
	cfg, err := config.FromEnv(func(k string) string { return env[k] }, store)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(context.Background(), cfg, log, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stores.Close() })
	return a
}

// onMessage is a handler closing seen at the first record of msg.
type onMessage struct {
	slog.Handler
	msg  string
	seen chan struct{}
	once sync.Once
}

func (h *onMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return h.Handler.Handle(ctx, r)
}
