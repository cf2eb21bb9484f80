package simulator

import (
	"context"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// step is one modification in a state-machine scenario.
type step struct {
	op        string // capture, reverse, refund, update
	amount    money.Amount
	wantErr   string // errorCode of a 422, "" for success
	wantState string
	wantCapt  int64
	wantRefd  int64
	wantAuth  int64
	wantEvent string // notification of the step ("" = none)
	wantOK    bool   // its success flag
	wantAct   string // modification.action of CANCEL_OR_REFUND
}

func runSteps(t *testing.T, e *env, psp string, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, st := range steps {
		before := len(e.sim.NotificationsFor(psp))
		var (
			resp upstream.ModificationResponse
			err  error
		)
		switch st.op {
		case "capture":
			resp, err = e.client.Capture(ctx, psp, upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: st.amount, Reference: "cap"}, "")
		case "reverse":
			resp, err = e.client.Reverse(ctx, psp, upstream.ReversalRequest{MerchantAccount: testMerchant, Reference: "rev"}, "")
		case "refund":
			resp, err = e.client.Refund(ctx, psp, upstream.RefundRequest{MerchantAccount: testMerchant, Amount: st.amount, Reference: "ref"}, "")
		case "update":
			resp, err = e.client.UpdateAmount(ctx, psp, upstream.AmountUpdateRequest{MerchantAccount: testMerchant, Amount: st.amount, IndustryUsage: "delayedCharge"}, "")
		}
		if st.wantErr != "" {
			ue := apiErr(t, err)
			if ue.HTTPStatus != 422 || ue.ErrorCode != st.wantErr {
				t.Fatalf("step %d %s: err = %+v, want 422 %s", i, st.op, ue, st.wantErr)
			}
		} else {
			if err != nil {
				t.Fatalf("step %d %s: %v", i, st.op, err)
			}
			if resp.Status != "received" || len(resp.PSPReference) != 16 || resp.PSPReference == psp || resp.PaymentPSPReference != psp || resp.MerchantAccount != testMerchant {
				t.Fatalf("step %d: response = %+v", i, resp)
			}
		}
		p, _ := e.sim.Payment(psp)
		if p.State != st.wantState || p.CapturedValue != st.wantCapt || p.RefundedValue != st.wantRefd || p.AuthorisedValue != st.wantAuth {
			t.Fatalf("step %d %s: state %s auth %d captured %d refunded %d; want %s %d %d %d", i, st.op,
				p.State, p.AuthorisedValue, p.CapturedValue, p.RefundedValue, st.wantState, st.wantAuth, st.wantCapt, st.wantRefd)
		}
		items := e.sim.NotificationsFor(psp)[before:]
		if st.wantEvent == "" {
			if len(items) != 0 {
				t.Fatalf("step %d: unexpected notifications %v", i, eventCodes(items))
			}
			continue
		}
		if len(items) == 0 {
			t.Fatalf("step %d: no notification", i)
		}
		it := items[0]
		if it.EventCode != st.wantEvent || it.Succeeded() != st.wantOK || it.OriginalReference != psp || it.PSPReference != resp.PSPReference && st.wantErr == "" {
			t.Fatalf("step %d: notification %+v", i, it)
		}
		if st.wantAct != "" && it.AdditionalData["modification.action"] != st.wantAct {
			t.Fatalf("step %d: modification.action = %q", i, it.AdditionalData["modification.action"])
		}
		if !upstream.VerifyItem(testHMACKey, it) {
			t.Fatalf("step %d: bad HMAC", i)
		}
	}
}

