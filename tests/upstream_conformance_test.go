package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/upstream/upstreamapi"
)

// conformance is a simulator whose every request, answer and notification
// is validated against the platform's published documents, with an
// upstream client whose every request and answer is validated too.
type conformance struct {
	t      *testing.T
	sim    *simulator.Simulator
	srv    *httptest.Server
	client *upstream.Client
	rec    *upstreamapi.Recorder
	clock  *clock.Fake
}

const (
	confMerchant = "ConformanceECOM"
	confReturn   = "https://shop.example/return"
)

func newConformance(t *testing.T, opts simulator.Options) *conformance {
	t.Helper()
	v := upstreamValidator(t)
	rec := upstreamapi.NewRecorder()
	fc := clock.NewFake(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	opts.APIKey = "conformance-key"
	opts.HMACKeyHex = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	opts.Clock = fc
	opts.HangTimeout = 200 * time.Millisecond
	// The flows' requests state no capture mode and capture in parts: the
	// account holds payments for capture and takes multiple partial
	// captures (the platform's defaults are immediate capture and one).
	opts.ManualCaptureAccounts = []string{confMerchant}
	opts.MultiplePartialCaptureAccounts = []string{confMerchant}
	opts.Notifier = simulator.NotifierFunc(func(_ context.Context, body []byte) error {
		rec.CheckNotification(v, body)
		return nil
	})
	sim, err := simulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.Handler(sim, rec))
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	client := upstream.New(upstream.Config{
		BaseURL: srv.URL + "/v71", APIKey: "conformance-key", Timeout: 30 * time.Second, // a failure bound only
		HTTPClient: &http.Client{Transport: v.Transport(nil, rec)},
	})
	return &conformance{t: t, sim: sim, srv: srv, client: client, rec: rec, clock: fc}
}

// check fails the test on any violation and returns what was validated.
func (c *conformance) check() map[string]int {
	c.t.Helper()
	if err := c.sim.Flush(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	for _, v := range c.rec.Violations() {
		c.t.Errorf("violation: %s", v)
	}
	return c.rec.Checked()
}

func card(number, cvc, holder string) json.RawMessage {
	m := map[string]string{"type": "scheme", "encryptedCardNumber": "test_" + number, "encryptedExpiryMonth": "test_03",
		"encryptedExpiryYear": "test_2030", "encryptedSecurityCode": "test_" + cvc}
	if holder != "" {
		m["holderName"] = holder
	}
	b, _ := json.Marshal(m)
	return b
}

func eurAmount(v int64) money.Amount { return money.Amount{Value: v, Currency: "EUR"} }

func (c *conformance) pay(ref string, pm json.RawMessage, mutate ...func(*upstream.PaymentRequest)) (upstream.PaymentResponse, error) {
	req := upstream.PaymentRequest{
		MerchantAccount: confMerchant, Amount: eurAmount(1000), Reference: ref, ReturnURL: confReturn,
		CountryCode: "NL", Metadata: map[string]string{"merchantId": "m_conf", "siteId": "site_conf"}, PaymentMethod: pm,
	}
	for _, m := range mutate {
		m(&req)
	}
	return c.client.Payments(context.Background(), req, "key-"+ref)
}

// complete drives an action answer through /payments/details until the
// payment has a result, succeeding or failing every step.
func (c *conformance) complete(r upstream.PaymentResponse, success bool) upstream.PaymentResponse {
	c.t.Helper()
	for i := 0; r.Action != nil && i < 3; i++ {
		details, err := simulator.DetailsFor(r.Action, success)
		if err != nil {
			c.t.Fatalf("DetailsFor(%s): %v", r.Action, err)
		}
		var a struct {
			PaymentData string `json:"paymentData"`
		}
		_ = json.Unmarshal(r.Action, &a)
		r, err = c.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: details, PaymentData: a.PaymentData}, "")
		if err != nil {
			c.t.Fatalf("details: %v", err)
		}
	}
	if r.Action != nil {
		c.t.Fatalf("still an action after three steps: %s", r.Action)
	}
	return r
}

