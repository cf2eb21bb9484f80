package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
)

// TestPaymentStore checks the payments.Store contract: sessions are
// overwritten by id and vanish once expired; payments are created only once
// and updated only from the version read, so concurrent read-modify-write
// loops never lose a history entry.
func TestPaymentStore(t *testing.T, newStore Factory[payments.Store]) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s payments.Store, clk *clock.Fake)
	}{
		{"NotFound", testPaymentsNotFound},
		{"SessionPutGet", testSessionPutGet},
		{"SessionExpires", testSessionExpires},
		{"PaymentCreateOnce", testPaymentCreateOnce},
		{"PaymentOptimisticVersion", testPaymentVersion},
		{"ConcurrentUpdatersLoseNothing", testPaymentConcurrentUpdates},
		{"TimesStoredAsUTC", testPaymentTimesUTC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			tc.run(t, newStore(t, clk), clk)
		})
	}
}

func session(id string) payments.Session {
	return payments.Session{
		ID: id, MerchantID: "m_a", SiteID: "site_1", Reference: "order-" + id,
		Amount:           money.Amount{Value: 1999, Currency: "EUR"},
		ShopperReference: "shopper-1", StorePaymentMethod: true,
		CreatedAt: epoch(), ExpiresAt: epoch().Add(time.Hour),
	}
}

func payment(psp string) payments.Payment {
	yes := true
	return payments.Payment{
		PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Reference: "order-1",
		Source: payments.SourceAdvanced, Amount: money.Amount{Value: 1999, Currency: "EUR"},
		AuthorisedValue: 1999, State: payments.StateAuthorised, ResultCode: "Authorised",
		PaymentMethod: "scheme", ShopperReference: "shopper-1", StoredMethodID: "stored-1",
		History: []payments.Event{{
			At: epoch(), Kind: "payment", Origin: "api", PSPReference: psp,
			Amount: &money.Amount{Value: 1999, Currency: "EUR"}, Success: &yes, Detail: "ok",
		}},
		Version: 1, CreatedAt: epoch(), UpdatedAt: epoch(),
	}
}

func testPaymentsNotFound(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	_, err := s.GetPayment(ctx, "PSP_MISSING")
	wantErr(t, err, storeerr.ErrNotFound, "GetPayment")
	_, err = s.GetSession(ctx, "CS_MISSING")
	wantErr(t, err, storeerr.ErrNotFound, "GetSession")
}

func testSessionPutGet(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	noErr(t, s.PutSession(ctx, session("CS1")), "PutSession")
	noErr(t, s.PutSession(ctx, session("CS2")), "PutSession")
	got, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession")
	same(t, got, session("CS1"), "GetSession")

	updated := session("CS1")
	updated.Reference, updated.Amount.Value, updated.StorePaymentMethod = "order-changed", 2500, false
	noErr(t, s.PutSession(ctx, updated), "PutSession (overwrite)")
	got, err = s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession after overwrite")
	same(t, got, updated, "GetSession after overwrite")
	got, err = s.GetSession(ctx, "CS2")
	noErr(t, err, "GetSession CS2")
	same(t, got, session("CS2"), "GetSession CS2")
}

func testSessionExpires(t *testing.T, s payments.Store, clk *clock.Fake) {
	ctx := context.Background()
	noErr(t, s.PutSession(ctx, session("CS1")), "PutSession")
	clk.Set(epoch().Add(time.Hour - time.Nanosecond))
	_, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession just before expiry")
	clk.Set(epoch().Add(time.Hour))
	_, err = s.GetSession(ctx, "CS1")
	wantErr(t, err, storeerr.ErrNotFound, "GetSession at expiry")
	// Overwriting an expired session with a new expiry revives the id.
	revived := session("CS1")
	revived.ExpiresAt = epoch().Add(2 * time.Hour)
	noErr(t, s.PutSession(ctx, revived), "PutSession (renew)")
	got, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession after renew")
	same(t, got, revived, "GetSession after renew")
}

func testPaymentCreateOnce(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	p := payment("PSP1")
	noErr(t, s.SavePayment(ctx, p, 0), "SavePayment create")
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, got, p, "GetPayment")

	dup := payment("PSP1")
	dup.Reference = "someone-else"
	wantErr(t, s.SavePayment(ctx, dup, 0), storeerr.ErrConflict, "second create")
	got, err = s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment after conflict")
	same(t, got, p, "payment after a conflicting create")
}

