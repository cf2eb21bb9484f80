package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/upstream/upstreamapi"
)

// The minimal-answers suite: the service against an upstream that answers
// exactly like the platform's published examples — no pspReference (nor
// amount or reference) on an answer with an action, /payments/details
// answers with only resultCode and pspReference, modification notifications
// without metadata — with web 3-D Secure 2 and the platform's rules. Every
// flow ends with a correct payment record and the right merchant webhooks,
// and every message the simulator exchanges is valid against the
// published documents.

type minimalEnv struct {
	*whEnv
	rec *upstreamapi.Recorder
	n   int
}

func newMinimalEnv(t *testing.T) *minimalEnv {
	v := upstreamValidator(t)
	rec := upstreamapi.NewRecorder()
	e := newWHEnv(t, whOptions{
		allowLocal: true,
		sim:        simulator.Options{PublishedShapes: true, WebThreeDS2: true, PlatformRules: true},
		simHandler: func(h http.Handler) http.Handler { return v.Handler(h, rec) },
		onNotify:   func(body []byte) { rec.CheckNotification(v, body) },
	})
	m := &minimalEnv{whEnv: e, rec: rec}
	t.Cleanup(func() {
		for _, vio := range rec.Violations() {
			t.Errorf("upstream document violation: %s", vio)
		}
	})
	return m
}

// start sends a payment for 10.00 EUR with a card number (extra: more
// top-level fields) and returns its reference and answer.
func (m *minimalEnv) start(number, extra string) (string, map[string]any) {
	m.t.Helper()
	m.n++
	ref := fmt.Sprintf("min-%02d", m.n)
	pm := strings.Replace(e2eCard, "4111111111111111", number, 1)
	if strings.HasPrefix(number, "{") {
		pm = number
	}
	body := fmt.Sprintf(`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":%q,"paymentMethod":%s%s}`, ref, pm, extra)
	out := m.api("/payments", body, 200)
	if out["merchantReference"] != ref {
		m.t.Fatalf("payment answer without its reference: %v", out)
	}
	return ref, out
}

// details completes the action of an answer (successfully) and returns the
// next answer; withRef sends the payment's reference along.
func (m *minimalEnv) details(out map[string]any, ref string, withRef bool) map[string]any {
	m.t.Helper()
	action, _ := json.Marshal(out["action"])
	d, err := simulator.DetailsFor(action, true)
	if err != nil {
		m.t.Fatalf("details for %s: %v", action, err)
	}
	body := map[string]any{"details": json.RawMessage(d)}
	if pd, _ := out["action"].(map[string]any)["paymentData"].(string); pd != "" {
		body["paymentData"] = pd
	}
	if withRef {
		body["reference"] = ref
	}
	raw, _ := json.Marshal(body)
	return m.api("/payments/details", string(raw), 200)
}

// authorise starts a payment whose answers, each without pspReference,
// are the steps (result codes) given, completes each action with details
// (carrying the reference when withRef), and returns the reference and the
// pspReference of the final Authorised answer.
func (m *minimalEnv) authorise(number, extra string, withRef bool, steps ...string) (string, string) {
	m.t.Helper()
	ref, out := m.start(number, extra)
	for _, step := range steps {
		m.wantAnswer(out, step, false)
		out = m.details(out, ref, withRef)
	}
	m.wantAnswer(out, "Authorised", true)
	return ref, out["pspReference"].(string)
}

func (m *minimalEnv) wantAnswer(out map[string]any, resultCode string, withPSP bool) {
	m.t.Helper()
	_, hasPSP := out["pspReference"]
	if out["resultCode"] != resultCode || hasPSP != withPSP {
		m.t.Fatalf("answer %v, want %s (pspReference: %v)", out, resultCode, withPSP)
	}
}