func TestModificationStateMachine(t *testing.T) {
	tests := []struct {
		name   string
		holder string
		auto   bool
		steps  []step
	}{
		{"full capture then refund", "", false, []step{
			{op: "capture", amount: eur(1000), wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "capture", amount: eur(1), wantErr: "137", wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000},
			{op: "reverse", wantState: StateRefunded, wantCapt: 1000, wantRefd: 1000, wantAuth: 1000, wantEvent: "CANCEL_OR_REFUND", wantOK: true, wantAct: "refund"},
			{op: "reverse", wantErr: "000", wantState: StateRefunded, wantCapt: 1000, wantRefd: 1000, wantAuth: 1000},
			{op: "capture", amount: eur(1), wantErr: "000", wantState: StateRefunded, wantCapt: 1000, wantRefd: 1000, wantAuth: 1000},
		}},
		{"partial captures", "", false, []step{
			{op: "capture", amount: eur(300), wantState: StatePartiallyCaptured, wantCapt: 300, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "capture", amount: eur(701), wantErr: "137", wantState: StatePartiallyCaptured, wantCapt: 300, wantAuth: 1000},
			{op: "capture", amount: money.Amount{Value: 100, Currency: "USD"}, wantErr: "000", wantState: StatePartiallyCaptured, wantCapt: 300, wantAuth: 1000},
			{op: "update", amount: eur(500), wantErr: "000", wantState: StatePartiallyCaptured, wantCapt: 300, wantAuth: 1000},
			{op: "capture", amount: eur(700), wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
		}},
		{"cancel before capture", "", false, []step{
			{op: "reverse", wantState: StateCancelled, wantAuth: 1000, wantEvent: "CANCEL_OR_REFUND", wantOK: true, wantAct: "cancel"},
			{op: "capture", amount: eur(100), wantErr: "000", wantState: StateCancelled, wantAuth: 1000},
			{op: "update", amount: eur(100), wantErr: "000", wantState: StateCancelled, wantAuth: 1000},
			{op: "reverse", wantErr: "000", wantState: StateCancelled, wantAuth: 1000},
		}},
		{"amount update then capture", "", false, []step{
			{op: "update", amount: eur(1500), wantState: StateAuthorised, wantAuth: 1500, wantEvent: "AUTHORISATION_ADJUSTMENT", wantOK: true},
			{op: "update", amount: money.Amount{Value: 1500, Currency: "GBP"}, wantErr: "000", wantState: StateAuthorised, wantAuth: 1500},
			{op: "capture", amount: eur(1500), wantState: StateCaptured, wantCapt: 1500, wantAuth: 1500, wantEvent: "CAPTURE", wantOK: true},
		}},
		{"auto-capture account", "", true, []step{
			{op: "capture", amount: eur(1), wantErr: "137", wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000},
			{op: "reverse", wantState: StateRefunded, wantCapt: 1000, wantRefd: 1000, wantAuth: 1000, wantEvent: "CANCEL_OR_REFUND", wantOK: true, wantAct: "refund"},
		}},
		{"capture failed", "capture failed", false, []step{
			{op: "capture", amount: eur(1000), wantState: StateAuthorised, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "reverse", wantState: StateCancelled, wantAuth: 1000, wantEvent: "CANCEL_OR_REFUND", wantOK: true, wantAct: "cancel"},
		}},
		{"partial refunds", "", false, []step{
			{op: "refund", amount: eur(100), wantErr: "000", wantState: StateAuthorised, wantAuth: 1000},
			{op: "capture", amount: eur(600), wantState: StatePartiallyCaptured, wantCapt: 600, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "refund", amount: eur(200), wantState: StatePartiallyCaptured, wantCapt: 600, wantRefd: 200, wantAuth: 1000, wantEvent: "REFUND", wantOK: true},
			{op: "refund", amount: eur(401), wantErr: "137", wantState: StatePartiallyCaptured, wantCapt: 600, wantRefd: 200, wantAuth: 1000},
			{op: "refund", amount: money.Amount{Value: 100, Currency: "USD"}, wantErr: "000", wantState: StatePartiallyCaptured, wantCapt: 600, wantRefd: 200, wantAuth: 1000},
			{op: "refund", amount: eur(400), wantState: StateRefunded, wantCapt: 600, wantRefd: 600, wantAuth: 1000, wantEvent: "REFUND", wantOK: true},
			{op: "refund", amount: eur(1), wantErr: "137", wantState: StateRefunded, wantCapt: 600, wantRefd: 600, wantAuth: 1000},
		}},
		{"refund of a refund failed payment", "refund failed", false, []step{
			{op: "capture", amount: eur(1000), wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "refund", amount: eur(300), wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "REFUND", wantOK: true},
		}},
		{"refund failed", "refund failed", false, []step{
			{op: "capture", amount: eur(1000), wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "CAPTURE", wantOK: true},
			{op: "reverse", wantState: StateCaptured, wantCapt: 1000, wantAuth: 1000, wantEvent: "CANCEL_OR_REFUND", wantOK: true, wantAct: "refund"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				if tt.auto {
					o.ManualCaptureAccounts = nil // the platform's default: immediate
				}
			})
			r := e.pay(t, 1000, tt.holder)
			runSteps(t, e, r.PSPReference, tt.steps)
		})
	}
}

