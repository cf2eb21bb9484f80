package tests

import (
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// TestReversalOfSplitPaymentsE2E (issue 44 item 3), on both stores: every
// payment here carries split data, and the platform says not to use
// /reversals for those (docs.adyen.com/online-payments/reversal; the
// simulator refuses it). POST …/reversals of an uncaptured payment is the
// platform's cancel (CANCELLATION, Cancelled on both sides); of a captured
// one a refund of what is refundable (REFUND, Refunded on both sides; in
// flight until then: TestReversalOutcomes); of
// a partially refunded one, a refund of the rest. /reversals is never
// called.
func TestReversalOfSplitPaymentsE2E(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		uncaptured := e.pay(1000, "")
		e.settle()
		e.api("/payments/"+uncaptured+"/reversals", `{"reference":"rev-1"}`, 200)
		e.settle()
		if v := e.payment(uncaptured).View(); v.State != payments.StateCancelled || v.Capturable != 0 {
			t.Errorf("uncaptured: record %+v", v)
		}
		if p, _ := e.sim.Payment(uncaptured); p.State != simulator.StateCancelled || len(p.Splits) == 0 {
			t.Errorf("uncaptured: the platform: %s, splits %v", p.State, p.Splits)
		}
		if got := e.hooks.codesOf(t, uncaptured); got != "AUTHORISATION,CANCELLATION" {
			t.Errorf("uncaptured: webhooks %s", got)
		}

		captured := e.payCaptured("")
		refunds := e.sim.Requests("refunds")
		e.api("/payments/"+captured+"/reversals", `{}`, 200)
		e.settle()
		if v := e.payment(captured).View(); v.State != payments.StateRefunded || v.Refunded != 1000 {
			t.Errorf("captured: record %+v", v)
		}
		if p, _ := e.sim.Payment(captured); p.State != simulator.StateRefunded || p.RefundedValue != 1000 {
			t.Errorf("captured: the platform %s refunded %d", p.State, p.RefundedValue)
		}
		if got := e.hooks.codesOf(t, captured); got != "AUTHORISATION,CAPTURE,REFUND" {
			t.Errorf("captured: webhooks %s", got)
		}

		part := e.payCaptured("")
		e.api("/payments/"+part+"/refunds", `{"amount":{"value":300,"currency":"EUR"}}`, 200)
		e.settle()
		e.api("/payments/"+part+"/reversals", `{}`, 200)
		e.settle()
		if v := e.payment(part).View(); v.State != payments.StateRefunded || v.Refunded != 1000 || v.Refundable != 0 {
			t.Errorf("partially refunded: record %+v", v)
		}
		if p, _ := e.sim.Payment(part); p.RefundedValue != 1000 {
			t.Errorf("partially refunded: the platform refunded %d", p.RefundedValue)
		}
		if n := e.sim.Requests("refunds") - refunds; n != 3 {
			t.Errorf("%d refunds calls, want 3", n)
		}
		if n := e.sim.Requests("reversals"); n != 0 {
			t.Errorf("%d calls of the platform's /reversals", n)
		}
	})
}
