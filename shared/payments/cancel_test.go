package payments_test

import (
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// TestCancel: a cancel releases what is left uncaptured — all of an
// uncaptured authorisation (Cancelled), or the remainder after partial
// captures (captured money stays refundable) — and is refused, before the
// upstream, when nothing is left to cancel or a cancel is in flight.
func TestCancel(t *testing.T) {
	single := merchant
	single.MultiplePartialCaptures = false
	for _, tc := range []struct {
		name       string
		m          tenant.Merchant
		captured   int64 // captured first
		cancelErr  error // the upstream's answer to the cancel
		refused    string
		state      payments.State
		refundable int64
		calls      int
	}{
		{name: "uncaptured", m: merchant, state: payments.StateCancelled, calls: 1},
		{name: "the remainder after 400", m: merchant, captured: 400, state: payments.StateCaptured, refundable: 400, calls: 2},
		{name: "captured in full", m: merchant, captured: 1000, refused: "captured in full (refund it)", state: payments.StateCaptured, refundable: 1000, calls: 1},
		{name: "released by the only capture", m: single, captured: 400, refused: "already released", state: payments.StateCaptured, refundable: 400, calls: 1},
		{name: "in flight", m: merchant, cancelErr: errUnavailable, state: payments.StateAuthorised, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up, svc := authorisedService(t, &captureUpstream{})
			if tc.captured > 0 {
				if err := do(t, tc.m, svc.Capture, payments.CaptureInput{Amount: eur(tc.captured)}); err != nil {
					t.Fatal(err)
				}
			}
			up.err = tc.cancelErr
			err := do(t, tc.m, svc.Cancel, payments.ReversalInput{Reference: "cancel-1"})
			up.err = nil
			switch {
			case tc.refused != "" && (apperr.As(err).Kind != apperr.Invalid || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("cancel: %v, want refused %q", err, tc.refused)
			case tc.refused == "" && tc.cancelErr == nil && err != nil:
				t.Fatalf("cancel: %v", err)
			}
			v := record(t, st).View()
			if v.State != tc.state || v.Capturable != 0 && tc.cancelErr == nil || v.Refundable != tc.refundable || up.calls() != tc.calls {
				t.Fatalf("record %+v, %d upstream calls", v, up.calls())
			}
			if tc.refused == "" && up.reqs[len(up.reqs)-1].Kind != payments.OpCancel {
				t.Fatalf("sent %+v", up.reqs[len(up.reqs)-1])
			}
			// Nothing more can be captured, nor cancelled again.
			err = do(t, tc.m, svc.Capture, payments.CaptureInput{Amount: eur(1)})
			if apperr.As(err).Kind != apperr.Invalid {
				t.Fatalf("capture after the cancel: %v", err)
			}
			err = do(t, tc.m, svc.Cancel, payments.ReversalInput{})
			if apperr.As(err).Kind != apperr.Invalid || up.calls() != tc.calls {
				t.Fatalf("second cancel: %v, %d upstream calls", err, up.calls())
			}
		})
	}
}
