package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

func TestAuthorisationNotificationContent(t *testing.T) {
	e := newEnv(t)
	r := e.pay(t, 1234, "Jane Doe")
	refused := e.pay(t, 99, "NOT_ENOUGH_BALANCE")
	e.flush(t)

	e.rec.mu.Lock()
	raw := bytes.Clone(e.rec.bodies[0])
	e.rec.mu.Unlock()
	var generic map[string]any
	must(t, json.Unmarshal(raw, &generic))
	if generic["live"] != "false" {
		t.Fatalf("live = %#v (must be the string \"false\")", generic["live"])
	}
	item := generic["notificationItems"].([]any)[0].(map[string]any)["NotificationRequestItem"].(map[string]any)
	if item["success"] != "true" {
		t.Fatalf("success = %#v (must be a string)", item["success"])
	}

	items := e.rec.items(t)
	if len(items) != 2 {
		t.Fatalf("items = %d", len(items))
	}
	ok, ko := items[0], items[1]
	want := upstream.NotificationRequestItem{
		Amount: eur(1234), EventCode: "AUTHORISATION", EventDate: testStart.Format(time.RFC3339),
		MerchantAccountCode: testMerchant, MerchantReference: "order-1", PaymentMethod: "visa",
		PSPReference: r.PSPReference, Success: "true",
	}
	if ok.Amount != want.Amount || ok.EventCode != want.EventCode || ok.EventDate != want.EventDate || ok.MerchantAccountCode != want.MerchantAccountCode ||
		ok.MerchantReference != want.MerchantReference || ok.PaymentMethod != want.PaymentMethod || ok.PSPReference != want.PSPReference ||
		ok.Success != want.Success || ok.OriginalReference != "" {
		t.Fatalf("item = %+v", ok)
	}
	if ok.AdditionalData["metadata.siteId"] != "site-1" || ok.AdditionalData["metadata.merchantId"] != "m-1" ||
		ok.AdditionalData["cardSummary"] != "1111" || ok.AdditionalData["expiryDate"] != "03/2030" ||
		ok.AdditionalData["cardHolderName"] != "" || ok.Reason == "" {
		t.Fatalf("additionalData = %v reason = %q", ok.AdditionalData, ok.Reason)
	}
	if len(ok.Operations) != 3 {
		t.Fatalf("operations = %v", ok.Operations)
	}
	if ko.Success != "false" || ko.Reason != "Not enough balance" || ko.PSPReference != refused.PSPReference || len(ko.Operations) != 0 {
		t.Fatalf("refused item = %+v", ko)
	}
	for _, it := range items {
		if !upstream.VerifyItem(testHMACKey, it) {
			t.Fatalf("HMAC does not verify: %+v", it)
		}
	}
	if got := e.sim.Notifications(); len(got) != 2 || got[0].PSPReference != r.PSPReference {
		t.Fatalf("Notifications() = %+v", got)
	}
	st := e.sim.NotificationStats()
	if st.Emitted != 2 || st.Sent != 2 || st.Pending != 0 || st.Dropped != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestUnsignedWithoutKey(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HMACKeyHex = ""; o.Live = true })
	e.pay(t, 1, "")
	e.flush(t)
	e.rec.mu.Lock()
	body := string(e.rec.bodies[0])
	e.rec.mu.Unlock()
	if bytes.Contains([]byte(body), []byte("hmacSignature")) || !bytes.Contains([]byte(body), []byte(`"live":"true"`)) {
		t.Fatalf("body = %s", body)
	}
}

func TestBadHMACKeyRejected(t *testing.T) {
	if _, err := New(Options{HMACKeyHex: "not-hex"}); err == nil {
		t.Fatal("bad HMAC key accepted")
	}
	if _, err := New(Options{BasePath: "/"}); err == nil {
		t.Fatal("empty base path accepted")
	}
}

