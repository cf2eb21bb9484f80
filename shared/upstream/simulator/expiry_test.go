package simulator

import (
	"slices"
	"testing"
	"time"
)

// TestAuthorisationValidity: the simulator's own method table (the
// oracle the service's table is compared with end to end).
func TestAuthorisationValidity(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   time.Duration // 0: captured at authorisation
	}{
		{"visa", 28 * simDay}, {"mc", 28 * simDay}, {"klarna", 28 * simDay}, {"newpay", 28 * simDay},
		{"cartebancaire", 12 * simDay}, {"paypal", 3 * simDay}, {"ideal", 0}, {"twint", 0},
	} {
		d, ok := authorisationValidity(tc.method)
		if ok != (tc.want != 0) || d != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.method, d, ok, tc.want)
		}
	}
}

// TestExpireAuthorisations: on its clock, past 28 days, the simulator
// expires the uncaptured remainder of card authorisations and sends
// EXPIRE as published (the payment in pspReference, no
// originalReference, the amount originally authorised, no metadata); a
// capture is refused after, the captured part stays refundable, and a
// second sweep expires nothing.
func TestExpireAuthorisations(t *testing.T) {
	e := newEnv(t)
	whole := e.pay(t, 1000, "").PSPReference
	part := e.pay(t, 1000, "").PSPReference
	must(t, e.capture(part, 400))
	e.flush(t)
	before := len(e.rec.items(t))
	e.clock.Advance(28*simDay - time.Minute)
	if got := e.sim.ExpireAuthorisations(); len(got) != 0 {
		t.Fatalf("expired before 28 days: %v", got)
	}
	e.clock.Advance(time.Minute)
	if got := e.sim.ExpireAuthorisations(); !slices.Equal(got, []string{whole, part}) {
		t.Fatalf("expired %v, want %s and %s", got, whole, part)
	}
	e.flush(t)
	items := e.rec.items(t)[before:]
	if len(items) != 2 {
		t.Fatalf("notifications %v, want two EXPIREs", eventCodes(items))
	}
	for i, psp := range []string{whole, part} {
		it := items[i]
		if it.EventCode != "EXPIRE" || it.PSPReference != psp || it.OriginalReference != "" || it.Amount != eur(1000) ||
			it.Success != "true" || len(it.AdditionalData) != 1 {
			t.Errorf("EXPIRE of %s: %+v", psp, it)
		}
	}
	if p, _ := e.sim.Payment(whole); p.State != StateExpired {
		t.Errorf("uncaptured payment %s after expiry, want %s", p.State, StateExpired)
	}
	for _, psp := range []string{whole, part} {
		if err := e.capture(psp, 100); err == nil {
			t.Errorf("capture of %s accepted after expiry", psp)
		}
	}
	if err := e.refund(part, 400); err != nil {
		t.Errorf("refund of the captured part: %v", err)
	}
	if got := e.sim.ExpireAuthorisations(); len(got) != 0 {
		t.Errorf("second sweep expired %v", got)
	}
}