// The flow suite: every endpoint and every simulated outcome, validated
// against the published documents, with today's defaults and with every
// platform-like option on.
func TestUpstreamConformance(t *testing.T) {
	modes := map[string]simulator.Options{
		"defaults": {},
		"platform": {PublishedShapes: true, WebThreeDS2: true, PlatformRules: true, AsyncModificationFailures: true},
	}
	for name, opts := range modes {
		t.Run(name, func(t *testing.T) {
			c := newConformance(t, opts)
			runFlowSuite(t, c, opts)
			checked := c.check()
			for _, ep := range []string{
				"POST /v71/sessions", "POST /v71/paymentMethods", "POST /v71/payments", "POST /v71/payments/details",
			} {
				if checked["request "+ep] == 0 || checked["response "+ep] == 0 {
					t.Errorf("%s was not exercised (checked: %v)", ep, checked)
				}
			}
			for _, prefix := range []string{"/captures", "/reversals", "/amountUpdates", "/refunds", "DELETE /v71/storedPaymentMethods/"} {
				found := false
				for k := range checked {
					found = found || strings.HasPrefix(k, "response ") && strings.Contains(k, prefix)
				}
				if !found {
					t.Errorf("no answer of %s was validated", prefix)
				}
			}
			events := []string{"AUTHORISATION", "CAPTURE", "CAPTURE_FAILED", "CANCEL_OR_REFUND", "REFUND", "REFUND_FAILED", "AUTHORISATION_ADJUSTMENT", "OFFER_CLOSED"}
			for _, ev := range events {
				if checked["notification "+ev] == 0 {
					t.Errorf("no %s notification was validated", ev)
				}
			}
			if len(c.rec.Violations()) == 0 {
				total := 0
				for _, n := range checked {
					total += n
				}
				t.Logf("%d messages validated, no violation", total)
			}
		})
	}
}

