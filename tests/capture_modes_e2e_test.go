package tests

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// TestCaptureModesE2E (issue 44 item 2): every payment states the
// merchant's capture mode, so the simulator, which decides from the
// request alone (never the service's configuration), agrees with the
// record on both stores: a manual merchant's payment carries
// additionalData.manualCapture "true" and stays Authorised; an auto
// merchant's carries captureDelayHours 0 and is Captured. A request that
// states nothing is captured at once by the simulator (the platform's
// default), and the merchant cannot send either field.
func TestCaptureModesE2E(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		autoKey, _ := e.seedMerchant(tenant.Merchant{ID: "m_auto", Name: "Auto Shop", Country: "NL", Active: true,
			CaptureMode: tenant.CaptureAuto, Ecommerce: true, UpstreamAccount: "AutoShopECOM", ClientKey: "test_AUTOCLIENT",
			SplitAccount: "BA_auto"}, "site_auto", "sub_auto", newHookReceiver(t))
		for _, tc := range []struct {
			name, key, site string
			manual          string
			delay           *int
			sim             string
			state           payments.State
		}{
			{"manual", e.key, e2eSite, "true", nil, "Authorised", payments.StateAuthorised},
			{"auto", autoKey, "site_auto", "", new(int), "Captured", payments.StateCaptured},
		} {
			psp := e.payAs(tc.key, tc.site, 1000, "", "")
			e.settle()
			p, ok := e.sim.Payment(psp)
			if !ok {
				t.Fatalf("%s: the simulator has no payment %s", tc.name, psp)
			}
			var sent struct {
				AdditionalData    map[string]string `json:"additionalData"`
				CaptureDelayHours *int              `json:"captureDelayHours"`
			}
			decodeJSON(t, p.Request, &sent)
			if sent.AdditionalData[upstream.AdditionalManualCapture] != tc.manual || (sent.CaptureDelayHours == nil) != (tc.delay == nil) ||
				(sent.CaptureDelayHours != nil && *sent.CaptureDelayHours != 0) {
				t.Errorf("%s: sent %s", tc.name, p.Request)
			}
			if v := e.payment(psp).View(); p.State != tc.sim || v.State != tc.state {
				t.Errorf("%s: simulator %s, record %s", tc.name, p.State, v.State)
			}
		}

		// Straight to the simulator, without the field: its default.
		c := upstream.New(upstream.Config{BaseURL: e.a.Config.UpstreamURL, APIKey: e2eSimKey})
		r, err := c.Payments(context.Background(), upstream.PaymentRequest{MerchantAccount: e2eAccount,
			Amount: money.Amount{Value: 1000, Currency: "EUR"}, Reference: "no-mode", ReturnURL: "https://shop.example/r",
			PaymentMethod: json.RawMessage(e2eCard)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := e.sim.Payment(r.PSPReference); p.State != "Captured" {
			t.Errorf("a request stating no capture mode: %s, want Captured (the platform's default)", p.State)
		}

		for _, extra := range []string{`"captureDelayHours":0,`, `"additionalData":{"manualCapture":"false"},`} {
			out := e.api("/payments", `{`+extra+`"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","paymentMethod":`+e2eCard+`}`, 400)
			if out["errorCode"] != "yp_2002" {
				t.Errorf("%s: %v", extra, out)
			}
		}
	})
}