// check compares a payment's ledger with what the request knew: its head,
// and the state and amounts of its fold, nothing left in flight.
func (m *minimalEnv) check(psp, ref string, state payments.State, authorised, captured int64, preAuth bool) payments.Head {
	m.t.Helper()
	p := m.payment(psp)
	v := p.View()
	wantType := ""
	if preAuth {
		wantType = payments.AuthorisationPreAuth
	}
	t := p.Totals
	if p.MerchantID != e2eMerchant || p.SiteID != e2eSite || p.Reference != ref || p.Source != payments.SourceAdvanced ||
		p.Amount.Currency != "EUR" || v.State != state || v.Authorised != authorised || v.Captured != captured ||
		p.AuthorisationType != wantType || t.CapturesInFlight != 0 || t.RefundsInFlight != 0 || t.ReversalsInFlight != 0 || t.AmountUpdatesInFlight != 0 {
		m.t.Fatalf("record of %s: %+v (%+v)\nwant reference %s, state %s, authorised %d, captured %d, pre-auth %v", psp, p, v, ref, state, authorised, captured, preAuth)
	}
	pend, err := m.a.Stores.Payments.GetPayment(m.ctx, payments.PendingKey(e2eMerchant, e2eSite, ref))
	if err != nil || pend.BoundTo != psp {
		m.t.Fatalf("pending record of %s not bound to %s: %+v %v", ref, psp, pend, err)
	}
	return p
}

