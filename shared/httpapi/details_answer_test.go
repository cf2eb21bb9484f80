package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// With the platform's published answers (no pspReference beside an
// action, a details answer of resultCode and pspReference only), a
// challenge's bare details name no pending record: the payment is
// recorded from the answer before it is returned, and a retry replays it
// (details naming the payment's reference start it from its pending
// record, read while the platform answers). A details answer naming a
// payment another site owns gets 404 yp_3006, records nothing and stores
// no answer — with an Idempotency-Key (a retry runs again and is refused
// again, never replayed as the payment's result) or without one. On both
// stores.
func TestBareDetailsAreRecordedBeforeTheirAnswer(t *testing.T) {
	onBothStores(t, func(t *testing.T, dyn bool) {
		e := testenv.NewWith(t, testenv.Options{Dynamo: dyn, Simulator: func(o *simulator.Options) { o.PublishedShapes = true }})
		ctx := context.Background()
		path := "/v1/ecom/" + testenv.SiteA + "/payments/details"
		n := 0
		challenge := func() (string, string) {
			t.Helper()
			n++
			return challengePayment(t, e, fmt.Sprintf("bare-%d", n))
		}
		// foreign records psp as a payment of another site of the merchant.
		foreign := func(psp string) payments.Head {
			t.Helper()
			h := payments.Head{PSPReference: psp, MerchantID: testenv.MerchantA, SiteID: testenv.SiteAAdvanced, Source: payments.SourceAdvanced,
				CreatedAt: e.Clock.Now(), UpdatedAt: e.Clock.Now(), Version: 1}
			if err := e.Store.Write(ctx, payments.Write{PSP: psp, Put: &h}); err != nil {
				t.Fatal(err)
			}
			return h
		}
		refused := func(r testenv.Response, what string) {
			t.Helper()
			if r.Status != 404 || r.JSON(t)["errorCode"] != "yp_3006" || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: %d %v %s, want 404 yp_3006, not replayed", what, r.Status, r.Header, r.Body)
			}
		}
		unchanged := func(psp string, want payments.Head) {
			t.Helper()
			h, err := e.Store.GetPayment(ctx, psp)
			if err != nil || h.Version != want.Version || h.SiteID != want.SiteID || h.Auth.ResultCode != "" {
				t.Fatalf("another site's payment after the refused details: %+v %v", h, err)
			}
		}

		// This site's payment: recorded with the answer, which a retry replays.
		psp, body := challenge()
		first := e.Do("POST", path, "A", body, "Idempotency-Key", "bare-own")
		if first.Status != 200 || first.JSON(t)["pspReference"] != psp || first.JSON(t)["resultCode"] != "Authorised" {
			t.Fatalf("details: %d %s", first.Status, first.Body)
		}
		h, err := e.Store.GetPayment(ctx, psp)
		if err != nil || h.SiteID != testenv.SiteA || h.AuthStatus() != payments.StateAuthorised {
			t.Fatalf("record after details: %+v %v", h, err)
		}
		again := e.Do("POST", path, "A", body, "Idempotency-Key", "bare-own")
		if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Fatalf("retry: %d %v %s, want the first answer replayed", again.Status, again.Header, again.Body)
		}

		// Details naming the payment's reference: the pending record,
		// read while the platform answers, gives the record what the
		// answer does not carry (amount, reference); a retry replays
		// the answer.
		psp, body = challenge()
		named := strings.Replace(body, `{"details":`, fmt.Sprintf(`{"reference":"bare-%d","details":`, n), 1)
		first = e.Do("POST", path, "A", named, "Idempotency-Key", "bare-named")
		if first.Status != 200 || first.JSON(t)["pspReference"] != psp {
			t.Fatalf("details naming the reference: %d %s", first.Status, first.Body)
		}
		if h, err := e.Store.GetPayment(ctx, psp); err != nil || h.Reference != fmt.Sprintf("bare-%d", n) || h.Amount.Value != 1500 || h.SiteID != testenv.SiteA {
			t.Fatalf("record after details naming the reference: %+v %v", h, err)
		}
		if again := e.Do("POST", path, "A", named, "Idempotency-Key", "bare-named"); again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Fatalf("retry: %d %v %s, want the first answer replayed", again.Status, again.Header, again.Body)
		}

		// Another site's payment, with an Idempotency-Key: refused, and
		// refused again on a retry (the upstream replays its answer).
		psp, body = challenge()
		was := foreign(psp)
		refused(e.Do("POST", path, "A", body, "Idempotency-Key", "bare-foreign"), "details of another site's payment")
		refused(e.Do("POST", path, "A", body, "Idempotency-Key", "bare-foreign"), "its retry")
		unchanged(psp, was)

		// And without an Idempotency-Key.
		psp, body = challenge()
		was = foreign(psp)
		refused(e.Do("POST", path, "A", body), "details of another site's payment without a key")
		unchanged(psp, was)
	})
}

// challengePayment starts a 3-D Secure payment of 1500 EUR with reference
// ref on SiteA and returns its pspReference (the simulator's) and its
// details request.
func challengePayment(t *testing.T, e *testenv.Env, ref string) (string, string) {
	t.Helper()
	body := fmt.Sprintf(`{"amount":{"value":1500,"currency":"EUR"},"reference":%q,"returnUrl":"https://shop.example/r",`+
		`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_5454545454545454","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737","holderName":"Jo"}}`, ref)
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", body)
	out := r.JSON(t)
	if r.Status != 200 || out["resultCode"] != "ChallengeShopper" || out["pspReference"] != nil {
		t.Fatalf("challenge payment: %d %s", r.Status, r.Body)
	}
	action, _ := json.Marshal(out["action"])
	details, err := simulator.DetailsFor(action, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range e.Sim.Payments() {
		if p.Reference == ref {
			return p.PSPReference, `{"details":` + string(details) + `}`
		}
	}
	t.Fatalf("the simulator has no payment %s", ref)
	return "", ""
}