func testPaymentVersion(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	missing := payment("PSP_MISSING")
	missing.Version = 2
	wantErr(t, s.SavePayment(ctx, missing, 1), storeerr.ErrConflict, "update of a missing payment")

	p := payment("PSP1")
	noErr(t, s.SavePayment(ctx, p, 0), "create")
	v2 := p
	v2.Version, v2.State, v2.CapturedValue = 2, payments.StateCaptured, 1999
	v2.UpdatedAt = epoch().Add(time.Minute)
	v2.History = append(append([]payments.Event{}, p.History...), payments.Event{At: v2.UpdatedAt, Kind: "capture", Origin: "api"})
	noErr(t, s.SavePayment(ctx, v2, 1), "update 1→2")

	stale := p
	stale.Version, stale.State = 2, payments.StateCancelled
	tests := []struct {
		name string
		p    payments.Payment
		prev int64
	}{
		{"stale version", stale, 1},
		{"future version", func() payments.Payment { x := v2; x.Version = 6; return x }(), 5},
	}
	for _, tc := range tests {
		wantErr(t, s.SavePayment(ctx, tc.p, tc.prev), storeerr.ErrConflict, tc.name)
	}
	bad := v2
	bad.Version = 4 // must be prevVersion+1
	if err := s.SavePayment(ctx, bad, 2); err == nil {
		t.Fatal("SavePayment with Version != prevVersion+1: got nil error")
	}
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, got, v2, "payment after rejected writes")
}

func testPaymentConcurrentUpdates(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	p := payment("PSP1")
	noErr(t, s.SavePayment(ctx, p, 0), "create")
	const writers = 10
	errs := make([]error, writers)
	runConcurrently(writers, func(i int) {
		errs[i] = appendEvent(ctx, s, "PSP1", payments.Event{
			At: epoch().Add(time.Duration(i+1) * time.Second), Kind: "AUTHORISATION", Origin: "notification",
			Detail: name("writer", i),
		})
	})
	for i, err := range errs {
		noErr(t, err, name("writer", i))
	}
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	if got.Version != 1+writers || len(got.History) != 1+writers {
		t.Fatalf("after %d concurrent updates: version %d, %d history entries; want %d and %d",
			writers, got.Version, len(got.History), 1+writers, 1+writers)
	}
	details := make([]string, 0, writers)
	for _, e := range got.History[1:] {
		details = append(details, e.Detail)
	}
	sort.Strings(details)
	want := make([]string, writers)
	for i := range want {
		want[i] = name("writer", i)
	}
	same(t, details, want, "history entries")
}

// appendEvent is the read-modify-write loop services use: read, change,
// save conditional on the version read, retry on conflict.
func appendEvent(ctx context.Context, s payments.Store, psp string, e payments.Event) error {
	const maxAttempts = 200
	for range maxAttempts {
		p, err := s.GetPayment(ctx, psp)
		if err != nil {
			return err
		}
		prev := p.Version
		p.History = append(p.History, e)
		p.Version = prev + 1
		p.UpdatedAt = e.At
		err = s.SavePayment(ctx, p, prev)
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("append to %s: still conflicting after %d attempts", psp, maxAttempts)
}

func testPaymentTimesUTC(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	local := epoch().In(elsewhere())
	sess := session("CS1")
	sess.CreatedAt, sess.ExpiresAt = local, local.Add(time.Hour)
	noErr(t, s.PutSession(ctx, sess), "PutSession")
	gs, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession")
	sameTime(t, gs.CreatedAt, epoch(), "Session.CreatedAt")
	sameTime(t, gs.ExpiresAt, epoch().Add(time.Hour), "Session.ExpiresAt")

	p := payment("PSP1")
	p.CreatedAt, p.UpdatedAt = local, local.Add(time.Second)
	p.History = append([]payments.Event{}, p.History...)
	p.History[0].At = local.Add(2 * time.Second)
	noErr(t, s.SavePayment(ctx, p, 0), "SavePayment")
	gp, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	sameTime(t, gp.CreatedAt, epoch(), "Payment.CreatedAt")
	sameTime(t, gp.UpdatedAt, epoch().Add(time.Second), "Payment.UpdatedAt")
	sameTime(t, gp.History[0].At, epoch().Add(2*time.Second), "Event.At")
	if p.History[0].At.Location() == time.UTC {
		t.Fatal("store modified the caller's history")
	}
}
