package simulator

import (
	"context"
	"testing"

	"github.com/yp/paysvc/shared/upstream"
)

// TestCaptureDecidedByTheRequest: the simulator decides capture from the
// request (captureDelayHours 0 captures at once, additionalData.manualCapture
// "true" holds the payment), and from the account's default when the
// request says nothing: immediate, as the platform's, unless the account is
// one of Options.ManualCaptureAccounts. Sessions the same.
func TestCaptureDecidedByTheRequest(t *testing.T) {
	zero, two := 0, 2
	for _, tc := range []struct {
		name          string
		manualAccount bool
		manual        bool
		delay         *int
		want          string
	}{
		{"nothing said, platform default", false, false, nil, StateCaptured},
		{"nothing said, manual account", true, false, nil, StateAuthorised},
		{"delay 0 on a manual account", true, false, &zero, StateCaptured},
		{"manualCapture on an immediate account", false, true, nil, StateAuthorised},
		{"delay 2 h: held", false, false, &two, StateAuthorised},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				if !tc.manualAccount {
					o.ManualCaptureAccounts = nil
				}
			})
			var ad map[string]string
			if tc.manual {
				ad = map[string]string{upstream.AdditionalManualCapture: "true"}
			}
			req := paymentReq(1000, cardMethod("4111111111111111", "737", ""))
			req.AdditionalData, req.CaptureDelayHours = ad, tc.delay
			r, err := e.client.Payments(context.Background(), req, "")
			must(t, err)
			if p, _ := e.sim.Payment(r.PSPReference); p.State != tc.want {
				t.Errorf("payment: state %s, want %s", p.State, tc.want)
			}
			s := createSession(t, e, func(r *upstream.SessionRequest) { r.AdditionalData, r.CaptureDelayHours = ad, tc.delay })
			res, err := e.sim.PaySession(context.Background(), s.ID, SessionPayment{HolderName: "Ann Shopper"})
			must(t, err)
			if p, _ := e.sim.Payment(res.PSPReference); p.State != tc.want {
				t.Errorf("session payment: state %s, want %s", p.State, tc.want)
			}
		})
	}
	e := newEnv(t)
	req := paymentReq(1000, cardMethod("4111111111111111", "737", ""))
	bad := 673
	req.CaptureDelayHours = &bad
	if _, err := e.client.Payments(context.Background(), req, ""); err == nil || apiErr(t, err).HTTPStatus != 422 {
		t.Fatalf("captureDelayHours 673: %v, want 422", err)
	}
}
