package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/upstreamapi"
)

// TestPlatformEvents: each of the platform's own events moves the
// simulator's ledger by its rule and is emitted in its published shape
// (validated against Webhooks-v1.json; the codes its own enum lacks or
// that have no webhook validated as one of the same schema).
func TestPlatformEvents(t *testing.T) {
	v, err := upstreamapi.Load()
	must(t, err)
	ctx := context.Background()
	validate := func(t *testing.T, it upstream.NotificationRequestItem) {
		t.Helper()
		body, err := json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: it}}})
		must(t, err)
		if it.EventCode == "FUTURE_CODE_44" {
			body = bytes.Replace(body, []byte(`"FUTURE_CODE_44"`), []byte(`"MANUAL_REVIEW_ACCEPT"`), 1) // no webhook of its own
		}
		if errs := v.Notification(body); len(errs) != 0 {
			t.Fatalf("%s: %v\n%s", it.EventCode, errs, body)
		}
	}
	// event plays ev on payment psp and validates the item emitted.
	event := func(t *testing.T, e *env, psp string, ev PlatformEvent) upstream.NotificationRequestItem {
		t.Helper()
		it, err := e.sim.PlatformEvent(psp, ev)
		must(t, err)
		validate(t, it)
		return it
	}
	// setup: a payment of 1000, captured 400, refunded 100.
	setup := func(t *testing.T) (*env, string, string) {
		e := newEnv(t)
		psp := e.pay(t, 1000, "").PSPReference
		must(t, e.capture(psp, 400))
		r, err := e.client.Refund(ctx, psp, upstream.RefundRequest{MerchantAccount: testMerchant, Amount: eur(100)}, "")
		must(t, err)
		return e, psp, r.PSPReference
	}
	state := func(e *env, psp string) PaymentState {
		p, _ := e.sim.Payment(psp)
		return p
	}
	t.Run("EXPIRE", func(t *testing.T) {
		e, psp, _ := setup(t)
		it := event(t, e, psp, PlatformEvent{Code: "EXPIRE"})
		if it.PSPReference != psp || it.OriginalReference != "" || it.Amount.Value != 1000 {
			t.Fatalf("EXPIRE item: %+v", it)
		}
		if p := state(e, psp); !p.Released || p.State != StateCaptured || p.CapturedValue != 400 {
			t.Fatalf("after EXPIRE: %+v", p)
		}
		if err := e.capture(psp, 100); err == nil {
			t.Fatal("a capture after EXPIRE was accepted")
		}
		if err := e.refund(psp, 100); err != nil {
			t.Fatalf("a refund after EXPIRE: %v", err)
		}
		if _, err := e.sim.PlatformEvent(psp, PlatformEvent{Code: "EXPIRE"}); !errors.Is(err, errNoEvent) {
			t.Fatalf("a second EXPIRE: %v", err)
		}
	})
	t.Run("CANCELLATION uncaptured", func(t *testing.T) {
		e := newEnv(t)
		psp := e.pay(t, 1000, "").PSPReference
		it := event(t, e, psp, PlatformEvent{Code: "CANCELLATION"})
		if p := state(e, psp); p.State != StateCancelled || it.OriginalReference != psp {
			t.Fatalf("after CANCELLATION: %+v, %+v", p, it)
		}
	})
	t.Run("TECHNICAL_CANCEL of the remainder", func(t *testing.T) {
		e, psp, _ := setup(t)
		it := event(t, e, psp, PlatformEvent{Code: "TECHNICAL_CANCEL"})
		p := state(e, psp)
		if !p.Released || p.State != StateCaptured || it.OriginalReference != psp {
			t.Fatalf("after TECHNICAL_CANCEL: %+v, %+v", p, it)
		}
		if m := p.Modifications[len(p.Modifications)-1]; m.Kind != ModCancel || m.PSPReference != it.PSPReference || !m.Success {
			t.Fatalf("TECHNICAL_CANCEL modification: %+v", m)
		}
	})
	t.Run("nothing left to release", func(t *testing.T) {
		// A cancelled remainder neither expires nor is cancelled again; an
		// expired one cannot be cancelled.
		e, psp, _ := setup(t)
		must(t, e.cancel(psp))
		for _, code := range []string{"EXPIRE", "CANCELLATION", "TECHNICAL_CANCEL"} {
			if _, err := e.sim.PlatformEvent(psp, PlatformEvent{Code: code}); !errors.Is(err, errNoEvent) {
				t.Fatalf("%s after a cancel: %v", code, err)
			}
		}
		e, psp, _ = setup(t)
		event(t, e, psp, PlatformEvent{Code: "EXPIRE"})
		if err := e.cancel(psp); err == nil {
			t.Fatal("a cancel after EXPIRE was accepted")
		}
	})
	t.Run("MANUAL_REVIEW_REJECT", func(t *testing.T) {
		e := newEnv(t)
		psp := e.pay(t, 1000, "").PSPReference
		it := event(t, e, psp, PlatformEvent{Code: "MANUAL_REVIEW_REJECT"})
		p := state(e, psp)
		if p.State != StateCancelled || !p.Released || it.Success != "true" || len(p.Modifications) != 1 ||
			p.Modifications[0].Kind != ModCancel || p.Modifications[0].PSPReference != it.PSPReference {
			t.Fatalf("after MANUAL_REVIEW_REJECT: %+v, %+v", p, it)
		}
		e, psp, _ = setup(t) // captured: the rejection fails
		it, err = e.sim.PlatformEvent(psp, PlatformEvent{Code: "MANUAL_REVIEW_REJECT"})
		must(t, err)
		if p := state(e, psp); it.Success != "false" || p.Released || p.State == StateCancelled {
			t.Fatalf("MANUAL_REVIEW_REJECT of a captured payment: %+v, %+v", p, it)
		}
	})
	t.Run("REFUNDED_REVERSED", func(t *testing.T) {
		e, psp, refund := setup(t)
		it := event(t, e, psp, PlatformEvent{Code: "REFUNDED_REVERSED", Of: refund})
		if p := state(e, psp); p.RefundedValue != 0 || it.PSPReference != refund || it.OriginalReference != psp {
			t.Fatalf("after REFUNDED_REVERSED: %+v, %+v", p, it)
		}
	})
	t.Run("REFUND_WITH_DATA", func(t *testing.T) {
		e, psp, _ := setup(t)
		if _, err := e.sim.PlatformEvent(psp, PlatformEvent{Code: "REFUND_WITH_DATA", Amount: 301}); !errors.Is(err, errNoEvent) {
			t.Fatalf("more than refundable: %v", err)
		}
		it := event(t, e, psp, PlatformEvent{Code: "REFUND_WITH_DATA", Amount: 300})
		if p := state(e, psp); p.RefundedValue != 400 || p.State != StateRefunded || it.Amount.Value != 300 {
			t.Fatalf("after REFUND_WITH_DATA: %+v, %+v", p, it)
		}
	})
	t.Run("no money", func(t *testing.T) {
		e, psp, _ := setup(t)
		before := state(e, psp)
		var dispute string
		for _, ev := range []PlatformEvent{{Code: "NOTIFICATION_OF_CHARGEBACK", Amount: 400}, {Code: "CHARGEBACK", Amount: 400},
			{Code: "CHARGEBACK_REVERSED", Amount: 400}, {Code: "REQUEST_FOR_INFORMATION"}, {Code: "NOTIFICATION_OF_FRAUD"},
			{Code: "MANUAL_REVIEW_ACCEPT"}, {Code: "RECURRING_CONTRACT"}, {Code: "POSTPONED_REFUND"}, {Code: "FUTURE_CODE_44"}} {
			if ev.Code != "NOTIFICATION_OF_CHARGEBACK" && dispute != "" && ev.Amount == 400 {
				ev.Of = dispute
			}
			it := event(t, e, psp, ev)
			if ev.Code == "NOTIFICATION_OF_CHARGEBACK" {
				dispute = it.PSPReference
			}
			if ev.Of != "" && it.PSPReference != ev.Of {
				t.Fatalf("%s: not of dispute %s: %+v", ev.Code, ev.Of, it)
			}
			if ev.Code == "RECURRING_CONTRACT" && it.OriginalPSP != psp {
				t.Fatalf("RECURRING_CONTRACT without originalPsp: %+v", it)
			}
		}
		if after := state(e, psp); after.CapturedValue != before.CapturedValue || after.RefundedValue != before.RefundedValue ||
			after.State != before.State || after.Released {
			t.Fatalf("money moved: %+v → %+v", before, after)
		}
	})
	t.Run("REPORT_AVAILABLE", func(t *testing.T) {
		e := newEnv(t)
		event(t, e, "", PlatformEvent{Code: "REPORT_AVAILABLE", Account: testMerchant})
	})
}

// The /_sim hook plays a platform event and answers its item.
func TestPlatformEventHook(t *testing.T) {
	e := newEnv(t)
	psp := e.pay(t, 1000, "").PSPReference
	status, body, _ := e.raw(t, "POST", "/_sim/payments/"+psp+"/events", testAPIKey, "", `{"code":"EXPIRE"}`)
	var it upstream.NotificationRequestItem
	if err := json.Unmarshal(body, &it); err != nil || status != 200 || it.EventCode != "EXPIRE" || it.PSPReference != psp {
		t.Fatalf("hook: %d %s", status, body)
	}
	if status, body, _ := e.raw(t, "POST", "/_sim/payments/"+psp+"/events", testAPIKey, "", `{"code":"EXPIRE"}`); status != 409 {
		t.Fatalf("a second EXPIRE: %d %s", status, body)
	}
	if status, _, _ := e.raw(t, "POST", "/_sim/payments/"+psp+"/events", testAPIKey, "", `{}`); status != 400 {
		t.Fatalf("no code: %d", status)
	}
}