func runFlowSuite(t *testing.T, c *conformance, opts simulator.Options) {
	ctx := context.Background()
	n := 0
	ref := func() string { n++; return fmt.Sprintf("conf-%03d", n) }

	// Sessions, embedded and hosted, paid by the simulated drop-in.
	for _, mode := range []string{"embedded", "hosted"} {
		s, err := c.client.CreateSession(ctx, upstream.SessionRequest{
			MerchantAccount: confMerchant, Amount: eurAmount(2500), Reference: ref(), ReturnURL: confReturn, CountryCode: "NL",
			Metadata: map[string]string{"siteId": "site_conf"}, ShopperReference: "shopper-conf", RecurringProcessingModel: "CardOnFile",
			StorePaymentMethodMode: "enabled", Mode: mode,
		}, "")
		if err != nil {
			t.Fatalf("session %s: %v", mode, err)
		}
		if _, err := c.sim.PaySession(ctx, s.ID, simulator.SessionPayment{}); err != nil {
			t.Fatalf("pay session: %v", err)
		}
	}
	// A session request the simulator refuses (error body validated).
	if _, err := c.client.CreateSession(ctx, upstream.SessionRequest{MerchantAccount: confMerchant, Amount: eurAmount(100), Reference: ref()}, ""); err == nil {
		t.Fatal("a session without returnUrl was accepted")
	}

	// Payment methods, with the stored card of the shopper.
	pms, err := c.client.PaymentMethods(ctx, upstream.PaymentMethodsRequest{MerchantAccount: confMerchant, Amount: &money.Amount{Value: 1000, Currency: "EUR"}, CountryCode: "NL", ShopperReference: "shopper-conf"}, "")
	if err != nil || len(pms.StoredPaymentMethods) == 0 {
		t.Fatalf("paymentMethods: %+v, %v", pms, err)
	}

	// Every test card, each action completed with success and with failure.
	for _, tc := range simulator.TestCards() {
		switch tc.Behaviour {
		case simulator.Fail500:
			if _, err := c.pay(ref(), card(tc.Number, tc.CVC, "")); err == nil {
				t.Fatalf("card %s: no error", tc.Number)
			}
			continue
		case simulator.Hang:
			continue // no answer to validate: the client gives up
		}
		for _, success := range []bool{true, false} {
			for _, native := range []bool{false, true} {
				r, err := c.pay(ref(), card(tc.Number, tc.CVC, ""), func(req *upstream.PaymentRequest) {
					if native {
						req.Extra = map[string]json.RawMessage{"authenticationData": json.RawMessage(`{"threeDSRequestData":{"nativeThreeDS":"preferred"}}`)}
					}
				})
				if err != nil {
					t.Fatalf("card %s: %v", tc.Number, err)
				}
				c.complete(r, success)
			}
		}
	}

	// Every holder-name outcome, and the same by RequestedTestAcquirerResponseCode.
	for _, o := range simulator.HolderNameOutcomes() {
		if o.Behaviour == simulator.Fail500 || o.Behaviour == simulator.Hang {
			continue
		}
		r, err := c.pay(ref(), card("4111111111111111", "737", o.HolderName))
		if err != nil || r.ResultCode != o.ResultCode {
			t.Fatalf("holder %s: %+v, %v", o.HolderName, r, err)
		}
		if o.AcquirerResponseCode != "" {
			r, err := c.pay(ref(), card("4111111111111111", "737", ""), func(req *upstream.PaymentRequest) {
				req.AdditionalData = map[string]string{"RequestedTestAcquirerResponseCode": o.AcquirerResponseCode}
			})
			if err != nil || r.ResultCode != o.ResultCode || r.RefusalReason != o.RefusalReason {
				t.Fatalf("code %s: %+v, %v", o.AcquirerResponseCode, r, err)
			}
		}
		if r.ResultCode == upstream.ResultReceived || r.ResultCode == upstream.ResultPending {
			if err := c.sim.ResolvePending(r.PSPReference, true); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Other methods: a redirect method and an immediate one.
	r, err := c.pay(ref(), json.RawMessage(`{"type":"ideal","issuer":"1121"}`))
	if err != nil {
		t.Fatal(err)
	}
	c.complete(r, true)
	if _, err := c.pay(ref(), json.RawMessage(`{"type":"applepay","applePayToken":"dG9rZW4="}`)); err != nil {
		t.Fatal(err)
	}

	// A stored card: store (with its model), list, charge, delete.
	stored, err := c.pay(ref(), card("5555555555554444", "737", ""), func(req *upstream.PaymentRequest) {
		req.ShopperReference, req.RecurringProcessingModel = "shopper-store", "CardOnFile"
		req.Extra = map[string]json.RawMessage{"storePaymentMethod": json.RawMessage(`true`)}
	})
	if err != nil || stored.ResultCode != upstream.ResultAuthorised {
		t.Fatalf("store: %+v, %v", stored, err)
	}
	ids := c.sim.StoredPaymentMethods(confMerchant, "shopper-store")
	if len(ids) != 1 {
		t.Fatalf("stored = %v", ids)
	}
	for _, interaction := range []string{"Ecommerce", "ContAuth"} {
		if _, err := c.pay(ref(), json.RawMessage(`{"type":"scheme","storedPaymentMethodId":"`+ids[0]+`"}`), func(req *upstream.PaymentRequest) {
			req.ShopperReference, req.ShopperInteraction, req.RecurringProcessingModel = "shopper-store", interaction, "CardOnFile"
		}); err != nil {
			t.Fatalf("stored %s: %v", interaction, err)
		}
	}
	if err := c.client.DeleteStoredPaymentMethod(ctx, upstream.DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: ids[0], MerchantAccount: confMerchant, ShopperReference: "shopper-store"}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.DeleteStoredPaymentMethod(ctx, upstream.DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: ids[0], MerchantAccount: confMerchant, ShopperReference: "shopper-store"}); err == nil {
		t.Fatal("deleting twice succeeded")
	}

	// Modifications: partial capture, capture, refund; cancel; amount update
	// of a pre-authorisation; failing capture and refund; refused ones.
	preAuth := func(req *upstream.PaymentRequest) {
		req.AdditionalData = map[string]string{"authorisationType": "PreAuth"}
	}
	mod := func(psp, holder string) {
		ctx := context.Background()
		if _, err := c.client.UpdateAmount(ctx, psp, upstream.AmountUpdateRequest{MerchantAccount: confMerchant, Amount: eurAmount(1200), Reference: ref(), IndustryUsage: "delayedCharge"}, ""); err != nil {
			t.Fatalf("amount update: %v", err)
		}
		// Without a reference (the published answer still has one).
		if _, err := c.client.UpdateAmount(ctx, psp, upstream.AmountUpdateRequest{MerchantAccount: confMerchant, Amount: eurAmount(1200)}, ""); err != nil {
			t.Fatalf("amount update without reference: %v", err)
		}
		if _, err := c.client.Capture(ctx, psp, upstream.CaptureRequest{MerchantAccount: confMerchant, Amount: eurAmount(200), Reference: ref()}, ""); err != nil {
			t.Fatalf("capture: %v", err)
		}
		if _, err := c.client.Capture(ctx, psp, upstream.CaptureRequest{MerchantAccount: confMerchant, Amount: eurAmount(1000), Reference: ref()}, ""); err != nil {
			t.Fatalf("capture: %v", err)
		}
		// Partial refunds (one with line items), one above what is left.
		// (Nothing is captured after "capture failed": refused then.)
		qty := upstream.LineItem{ID: "sku-1", Description: "Shoe", Quantity: 1}
		_, err1 := c.client.Refund(ctx, psp, upstream.RefundRequest{MerchantAccount: confMerchant, Amount: eurAmount(300), Reference: ref(), LineItems: []upstream.LineItem{qty}}, "")
		_, err2 := c.client.Refund(ctx, psp, upstream.RefundRequest{MerchantAccount: confMerchant, Amount: eurAmount(200), Reference: ref()}, "")
		if holder != "capture failed" && (err1 != nil || err2 != nil) {
			t.Fatalf("refunds: %v, %v", err1, err2)
		}
		_, _ = c.client.Refund(ctx, psp, upstream.RefundRequest{MerchantAccount: confMerchant, Amount: eurAmount(5000), Reference: ref()}, "")
		// A reversal after two partial captures: the platform says not to
		// (docs.adyen.com/online-payments/reversal); the simulator refuses it
		// unless a capture failed.
		_, _ = c.client.Reverse(ctx, psp, upstream.ReversalRequest{MerchantAccount: confMerchant, Reference: ref()}, "")
		// Refused now (synchronously, or by a failure notification).
		_, _ = c.client.Capture(ctx, psp, upstream.CaptureRequest{MerchantAccount: confMerchant, Amount: eurAmount(1), Reference: ref()}, "")
		_, _ = c.client.Reverse(ctx, psp, upstream.ReversalRequest{MerchantAccount: confMerchant, Reference: ref()}, "")
	}
	for _, holder := range []string{"", "capture failed", "refund failed"} {
		r, err := c.pay(ref(), card("4111111111111111", "737", holder), preAuth)
		if err != nil {
			t.Fatal(err)
		}
		mod(r.PSPReference, holder)
	}
	r, err = c.pay(ref(), card("4111111111111111", "737", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.Reverse(ctx, r.PSPReference, upstream.ReversalRequest{MerchantAccount: confMerchant, Reference: ref()}, ""); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	_, err = c.client.UpdateAmount(ctx, r.PSPReference, upstream.AmountUpdateRequest{MerchantAccount: confMerchant, Amount: eurAmount(10), Reference: ref()}, "")
	if opts.PlatformRules && err == nil {
		t.Fatal("an amount update of a payment that is not a pre-authorisation was accepted")
	}
	if _, err := c.client.Capture(ctx, "UNKNOWNPSPREF000", upstream.CaptureRequest{MerchantAccount: confMerchant, Amount: eurAmount(1)}, ""); err == nil {
		t.Fatal("capture of an unknown payment succeeded")
	}

	// Offers left open expire.
	if _, err := c.pay(ref(), card("4212345678901237", "737", "")); err != nil {
		t.Fatal(err)
	}
	c.clock.Advance(13 * time.Hour)
	if closed := c.sim.ExpireOffers(); len(closed) == 0 {
		t.Fatal("no offer closed")
	}

	// Every endpoint failing on demand (the 500 bodies are validated).
	for _, ep := range simulator.Endpoints {
		if err := c.sim.FailNext(ep, simulator.FailHTTP500); err != nil {
			t.Fatal(err)
		}
	}
	_, err1 := c.client.CreateSession(ctx, upstream.SessionRequest{MerchantAccount: confMerchant, Amount: eurAmount(1), Reference: ref(), ReturnURL: confReturn}, "")
	_, err2 := c.client.PaymentMethods(ctx, upstream.PaymentMethodsRequest{MerchantAccount: confMerchant}, "")
	_, err3 := c.pay(ref(), card("4111111111111111", "737", ""))
	_, err4 := c.client.PaymentDetails(ctx, upstream.DetailsRequest{Details: json.RawMessage(`{"redirectResult":"x"}`)}, "")
	_, err5 := c.client.Capture(ctx, "UNKNOWNPSPREF000", upstream.CaptureRequest{MerchantAccount: confMerchant, Amount: eurAmount(1)}, "")
	_, err6 := c.client.Reverse(ctx, "UNKNOWNPSPREF000", upstream.ReversalRequest{MerchantAccount: confMerchant}, "")
	_, err7 := c.client.UpdateAmount(ctx, "UNKNOWNPSPREF000", upstream.AmountUpdateRequest{MerchantAccount: confMerchant, Amount: eurAmount(1)}, "")
	_, err8 := c.client.Refund(ctx, "UNKNOWNPSPREF000", upstream.RefundRequest{MerchantAccount: confMerchant, Amount: eurAmount(1)}, "")
	err9 := c.client.DeleteStoredPaymentMethod(ctx, upstream.DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: "X", MerchantAccount: confMerchant, ShopperReference: "s"})
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9} {
		var ue *upstream.Error
		if !asUpstream(err, &ue) || ue.HTTPStatus != http.StatusInternalServerError {
			t.Errorf("%s: err = %v, want the injected 500", simulator.Endpoints[i], err)
		}
	}
}

func asUpstream(err error, target **upstream.Error) bool {
	ue, ok := err.(*upstream.Error)
	if !ok {
		return false
	}
	*target = ue
	return true
}

// A deliberately wrong request sent through the validating transport is
// caught (and so is a wrong answer through the validating handler).
func TestUpstreamConformanceCatchesWrongMessages(t *testing.T) {
	v := upstreamValidator(t)
	rec := upstreamapi.NewRecorder()
	wrongAnswer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resultCode":"Approved","pspReference":42}`))
	})
	srv := httptest.NewServer(v.Handler(wrongAnswer, rec))
	defer srv.Close()
	client := upstream.New(upstream.Config{BaseURL: srv.URL + "/v71", APIKey: "k", HTTPClient: &http.Client{Transport: v.Transport(nil, rec)}})
	_, _ = client.Payments(context.Background(), upstream.PaymentRequest{
		MerchantAccount: confMerchant, Amount: eurAmount(1000), Reference: "wrong", ReturnURL: confReturn,
		ShopperInteraction: "Telepathy", PaymentMethod: card("4111111111111111", "737", ""),
	}, "")
	kinds := map[string]bool{}
	for _, vio := range rec.Violations() {
		kinds[vio.Kind] = true
	}
	// The client's transport and the handler each see the request and the answer.
	if !kinds["request"] || !kinds["response"] {
		t.Fatalf("violations = %v, want the wrong request and the wrong answer caught", rec.Violations())
	}
	if !slices.ContainsFunc(rec.Violations(), func(v upstreamapi.Violation) bool {
		return v.Kind == "request" && strings.Contains(strings.Join(v.Errors, " "), "shopperInteraction")
	}) {
		t.Fatalf("the wrong shopperInteraction is not named: %v", rec.Violations())
	}
}
