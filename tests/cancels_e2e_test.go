package tests

import (
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// TestCancelsE2E (issue 44 item 3): POST …/payments/{psp}/cancels, the
// platform's cancel, on both stores: an uncaptured payment is cancelled
// (CANCELLATION, Cancelled on both sides); after a partial capture of a
// merchant with multiple partial captures the remainder goes and the
// captured 400 stays refundable; a payment captured in full is 400 (refund
// it); a replay under the same Idempotency-Key answers the first answer
// without a second upstream call; a key without the reversals permission
// is 403.
func TestCancelsE2E(t *testing.T) {
	o := whOptions{allowLocal: true, sim: simulator.Options{MultiplePartialCaptureAccounts: []string{"MultiShopECOM"}}}
	onBothStores(t, o, func(t *testing.T, e *whEnv) {
		psp := e.pay(1000, "")
		e.settle()
		first := e.api("/payments/"+psp+"/cancels", `{"reference":"cancel-1"}`, 200, "Idempotency-Key", "cancel-key-1")
		again := e.api("/payments/"+psp+"/cancels", `{"reference":"cancel-1"}`, 200, "Idempotency-Key", "cancel-key-1")
		if first["pspReference"] == nil || first["pspReference"] != again["pspReference"] || e.sim.Requests("cancels") != 1 {
			t.Errorf("replay: %v then %v, %d upstream cancels", first, again, e.sim.Requests("cancels"))
		}
		e.settle()
		if v := e.payment(psp).View(); v.State != payments.StateCancelled || v.Capturable != 0 {
			t.Errorf("record: %+v", v)
		}
		if p, _ := e.sim.Payment(psp); p.State != simulator.StateCancelled {
			t.Errorf("the platform: %s", p.State)
		}
		if codes := e.hooks.codesOf(t, psp); codes != "AUTHORISATION,CANCELLATION" {
			t.Errorf("webhooks %v", codes)
		}

		captured := e.payCaptured("")
		if out := e.api("/payments/"+captured+"/cancels", `{}`, 400); out["errorCode"] != "yp_2002" {
			t.Errorf("cancel of a captured payment: %v", out)
		}

		multiKey := e.seedMulti()
		rest := e.payAs(multiKey, "site_multi", 1000, "", "")
		e.settle()
		e.callAs(multiKey, "POST", "/v1/ecom/site_multi/payments/"+rest+"/captures", `{"amount":{"value":400,"currency":"EUR"}}`, 200)
		e.callAs(multiKey, "POST", "/v1/ecom/site_multi/payments/"+rest+"/cancels", `{}`, 200)
		e.settle()
		if v := e.payment(rest).View(); v.State != payments.StateCaptured || v.Captured != 400 || v.Capturable != 0 || v.Refundable != 400 {
			t.Errorf("the remainder cancelled: %+v", v)
		}
		e.callAs(multiKey, "POST", "/v1/ecom/site_multi/payments/"+rest+"/refunds", `{"amount":{"value":400,"currency":"EUR"}}`, 200)
		e.settle()
		if v := e.payment(rest).View(); v.State != payments.StateRefunded || v.Refunded != 400 {
			t.Errorf("after the refund: %+v", v)
		}

		p := &provision.Provisioner{Store: e.a.Stores.Tenants, Env: tenant.EnvTest, Clock: e.clk}
		_, capturesOnly, err := p.CreateAPIKey(e.ctx, provision.KeySpec{MerchantID: e2eMerchant, Permissions: []tenant.Permission{tenant.PermCaptures}})
		if err != nil {
			t.Fatal(err)
		}
		other := e.pay(1000, "")
		if out := e.callAs(capturesOnly, "POST", "/v1/ecom/"+e2eSite+"/payments/"+other+"/cancels", `{}`, 403); out["errorCode"] != "yp_1002" {
			t.Errorf("a key without reversals: %v", out)
		}
	})
}
