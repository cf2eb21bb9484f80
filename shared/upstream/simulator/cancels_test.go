package simulator

import (
	"context"
	"testing"

	"github.com/yp/paysvc/shared/upstream"
)

// TestCancel: POST /payments/{psp}/cancels cancels an uncaptured
// authorisation (Cancelled), or the remainder after a partial capture on an
// account with multiple partial captures (what was captured stays
// refundable), with a CANCELLATION naming the payment in
// originalReference; a payment with nothing left uncaptured, or already
// cancelled, is refused 422.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cancel := func(psp string) error {
		_, err := e.client.Cancel(ctx, psp, upstream.CancelRequest{MerchantAccount: testMerchant, Reference: "c-1"}, "")
		return err
	}

	whole := e.pay(t, 1000, "").PSPReference
	must(t, cancel(whole))
	if p, _ := e.sim.Payment(whole); p.State != StateCancelled {
		t.Fatalf("cancelled: %s", p.State)
	}
	if err := cancel(whole); err == nil || apiErr(t, err).HTTPStatus != 422 {
		t.Fatalf("second cancel: %v", err)
	}

	rest := e.pay(t, 1000, "").PSPReference
	must(t, e.capture(rest, 400))
	must(t, cancel(rest))
	p, _ := e.sim.Payment(rest)
	if p.State != StateCaptured || !p.RemainderClosed || p.CapturedValue != 400 {
		t.Fatalf("remainder cancelled: %+v", p)
	}
	if err := e.capture(rest, 100); err == nil {
		t.Fatal("a capture after the cancel was accepted")
	}
	if err := e.refund(rest, 400); err != nil {
		t.Fatalf("refund of the captured part: %v", err)
	}
	if err := cancel(rest); err == nil {
		t.Fatal("a cancel with nothing left was accepted")
	}

	e.flush(t)
	var cancellations []upstream.NotificationRequestItem
	for _, it := range e.rec.items(t) {
		if it.EventCode == upstream.EventCancellation {
			cancellations = append(cancellations, it)
		}
	}
	if len(cancellations) != 2 || cancellations[0].OriginalReference != whole || cancellations[0].Amount.Value != 1000 ||
		cancellations[1].OriginalReference != rest || cancellations[1].Amount.Value != 600 || cancellations[1].Success != "true" {
		t.Fatalf("CANCELLATION items: %+v", cancellations)
	}
	if e.sim.Requests("cancels") != 4 {
		t.Fatalf("%d cancels requests", e.sim.Requests("cancels"))
	}
}

// TestReversalRefusedWithSplits: as the platform documents, /reversals is
// not for payments with split data (nor several partial captures): 422,
// nothing reversed.
func TestReversalRefusedWithSplits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := paymentReq(1000, cardMethod("4111111111111111", "737", ""))
	req.Splits = []upstream.Split{
		{Account: "BA_MERCHANT", Amount: &upstream.SplitAmount{Value: 970}, Type: "BalanceAccount", Reference: "s1"},
		{Account: "BA_PLATFORM", Amount: &upstream.SplitAmount{Value: 30}, Type: "Commission", Reference: "s2"},
	}
	r, err := e.client.Payments(ctx, req, "")
	must(t, err)
	err = e.reverse(r.PSPReference)
	if err == nil || apiErr(t, err).HTTPStatus != 422 {
		t.Fatalf("reversal of a split payment: %v, want 422", err)
	}
	if p, _ := e.sim.Payment(r.PSPReference); p.State != StateAuthorised {
		t.Fatalf("state %s", p.State)
	}
	twice := e.pay(t, 1000, "").PSPReference
	for _, v := range []int64{300, 300} {
		must(t, e.capture(twice, v))
	}
	if err := e.reverse(twice); err == nil {
		t.Fatal("reversal after two partial captures accepted")
	}
}