func TestCaptureAndRefundFailedNotifications(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cf := e.pay(t, 1000, "capture failed")
	cap1, err := e.client.Capture(ctx, cf.PSPReference, upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: eur(1000)}, "")
	must(t, err)
	rf := e.pay(t, 1000, "refund failed")
	must(t, e.capture(rf.PSPReference, 1000))
	rev, err := e.client.Reverse(ctx, rf.PSPReference, upstream.ReversalRequest{MerchantAccount: testMerchant}, "")
	must(t, err)
	e.flush(t)
	var got []string
	for _, it := range e.rec.items(t) {
		got = append(got, it.EventCode+"/"+it.Success)
		switch it.EventCode {
		case "CAPTURE_FAILED":
			if it.PSPReference != cap1.PSPReference || it.OriginalReference != cf.PSPReference {
				t.Errorf("CAPTURE_FAILED = %+v", it)
			}
		case "REFUND_FAILED":
			if it.PSPReference != rev.PSPReference || it.OriginalReference != rf.PSPReference {
				t.Errorf("REFUND_FAILED = %+v", it)
			}
		}
	}
	want := []string{"AUTHORISATION/true", "CAPTURE/true", "CAPTURE_FAILED/true", "AUTHORISATION/true", "CAPTURE/true", "CANCEL_OR_REFUND/true", "REFUND_FAILED/true"}
	if len(got) != len(want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events = %v, want %v", got, want)
		}
	}
	p, _ := e.sim.Payment(cf.PSPReference)
	if len(p.Modifications) != 1 || p.Modifications[0].Success {
		t.Fatalf("capture-failed modification = %+v", p.Modifications)
	}
}

func TestModificationOfOtherMerchantIsUnknown(t *testing.T) {
	e := newEnv(t)
	r := e.pay(t, 1000, "")
	_, err := e.client.Capture(context.Background(), r.PSPReference, upstream.CaptureRequest{MerchantAccount: "OtherMerchant", Amount: eur(1)}, "")
	if ue := apiErr(t, err); ue.ErrorCode != "167" || ue.PSPReference != r.PSPReference {
		t.Fatalf("err = %+v", ue)
	}
}

func TestModificationOfUnfinishedPayments(t *testing.T) {
	e := newEnv(t)
	refused := e.pay(t, 1000, "DECLINED")
	challenged := startAction(t, e, "5454545454545454", "")
	for _, psp := range []string{refused.PSPReference, challenged.PSPReference} {
		if err := e.capture(psp, 1); apiErr(t, err).HTTPStatus != 422 {
			t.Fatalf("capture of %s accepted", psp)
		}
		if err := e.reverse(psp); apiErr(t, err).HTTPStatus != 422 {
			t.Fatalf("reversal of %s accepted", psp)
		}
	}
	// A Received payment can be cancelled.
	pending := e.pay(t, 1000, "PENDING")
	must(t, e.reverse(pending.PSPReference))
}

func TestAsyncModificationFailures(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AsyncModificationFailures = true })
	r := e.pay(t, 1000, "")
	ctx := context.Background()
	resp, err := e.client.Capture(ctx, r.PSPReference, upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: eur(5000)}, "")
	if err != nil || resp.Status != "received" {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
	e.flush(t)
	items := e.rec.items(t)
	last := items[len(items)-1]
	if last.EventCode != "CAPTURE" || last.Succeeded() || last.PSPReference != resp.PSPReference || last.Reason == "" || !upstream.VerifyItem(testHMACKey, last) {
		t.Fatalf("notification = %+v", last)
	}
	p, _ := e.sim.Payment(r.PSPReference)
	if p.CapturedValue != 0 || p.State != StateAuthorised {
		t.Fatalf("state = %+v", p)
	}
	// Unknown pspReference stays synchronous.
	if _, err := e.client.Capture(ctx, "UNKNOWN", upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: eur(1)}, ""); apiErr(t, err).ErrorCode != "167" {
		t.Fatalf("unknown psp: %v", err)
	}
}
