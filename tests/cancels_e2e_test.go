package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
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
		post := func(key, site, path, body, idem string, want int) map[string]any {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, e.base+"/v1/ecom/"+site+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			if idem != "" {
				req.Header.Set("Idempotency-Key", idem)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != want {
				t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, raw, want)
			}
			var out map[string]any
			_ = json.Unmarshal(raw, &out)
			return out
		}

		psp := e.pay(1000, "")
		e.settle()
		first := post(e.key, e2eSite, "/payments/"+psp+"/cancels", `{"reference":"cancel-1"}`, "cancel-key-1", 200)
		again := post(e.key, e2eSite, "/payments/"+psp+"/cancels", `{"reference":"cancel-1"}`, "cancel-key-1", 200)
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
		var codes []string
		for _, r := range e.hooks.requests() {
			if it := r.item(t); it["originalReference"] == psp || it["pspReference"] == psp {
				codes = append(codes, it["eventCode"].(string))
			}
		}
		if strings.Join(codes, ",") != "AUTHORISATION,CANCELLATION" {
			t.Errorf("webhooks %v", codes)
		}

		captured := e.pay(1000, "")
		e.settle()
		e.api("/payments/"+captured+"/captures", `{"amount":{"value":1000,"currency":"EUR"}}`, 200)
		e.settle()
		if out := e.api("/payments/"+captured+"/cancels", `{}`, 400); out["errorCode"] != "yp_2002" {
			t.Errorf("cancel of a captured payment: %v", out)
		}

		multiKey, _ := e.seedMerchant(tenant.Merchant{ID: "m_multi", Name: "Multi Shop", Country: "NL", Active: true,
			CaptureMode: tenant.CaptureManual, MultiplePartialCaptures: true, Ecommerce: true, UpstreamAccount: "MultiShopECOM",
			ClientKey: "test_MULTICLIENT", SplitAccount: "BA_multi"}, "site_multi", "sub_multi", newHookReceiver(t))
		rest := e.payAs(multiKey, "site_multi", 1000, "", "")
		e.settle()
		post(multiKey, "site_multi", "/payments/"+rest+"/captures", `{"amount":{"value":400,"currency":"EUR"}}`, "", 200)
		post(multiKey, "site_multi", "/payments/"+rest+"/cancels", `{}`, "", 200)
		e.settle()
		if v := e.payment(rest).View(); v.State != payments.StateCaptured || v.Captured != 400 || v.Capturable != 0 || v.Refundable != 400 {
			t.Errorf("the remainder cancelled: %+v", v)
		}
		post(multiKey, "site_multi", "/payments/"+rest+"/refunds", `{"amount":{"value":400,"currency":"EUR"}}`, "", 200)
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
		if out := post(capturesOnly, e2eSite, "/payments/"+other+"/cancels", `{}`, "", 403); out["errorCode"] != "yp_1002" {
			t.Errorf("a key without reversals: %v", out)
		}
	})
}
