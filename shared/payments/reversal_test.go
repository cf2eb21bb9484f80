package payments_test

import (
	"context"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// TestReversalDecides: a reversal never calls the platform's /reversals
// (not for payments with split data, which every payment here has): it
// cancels a payment with nothing captured, refunds what is refundable of
// one with nothing left to capture (with its splits), and refuses one with
// a capture in flight or a remainder still capturable, naming the calls.
func TestReversalDecides(t *testing.T) {
	single := merchant
	single.MultiplePartialCaptures = false
	for _, tc := range []struct {
		name     string
		m        tenant.Merchant
		captures []int64
		refund   int64
		captErr  error // the upstream's answer to the last capture
		kind     payments.OpKind
		amount   int64
		refused  string
	}{
		{name: "uncaptured: cancel", m: merchant, kind: payments.OpCancel},
		{name: "captured in full: refund", m: merchant, captures: []int64{1000}, kind: payments.OpRefund, amount: 1000},
		{name: "partially refunded: the rest", m: merchant, captures: []int64{1000}, refund: 300, kind: payments.OpRefund, amount: 700},
		{name: "the only capture released the rest: refund", m: single, captures: []int64{400}, kind: payments.OpRefund, amount: 400},
		{name: "remainder open", m: merchant, captures: []int64{400}, refused: "cancel it (cancels)"},
		{name: "capture in flight", m: merchant, captures: []int64{400}, captErr: errUnavailable, refused: "while a capture is in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up, svc := authorisedService(t, &captureUpstream{})
			for i, v := range tc.captures {
				if i == len(tc.captures)-1 {
					up.err = tc.captErr
				}
				_ = do(t, tc.m, svc.Capture, payments.CaptureInput{Amount: eur(v)})
				up.err = nil
			}
			if tc.refund > 0 {
				if err := do(t, tc.m, svc.Refund, payments.RefundInput{Amount: eur(tc.refund)}); err != nil {
					t.Fatal(err)
				}
			}
			before := up.calls()
			err := do(t, tc.m, svc.Reverse, payments.ReversalInput{Reference: "rev-1"})
			if tc.refused != "" {
				if apperr.As(err).Kind != apperr.Invalid || !strings.Contains(err.Error(), tc.refused) || up.calls() != before {
					t.Fatalf("reversal: %v, %d calls; want refused %q", err, up.calls()-before, tc.refused)
				}
				return
			}
			if err != nil || up.calls() != before+1 {
				t.Fatalf("reversal: %v, %d calls", err, up.calls()-before)
			}
			sent := up.reqs[len(up.reqs)-1]
			if sent.Kind != tc.kind || sent.Amount.Value != tc.amount || sent.Reference != "rev-1" || (tc.kind == payments.OpRefund) != (len(sent.Splits) > 0) {
				t.Fatalf("sent %+v", sent)
			}
			v := record(t, st).View()
			if tc.kind == payments.OpCancel && v.State != payments.StateCancelled || v.Capturable != 0 || v.Refundable != 0 {
				t.Fatalf("record %+v", v)
			}
		})
	}
}

// TestReversalRetryRepeatsTheFirstCall: a reversal retried with the same
// Idempotency-Key after an answer it never got repeats the call first
// made (the same kind, amount and key), although the payment, its refund
// in flight, would now be refused a new reversal; a new key is refused.
func TestReversalRetryRepeatsTheFirstCall(t *testing.T) {
	for _, captured := range []int64{0, 1000} {
		_, up, svc := authorisedService(t, &captureUpstream{})
		ctx := context.Background()
		reverse := func(key string) error {
			c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: key}
			_, err := svc.Reverse(ctx, c, psp, payments.ReversalInput{Reference: "rev-1"})
			if werr := c.Wait(); werr != nil {
				t.Fatalf("record writes: %v", werr)
			}
			return err
		}
		if captured > 0 {
			c := &payments.Call{Merchant: merchant, Site: site}
			if _, err := svc.Capture(ctx, c, psp, payments.CaptureInput{Amount: eur(captured)}); err != nil || c.Wait() != nil {
				t.Fatal(err)
			}
		}
		up.err = errUnavailable
		if err := reverse("k1"); err == nil {
			t.Fatal("the lost answer: no error")
		}
		up.err = nil
		first := up.reqs[len(up.reqs)-1]
		if err := reverse("k1"); err != nil {
			t.Fatalf("captured %d: retry: %v", captured, err)
		}
		again := up.reqs[len(up.reqs)-1]
		if again.Kind != first.Kind || again.Amount != first.Amount || again.IdempotencyKey != first.IdempotencyKey ||
			first.IdempotencyKey != "k1" || (captured > 0) != (first.Kind == payments.OpRefund) {
			t.Fatalf("captured %d: first %+v, retry %+v", captured, first, again)
		}
		n := up.calls()
		if err := reverse("k2"); apperr.As(err).Kind != apperr.Invalid || up.calls() != n {
			t.Fatalf("captured %d: a new reversal: %v", captured, err)
		}
	}
}
