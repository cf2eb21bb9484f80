package simulator

import "testing"

// TestPartialCaptureReleasesTheRest: on an account without multiple
// partial captures (the platform's default) a partial capture cancels the
// rest of the authorisation and a second capture is refused; with them,
// captures continue up to the authorised amount (Checkout v71,
// POST /payments/{paymentPspReference}/captures).
func TestPartialCaptureReleasesTheRest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		multi  bool
		state  string
		closed bool
	}{
		{"single capture", false, StateCaptured, true},
		{"multiple partial captures", true, StateCaptured, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				if !tc.multi {
					o.MultiplePartialCaptureAccounts = nil
				}
			})
			psp := e.pay(t, 1000, "").PSPReference
			must(t, e.capture(psp, 400))
			if p, _ := e.sim.Payment(psp); p.RemainderClosed != tc.closed {
				t.Fatalf("after 400: %+v", p)
			}
			err := e.capture(psp, 600)
			if (err != nil) != tc.closed {
				t.Fatalf("second capture: %v", err)
			}
			if err != nil && apiErr(t, err).HTTPStatus != 422 {
				t.Fatalf("second capture: %v, want 422", err)
			}
			p, _ := e.sim.Payment(psp)
			want := int64(1000)
			if tc.closed {
				want = 400
			}
			if p.State != tc.state || p.CapturedValue != want {
				t.Fatalf("payment %s captured %d; want %s %d", p.State, p.CapturedValue, tc.state, want)
			}
		})
	}
}
