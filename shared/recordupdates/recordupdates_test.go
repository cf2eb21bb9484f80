package recordupdates_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/recordupdates"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/storefault"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const psp = "PSPRECORDUPDATE1"

func eur(v int64) money.Amount { return money.Amount{Value: v, Currency: "EUR"} }

// samples are one update of every kind.
func samples() []payments.RecordUpdate {
	facts := &payments.PaymentFacts{MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", PendingReference: "order-1",
		Amount: eur(1000), ShopperReference: "shopper-1", StoredMethodID: "SM1", StorePaymentMethod: true,
		AuthorisationType: "PreAuth", CaptureMode: tenant.CaptureAuto, RefusalReason: "", PaymentMethod: "visa", ActionPaymentData: "pd1"}
	return []payments.RecordUpdate{
		{Kind: payments.UpdateCapture, PSPReference: psp, Op: "op_1", Modification: "MOD1", Amount: eur(400), Status: "received", At: t0},
		{Kind: payments.UpdateCapture, PSPReference: psp, Op: "op_1", Amount: eur(400), Status: "refused", Reason: "Insufficient balance", At: t0},
		{Kind: payments.UpdateCaptureRelease, PSPReference: psp, Op: "op_1", Amount: eur(400), At: t0},
		{Kind: payments.UpdateRefund, PSPReference: psp, Op: "op_2", Modification: "MOD2", Amount: eur(100), Status: "received", At: t0},
		{Kind: payments.UpdateRefund, PSPReference: psp, Op: "op_2", Amount: eur(100), Status: "unknown", At: t0},
		{Kind: payments.UpdateRefundRelease, PSPReference: psp, Op: "op_2", Amount: eur(100), At: t0},
		{Kind: payments.UpdateReversal, PSPReference: psp, Op: "op_4", Modification: "MOD3", Status: "received", At: t0},
		{Kind: payments.UpdateAmount, PSPReference: psp, Op: "op_3", Modification: "MOD4", Amount: eur(1500), Status: "received", At: t0},
		{Kind: payments.UpdateAmountRelease, PSPReference: psp, Op: "op_3", Amount: eur(1500), At: t0},
		{Kind: payments.UpdatePayment, PSPReference: psp, Status: "Authorised", Payment: facts, At: t0},
		{Kind: payments.UpdateDetails, PSPReference: psp, Status: "Refused", Payment: &payments.PaymentFacts{MerchantID: "m_a", SiteID: "site_a", RefusalReason: "Refused"}, At: t0},
		{Kind: payments.UpdatePending, Status: "RedirectShopper", Payment: facts, At: t0},
		{Kind: payments.UpdateAction, Payment: &payments.PaymentFacts{MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", ActionPaymentData: "pd2"}, At: t0},
		{Kind: payments.UpdateSession, Session: &payments.Session{ID: "CS1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1",
			Amount: eur(1000), ShopperReference: "shopper-1", StorePaymentMethod: true, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, At: t0},
	}
}

// TestMessageRoundTrip: every kind of update survives Encode and Decode
// unchanged; what is not such a message is malformed, for good.
func TestMessageRoundTrip(t *testing.T) {
	for _, u := range samples() {
		body, err := recordupdates.Encode(u)
		if err != nil {
			t.Fatalf("%s: encode: %v", u.Kind, err)
		}
		got, err := recordupdates.Decode(body)
		if err != nil {
			t.Fatalf("%s: decode: %v", u.Kind, err)
		}
		if !reflect.DeepEqual(got, u) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v\nbody %s", u.Kind, got, u, body)
		}
	}
	for _, body := range []string{`not json`, `{"v":2,"kind":"capture"}`, `{"v":1,"kind":"capture","pspReference":"X"}`, `{"v":1,"kind":"nonsense"}`} {
		_, err := recordupdates.Decode([]byte(body))
		if !errors.Is(err, recordupdates.ErrMalformed) || !recordupdates.Permanent(err) {
			t.Errorf("%s: %v, want ErrMalformed", body, err)
		}
	}
	if _, err := recordupdates.Encode(payments.RecordUpdate{Kind: payments.UpdateCapture}); !errors.Is(err, payments.ErrUpdateRefused) {
		t.Errorf("encoding an invalid update: %v", err)
	}
}

// openStore opens the embedded store at path with, when seed, an
// authorised payment of 1000 whose capture of 400 (op_1) is requested and
// not answered yet.
func openStore(t *testing.T, path string, clk clock.Clock, seed bool) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(path, embedded.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if seed {
		yes := true
		h := payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_a", Source: payments.SourceAdvanced,
			Amount: eur(1000), Authorised: 1000, CaptureMode: tenant.CaptureManual,
			Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Version: 1, CreatedAt: t0, UpdatedAt: t0}
		op := payments.Entry{Ref: "op_1", Kind: payments.OpCapture, Version: 1,
			Requested: &payments.Request{Amount: eur(400), Reference: "cap-1", UpstreamKey: "k1", At: t0}}
		h.Totals = payments.Fold(h, []payments.Entry{op})
		if err := st.Write(context.Background(), payments.Write{PSP: psp, Put: &h, Entries: []payments.Entry{op}}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// captured checks that the capture's answer landed on payment psp of st:
// 400 captured, nothing in flight, the capture's entry moved to its own
// pspReference (MOD1) and its answer in the timeline.
func captured(t *testing.T, st *embedded.Store) {
	t.Helper()
	ctx := context.Background()
	h, err := st.GetPayment(ctx, psp)
	if err != nil {
		t.Fatal(err)
	}
	es, err := st.GetEntries(ctx, psp, "op_1", "MOD1")
	if err != nil {
		t.Fatal(err)
	}
	facts, _, err := st.Timeline(ctx, psp, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, f := range facts {
		answered = answered || f.Kind == "capture" && f.PSPReference == "MOD1"
	}
	if v := h.View(); v.Captured != 400 || v.CapturesInFlight != 0 || v.State != payments.StatePartiallyCaptured || !answered ||
		len(es) != 2 || payments.Fold(h, es) != h.Totals {
		t.Fatalf("payment %+v, entries %+v, timeline %+v", v, es, facts)
	}
}

func capture() payments.RecordUpdate { return samples()[0] }

// TestLocalRetriesUntilItLands: a deferred update is kept in the store,
// tried with backoff while the store refuses it (not before its next
// attempt is due), applied once it can be, then removed.
func TestLocalRetriesUntilItLands(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := openStore(t, filepath.Join(t.TempDir(), "paysvc.db"), clk, true)
	defer st.Close()
	fl := &storefault.Payments{Store: st}
	fl.Down.Store(true)
	var logs bytes.Buffer
	l := recordupdates.NewLocal(st, fl, clk, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err := l.Defer(ctx, capture()); err != nil {
		t.Fatal(err)
	}
	run := func(wantDone, wantLeft int) {
		t.Helper()
		done, left, err := l.RunDue(ctx)
		if err != nil || done != wantDone || left != wantLeft {
			t.Fatalf("RunDue = %d done, %d left, %v; want %d, %d", done, left, err, wantDone, wantLeft)
		}
	}
	run(0, 1) // first attempt: the store refuses
	tried := fl.Writes.Load()
	run(0, 1) // not due yet (1 s backoff): not tried
	if fl.Writes.Load() != tried {
		t.Fatal("tried again before its backoff passed")
	}
	clk.Advance(time.Second)
	run(0, 1) // second attempt, refused; the next waits 2 s
	if fl.Writes.Load() == tried {
		t.Fatal("not tried again once due")
	}
	fl.Down.Store(false)
	clk.Advance(time.Second)
	run(0, 1) // still waiting
	clk.Advance(time.Second)
	run(1, 0) // lands
	run(0, 0) // and is gone
	captured(t, st)
	if kept, err := st.RecordUpdates(ctx); err != nil || len(kept) != 0 {
		t.Fatalf("kept %v, %v", kept, err)
	}
	if !strings.Contains(logs.String(), "deferred payment record update applied") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestLocalSurvivesACrash: an update kept before the process died (the
// store closed without it being applied) is applied by the next process.
func TestLocalSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "paysvc.db")
	st := openStore(t, path, clk, true)
	log := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	if err := recordupdates.NewLocal(st, st, clk, log).Defer(ctx, capture()); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, path, clk, false)
	defer st.Close()
	if done, left, err := recordupdates.NewLocal(st, st, clk, log).RunDue(ctx); err != nil || done != 1 || left != 0 {
		t.Fatalf("after restart: %d done, %d left, %v", done, left, err)
	}
	captured(t, st)
}

// TestLocalDropsWhatCanNeverApply: an update of an unknown payment is
// logged at ERROR and removed, not retried forever.
func TestLocalDropsWhatCanNeverApply(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := openStore(t, filepath.Join(t.TempDir(), "paysvc.db"), clk, false)
	defer st.Close()
	var logs bytes.Buffer
	l := recordupdates.NewLocal(st, st, clk, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err := l.Defer(ctx, capture()); err != nil {
		t.Fatal(err)
	}
	if done, left, err := l.RunDue(ctx); err != nil || done != 1 || left != 0 {
		t.Fatalf("%d done, %d left, %v", done, left, err)
	}
	if !strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "can never apply") {
		t.Fatalf("logs: %s", logs.String())
	}
}
