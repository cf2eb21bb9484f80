package tests

import (
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// TestPartialCapturesE2E (issue 44 item 3): with multiple partial captures
// off (the default, as the platform's), a partial capture releases the
// rest of the authorisation — capturable 0, the captured 400 refundable —
// and a second capture is refused 400 naming the rule, before the
// platform, which would refuse it too; on (the merchant and its platform
// account), captures continue to the authorised amount. Both stores.
func TestPartialCapturesE2E(t *testing.T) {
	o := whOptions{allowLocal: true, sim: simulator.Options{MultiplePartialCaptureAccounts: []string{"MultiShopECOM"}}}
	onBothStores(t, o, func(t *testing.T, e *whEnv) {
		capture := func(key, site, psp, body string, want int) map[string]any {
			t.Helper()
			return e.callAs(key, "POST", "/v1/ecom/"+site+"/payments/"+psp+"/captures", body, want)
		}
		const c400, c600 = `{"amount":{"value":400,"currency":"EUR"}}`, `{"amount":{"value":600,"currency":"EUR"}}`

		psp := e.pay(1000, "")
		e.settle()
		capture(e.key, e2eSite, psp, c400, 200)
		e.settle()
		out := capture(e.key, e2eSite, psp, c600, 400)
		if msg, _ := out["message"].(string); out["errorCode"] != "yp_2002" || !strings.Contains(msg, "multiple partial captures are off") {
			t.Errorf("second capture: %v", out)
		}
		if v := e.payment(psp).View(); v.State != payments.StateCaptured || v.Captured != 400 || v.Capturable != 0 || v.Refundable != 400 {
			t.Errorf("record: %+v", v)
		}
		if p, _ := e.sim.Payment(psp); !p.RemainderClosed || p.CapturedValue != 400 || e.sim.Requests("captures") != 1 {
			t.Errorf("the platform: %+v, %d capture requests", p, e.sim.Requests("captures"))
		}
		e.api("/payments/"+psp+"/refunds", c400, 200)
		e.settle()
		if v := e.payment(psp).View(); v.State != payments.StateRefunded || v.Refunded != 400 {
			t.Errorf("after the refund: %+v", v)
		}

		multiKey := e.seedMulti()
		psp = e.payAs(multiKey, "site_multi", 1000, "", "")
		e.settle()
		capture(multiKey, "site_multi", psp, c400, 200)
		e.settle()
		capture(multiKey, "site_multi", psp, c600, 200)
		e.settle()
		p, _ := e.sim.Payment(psp)
		if v := e.payment(psp).View(); v.State != payments.StateCaptured || v.Captured != 1000 || p.CapturedValue != 1000 || p.RemainderClosed {
			t.Errorf("multiple partial captures: record %+v, the platform %+v", v, p)
		}
	})
}