// webhooks returns the event codes the merchant received for a payment,
// checking each delivery names it and its reference.
func (m *minimalEnv) webhooks(psp, ref string) []string {
	m.t.Helper()
	var codes []string
	for _, r := range m.hooks.requests() {
		it := r.item(m.t)
		if it["pspReference"] != psp && it["originalReference"] != psp {
			continue
		}
		code := it["eventCode"].(string)
		if it["merchantReference"] != ref || it["success"] != "true" {
			m.t.Fatalf("%s webhook of %s: %v", code, psp, it)
		}
		if ad, _ := it["additionalData"].(map[string]any); ad["paymentSource"] != "advanced" {
			m.t.Fatalf("%s webhook of %s without paymentSource advanced: %v", code, psp, it)
		}
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

func (m *minimalEnv) wantWebhooks(psp, ref string, want ...string) {
	m.t.Helper()
	slices.Sort(want)
	if got := m.webhooks(psp, ref); !slices.Equal(got, want) {
		m.t.Fatalf("webhooks of %s: %v, want %v", psp, got, want)
	}
}

const nativeThreeDS = `,"authenticationData":{"threeDSRequestData":{"nativeThreeDS":"preferred"}}`
const preAuthData = `,"additionalData":{"authorisationType":"PreAuth"}`

func TestMinimalAnswers(t *testing.T) {
	// Details with the payment's reference, or with the component's state
	// data only (details and the action's paymentData).
	for _, withRef := range []bool{true, false} {
		t.Run(fmt.Sprintf("3DS2 fingerprint then challenge, capture right after details (reference sent: %v)", withRef), func(t *testing.T) {
			m := newMinimalEnv(t)
			ref, psp := m.authorise("5454545454545454", nativeThreeDS, withRef, "IdentifyShopper", "ChallengeShopper")
			m.check(psp, ref, payments.StateAuthorised, 1000, 0, false)
			// At once, before any notification.
			m.api("/payments/"+psp+"/captures", `{"amount":{"value":1000,"currency":"EUR"}}`, 200)
			m.settle()
			m.check(psp, ref, payments.StateCaptured, 1000, 1000, false)
			m.wantWebhooks(psp, ref, "AUTHORISATION", "CAPTURE")
		})
	}
	t.Run("frictionless, reversal right after details", func(t *testing.T) {
		m := newMinimalEnv(t)
		ref, psp := m.authorise("5201281505129736", nativeThreeDS, true, "IdentifyShopper")
		m.api("/payments/"+psp+"/reversals", `{}`, 200)
		m.settle()
		m.check(psp, ref, payments.StateCancelled, 1000, 0, false)
		m.wantWebhooks(psp, ref, "AUTHORISATION", "CANCELLATION")
	})
	t.Run("3DS redirect, amount update of a pre-authorisation right after details", func(t *testing.T) {
		m := newMinimalEnv(t)
		ref, psp := m.authorise("5454545454545454", preAuthData, true, "RedirectShopper")
		m.check(psp, ref, payments.StateAuthorised, 1000, 0, true)
		m.api("/payments/"+psp+"/amount-updates", `{"pspReference":"`+psp+`","amount":{"value":1500,"currency":"EUR"}}`, 200)
		m.settle()
		m.check(psp, ref, payments.StateAuthorised, 1500, 0, true)
		m.wantWebhooks(psp, ref, "AUTHORISATION", "AUTHORISATION_ADJUSTMENT")
		// The amount of a payment that is not a pre-authorisation is not updated.
		ref2, out := m.start("4111111111111111", "")
		psp2 := out["pspReference"].(string)
		r := m.api("/payments/"+psp2+"/amount-updates", `{"pspReference":"`+psp2+`","amount":{"value":1500,"currency":"EUR"}}`, 400)
		if r["errorCode"] != "yp_2002" {
			t.Fatalf("amount update of %s (%s): %v", psp2, ref2, r)
		}
	})
	t.Run("redirect method, details without reference: bound by the notification", func(t *testing.T) {
		m := newMinimalEnv(t)
		ref, out := m.start(`{"type":"ideal","issuer":"1121"}`, "")
		m.wantAnswer(out, "RedirectShopper", false)
		out = m.details(out, ref, false) // exactly the published request: only redirectResult
		m.wantAnswer(out, "Authorised", true)
		psp := out["pspReference"].(string)
		m.settle()
		m.check(psp, ref, payments.StateAuthorised, 1000, 0, false)
		m.api("/payments/"+psp+"/captures", `{"amount":{"value":400,"currency":"EUR"}}`, 200)
		m.settle()
		m.check(psp, ref, payments.StateCaptured, 1000, 400, false) // one capture: the rest released
		m.wantWebhooks(psp, ref, "AUTHORISATION", "CAPTURE")
	})
	t.Run("stored card: stored through 3DS2, then charged", func(t *testing.T) {
		m := newMinimalEnv(t)
		const shopper = `,"shopperReference":"shopper-min","recurringProcessingModel":"CardOnFile","storePaymentMethod":true`
		ref, psp := m.authorise("5454545454545454", nativeThreeDS+shopper, true, "IdentifyShopper", "ChallengeShopper")
		p := m.check(psp, ref, payments.StateAuthorised, 1000, 0, false)
		if p.ShopperReference != "shopper-min" || !p.StorePaymentMethod {
			t.Fatalf("storage intent not recorded: %+v", p)
		}
		m.settle()
		p = m.check(psp, ref, payments.StateAuthorised, 1000, 0, false)
		if p.StoredMethodID == "" {
			t.Fatalf("no stored payment method recorded: %+v", p)
		}
		m.wantWebhooks(psp, ref, "AUTHORISATION")

		stored := `{"type":"scheme","storedPaymentMethodId":"` + p.StoredMethodID + `"}`
		ref2, out := m.start(stored, `,"shopperReference":"shopper-min","recurringProcessingModel":"CardOnFile"`)
		if out["resultCode"] != "Authorised" {
			// A stored card may still be asked for 3-D Secure.
			for i := 0; out["action"] != nil && i < 3; i++ {
				out = m.details(out, ref2, true)
			}
		}
		m.wantAnswer(out, "Authorised", true)
		psp2 := out["pspReference"].(string)
		m.api("/payments/"+psp2+"/captures", `{"amount":{"value":1000,"currency":"EUR"}}`, 200)
		m.settle()
		p2 := m.payment(psp2)
		if p2.View().State != payments.StateCaptured || p2.StoredMethodID != p.StoredMethodID || p2.ShopperReference != "shopper-min" || p2.Reference != ref2 {
			t.Fatalf("stored-card charge record: %+v", p2)
		}
		m.wantWebhooks(psp2, ref2, "AUTHORISATION", "CAPTURE")
	})
}