// Tokenisation: a zero-amount session with storePaymentMethod stores the
// card; the token is announced in the AUTHORISATION notification, listed by
// /paymentMethods, charged merchant-initiated, and deleted.
func TestTokenisationLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	store := true
	sess, err := e.client.CreateSession(ctx, upstream.SessionRequest{
		MerchantAccount: testMerchant, Amount: eur(0), Reference: "tok-1", ReturnURL: testReturn,
		ShopperReference: "shopper-42", StorePaymentMethod: &store, RecurringProcessingModel: "UnscheduledCardOnFile",
		ShopperInteraction: "Ecommerce", Metadata: map[string]string{"siteId": "site-9"},
	}, "sess-key")
	must(t, err)
	res, err := e.sim.PaySession(ctx, sess.ID, SessionPayment{CardNumber: "5555555555554444", HolderName: "Ann Shopper"})
	if err != nil || res.ResultCode != "Authorised" || res.StoredPaymentMethodID == "" {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	e.flush(t)
	items := e.rec.items(t)
	if len(items) != 1 {
		t.Fatalf("items = %v", eventCodes(items))
	}
	it := items[0]
	ad := it.AdditionalData
	if it.Amount.Value != 0 || it.MerchantReference != "tok-1" || ad["tokenization.storedPaymentMethodId"] != res.StoredPaymentMethodID ||
		ad["recurring.recurringDetailReference"] != res.StoredPaymentMethodID || ad["tokenization.shopperReference"] != "shopper-42" ||
		ad["tokenization.store.operationType"] != "created" || ad["checkoutSessionId"] != sess.ID || ad["metadata.siteId"] != "site-9" ||
		ad["recurringProcessingModel"] != "UnscheduledCardOnFile" || !upstream.VerifyItem(testHMACKey, it) {
		t.Fatalf("item = %+v", it)
	}

	pm, err := e.client.PaymentMethods(ctx, upstream.PaymentMethodsRequest{MerchantAccount: testMerchant, ShopperReference: "shopper-42"}, "")
	if err != nil || len(pm.StoredPaymentMethods) != 1 {
		t.Fatalf("stored = %s, err = %v", pm.StoredPaymentMethods, err)
	}
	var sm map[string]any
	json.Unmarshal(pm.StoredPaymentMethods[0], &sm)
	if sm["id"] != res.StoredPaymentMethodID || sm["lastFour"] != "4444" || sm["brand"] != "mc" || sm["type"] != "scheme" {
		t.Fatalf("stored method = %v", sm)
	}

	mit := upstream.PaymentRequest{
		MerchantAccount: testMerchant, Amount: eur(15000), Reference: "noshow-1", ReturnURL: testReturn,
		ShopperInteraction: "ContAuth", RecurringProcessingModel: "UnscheduledCardOnFile", IndustryUsage: "noShow",
		ShopperReference: "shopper-42",
		PaymentMethod:    json.RawMessage(`{"type":"scheme","storedPaymentMethodId":"` + res.StoredPaymentMethodID + `"}`),
	}
	charge, err := e.client.Payments(ctx, mit, "mit-1")
	if err != nil || charge.ResultCode != "Authorised" || charge.PaymentMethod.Brand != "mc" {
		t.Fatalf("charge = %+v, err = %v", charge, err)
	}
	var sent map[string]any
	p, _ := e.sim.Payment(charge.PSPReference)
	json.Unmarshal(p.Request, &sent)
	if sent["industryUsage"] != "noShow" || p.ShopperInteraction != "ContAuth" {
		t.Fatalf("request = %s", p.Request)
	}
	// Another shopper cannot use the token.
	mit.ShopperReference = "shopper-43"
	if _, err := e.client.Payments(ctx, mit, ""); apiErr(t, err).ErrorCode != "800" {
		t.Fatalf("foreign token: %v", err)
	}
	mit.ShopperReference = "shopper-42"

	del := upstream.DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: res.StoredPaymentMethodID, MerchantAccount: testMerchant, ShopperReference: "shopper-42"}
	must(t, e.client.DeleteStoredPaymentMethod(ctx, del))
	if ids := e.sim.StoredPaymentMethods(testMerchant, "shopper-42"); len(ids) != 0 {
		t.Fatalf("token not deleted: %v", ids)
	}
	if err := e.client.DeleteStoredPaymentMethod(ctx, del); apiErr(t, err).ErrorCode != "800" {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := e.client.Payments(ctx, mit, ""); apiErr(t, err).ErrorCode != "800" {
		t.Fatalf("deleted token charged: %v", err)
	}
}

func TestStoringTheSameCardTwice(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := paymentReq(100, cardMethod("4111111111111111", "737", ""))
	store := json.RawMessage(`true`)
	req.ShopperReference, req.RecurringProcessingModel = "shopper-1", "CardOnFile"
	req.Extra = map[string]json.RawMessage{"storePaymentMethod": store}
	r1, err := e.client.Payments(ctx, req, "")
	must(t, err)
	r2, err := e.client.Payments(ctx, req, "")
	must(t, err)
	id := r1.AdditionalData["tokenization.storedPaymentMethodId"]
	if id == "" || r2.AdditionalData["tokenization.storedPaymentMethodId"] != id ||
		r1.AdditionalData["tokenization.store.operationType"] != "created" || r2.AdditionalData["tokenization.store.operationType"] != "alreadyExisting" {
		t.Fatalf("r1 = %v\nr2 = %v", r1.AdditionalData, r2.AdditionalData)
	}
}

// The pass-through fields of the client reach the simulator unchanged.
func TestExtraFieldsArrive(t *testing.T) {
	e := newEnv(t)
	req := paymentReq(100, cardMethod("4111111111111111", "737", ""))
	req.Extra = map[string]json.RawMessage{
		"browserInfo": json.RawMessage(`{"userAgent":"UA","acceptHeader":"*/*"}`),
		"origin":      json.RawMessage(`"https://shop.example"`),
	}
	r, err := e.client.Payments(context.Background(), req, "")
	must(t, err)
	p, _ := e.sim.Payment(r.PSPReference)
	var m map[string]json.RawMessage
	json.Unmarshal(p.Request, &m)
	if string(m["origin"]) != `"https://shop.example"` || string(m["browserInfo"]) != `{"userAgent":"UA","acceptHeader":"*/*"}` {
		t.Fatalf("request = %s", p.Request)
	}
}

func TestDeterministicReferences(t *testing.T) {
	seed := [32]byte{9}
	var refs [2]string
	for i := range refs {
		e := newEnv(t, func(o *Options) { o.Rand = rand.NewChaCha8(seed) })
		refs[i] = e.pay(t, 100, "").PSPReference
	}
	if refs[0] != refs[1] || len(refs[0]) != 16 {
		t.Fatalf("references = %v", refs)
	}
}
