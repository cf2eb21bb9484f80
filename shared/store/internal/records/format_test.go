package records

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

var (
	at      = time.Date(2026, 5, 4, 10, 0, 0, 123000000, time.UTC)
	success = true
	eur     = money.Amount{Value: 600, Currency: "EUR"}
)

// samples are records with every field set (and one with every optional
// field empty), and the JSON the adapters write for them (for payment
// records stored before ledgers, the JSON they wrote then): existing data
// keeps reading, new writes stay readable by the previous version, and a
// ledger's items keep their format.
var samples = []struct {
	name   string
	domain any
	golden string
}{
	// A payment record as stored before payments were ledgers: still read
	// (and converted, TestLegacyToLedger) until its first change.
	{"legacy payment", LegacyPayment{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", Source: "advanced",
		SessionID: "CS1", Amount: Amount{Value: 1000, Currency: "EUR"}, AuthorisedValue: 1000, CapturedValue: 600,
		RefundedValue: 100, State: "PartiallyCaptured", ResultCode: "Authorised", RefusalReason: "none",
		PaymentMethod: "visa", ShopperReference: "shopper-1", StoredMethodID: "SPM1", Reservations: map[string]int64{"op_x": 600},
		RefundReservations: map[string]int64{"REF1": 100},
		History: []Event{{At: at, Kind: "capture", Origin: "api", PSPReference: "CAP1", Amount: &Amount{Value: 600, Currency: "EUR"}, Success: &success, Detail: "received"},
			{At: at, Kind: "payment", Origin: "api"}},
		Version: 3, CreatedAt: at, UpdatedAt: at,
	},
		`{"pspReference":"PSP1","merchantId":"m_a","siteId":"site_a","reference":"order-1","source":"advanced","sessionId":"CS1","amount":{"value":1000,"currency":"EUR"},"authorisedValue":1000,"capturedValue":600,"refundedValue":100,"state":"PartiallyCaptured","resultCode":"Authorised","refusalReason":"none","paymentMethod":"visa","shopperReference":"shopper-1","storedPaymentMethodId":"SPM1","reservations":{"op_x":600},"refundReservations":{"REF1":100},"history":[{"at":"2026-05-04T10:00:00.123Z","kind":"capture","origin":"api","pspReference":"CAP1","amount":{"value":600,"currency":"EUR"},"success":true,"detail":"received"},{"at":"2026-05-04T10:00:00.123Z","kind":"payment","origin":"api"}],"version":3,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"legacy pending payment, pre-authorisation that stores the card", LegacyPayment{
		PSPReference: "pending_0123", MerchantID: "m_a", SiteID: "site_a", Reference: "order-2", Source: "advanced",
		Amount: Amount{Value: 600, Currency: "EUR"}, State: "IdentifyShopper", StorePayment: true, AuthType: payments.AuthorisationPreAuth,
		BoundTo: "PSP3", AmountUpdate: &InFlight{Op: "op_a", Since: at}, Version: 2, CreatedAt: at, UpdatedAt: at,
	},
		`{"pspReference":"pending_0123","merchantId":"m_a","siteId":"site_a","reference":"order-2","source":"advanced","amount":{"value":600,"currency":"EUR"},"authorisedValue":0,"capturedValue":0,"refundedValue":0,"state":"IdentifyShopper","storePaymentMethod":true,"authorisationType":"PreAuth","boundTo":"PSP3","amountUpdate":{"op":"op_a","since":"2026-05-04T10:00:00.123Z"},"history":null,"version":2,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"legacy payment, optional fields empty", LegacyPayment{PSPReference: "PSP2", Version: 1, CreatedAt: at, UpdatedAt: at},
		`{"pspReference":"PSP2","merchantId":"","siteId":"","source":"","amount":{"value":0,"currency":""},"authorisedValue":0,"capturedValue":0,"refundedValue":0,"state":"","history":null,"version":1,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"payment head", payments.Head{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", Source: payments.SourceSessions,
		SessionID: "CS1", Amount: money.Amount{Value: 1000, Currency: "EUR"}, ShopperReference: "shopper-1", StoredMethodID: "SPM1",
		StorePaymentMethod: true, AuthorisationType: payments.AuthorisationPreAuth, CaptureMode: tenant.CaptureManual,
		PaymentMethod: "visa", RefusalReason: "none", Auth: payments.Auth{ResultCode: "Authorised", Notified: &success, Expired: true},
		Authorised: 1200, AmountUpdates: []payments.AmountUpdate{{Ref: "ADJ1", Amount: 1200, From: 1000}, {Ref: "ADJ2", Amount: 1500, From: 1200, Failed: true}},
		Totals: payments.Totals{Captured: 1, CapturesInFlight: 2, Refunded: 3, RefundsInFlight: 4, Capturable: -5, Refundable: 6,
			Reversals: 7, ReversalsInFlight: 8, AmountUpdatesInFlight: 9},
		Seq: 4, CreatedAt: at, UpdatedAt: at, Version: 3,
	},
		`{"pspReference":"PSP1","merchantId":"m_a","siteId":"site_a","reference":"order-1","source":"sessions","sessionId":"CS1","amount":{"value":1000,"currency":"EUR"},"shopperReference":"shopper-1","storedPaymentMethodId":"SPM1","storePaymentMethod":true,"authorisationType":"PreAuth","captureMode":"manual","paymentMethod":"visa","refusalReason":"none","resultCode":"Authorised","authNotified":true,"expired":true,"authorised":1200,"amountUpdates":[{"ref":"ADJ1","amount":1200,"from":1000},{"ref":"ADJ2","amount":1500,"from":1200,"failed":true}],"totals":{"captured":1,"capturesInFlight":2,"refunded":3,"refundsInFlight":4,"capturable":-5,"refundable":6,"reversals":7,"reversalsInFlight":8,"amountUpdatesInFlight":9},"seq":4,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":3,"ledger":1}`},
	{"payment head, pending, bound", payments.Head{
		PSPReference: "pending_0123", MerchantID: "m_a", SiteID: "site_a", Reference: "order-2", Source: payments.SourceAdvanced,
		Amount: eur, Auth: payments.Auth{ResultCode: "IdentifyShopper"}, BoundTo: "PSP3", CreatedAt: at, UpdatedAt: at, Version: 2,
	},
		`{"pspReference":"pending_0123","merchantId":"m_a","siteId":"site_a","reference":"order-2","source":"advanced","amount":{"value":600,"currency":"EUR"},"resultCode":"IdentifyShopper","totals":{},"boundTo":"PSP3","createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":2,"ledger":1}`},
	{"payment head, optional fields empty", payments.Head{PSPReference: "PSP2", CreatedAt: at, UpdatedAt: at, Version: 1},
		`{"pspReference":"PSP2","merchantId":"","totals":{},"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":1,"ledger":1}`},
	{"entry", payments.Entry{
		Ref: "REF1", Kind: payments.OpRefund, Modification: "REF1", Covered: true, Version: 2,
		Requested: &payments.Request{Amount: eur, Reference: "rma-1", UpstreamKey: "k1", At: at, LineItems: []payments.LineItem{{
			ID: "l1", Description: "Shoe", Quantity: 2, AmountExcludingTax: ptr(250), AmountIncludingTax: ptr(300), TaxAmount: ptr(50),
			TaxPercentage: ptr(2000), ProductURL: "https://shop.example/p", ImageURL: "https://shop.example/i", ItemCategory: "shoes",
			SKU: "sku-1", Brand: "B", Color: "red", Size: "42", Manufacturer: "M", UPC: "012345678905"}}},
		Answered: &payments.Answer{Outcome: payments.Refused, Reason: "Not enough balance", At: at},
		Notices: []payments.Notice{{Code: "REFUND", Success: true, Amount: eur, Reason: "refund", Seq: 5, At: at},
			{Code: "REFUND_FAILED", Amount: eur, At: at}},
	},
		`{"ref":"REF1","kind":"refund","requested":{"amount":{"value":600,"currency":"EUR"},"reference":"rma-1","upstreamKey":"k1","lineItems":[{"id":"l1","description":"Shoe","quantity":2,"amountExcludingTax":250,"amountIncludingTax":300,"taxAmount":50,"taxPercentage":2000,"productUrl":"https://shop.example/p","imageUrl":"https://shop.example/i","itemCategory":"shoes","sku":"sku-1","brand":"B","color":"red","size":"42","manufacturer":"M","upc":"012345678905"}],"at":"2026-05-04T10:00:00.123Z"},"answered":{"outcome":"refused","reason":"Not enough balance","at":"2026-05-04T10:00:00.123Z"},"notices":[{"code":"REFUND","success":true,"amount":{"value":600,"currency":"EUR"},"reason":"refund","seq":5,"at":"2026-05-04T10:00:00.123Z"},{"code":"REFUND_FAILED","success":false,"amount":{"value":600,"currency":"EUR"},"at":"2026-05-04T10:00:00.123Z"}],"modification":"REF1","covered":true,"version":2}`},
	{"entry moved to its operation's pspReference", payments.Entry{Ref: "op_1", Kind: payments.OpCapture, MergedInto: "CAP1", Version: 2},
		`{"ref":"op_1","kind":"capture","mergedInto":"CAP1","version":2}`},
	{"entry, amount update", payments.Entry{Ref: "ADJ1", Kind: payments.OpAmountUpdate, Modification: "ADJ1", Version: 1,
		Requested: &payments.Request{Amount: eur, From: 1000, At: at}, Answered: &payments.Answer{Outcome: payments.Unknown, At: at}},
		`{"ref":"ADJ1","kind":"amount-update","requested":{"amount":{"value":600,"currency":"EUR"},"from":1000,"at":"2026-05-04T10:00:00.123Z"},"answered":{"outcome":"unknown","at":"2026-05-04T10:00:00.123Z"},"modification":"ADJ1","version":1}`},
	{"fact", payments.Fact{ID: "n#CAPTURE#CAP1#true", At: at, Kind: "CAPTURE", Origin: payments.OriginNotification,
		PSPReference: "CAP1", Amount: &eur, Success: &success, Detail: "capture"},
		`{"id":"n#CAPTURE#CAP1#true","at":"2026-05-04T10:00:00.123Z","kind":"CAPTURE","origin":"notification","pspReference":"CAP1","amount":{"value":600,"currency":"EUR"},"success":true,"detail":"capture"}`},
	{"fact, optional fields empty", payments.Fact{ID: "f1", At: at, Kind: "payment", Origin: payments.OriginAPI},
		`{"id":"f1","at":"2026-05-04T10:00:00.123Z","kind":"payment","origin":"api"}`},
	{"session", payments.Session{ID: "CS1", MerchantID: "m_a", SiteID: "site_a", Reference: "ses_1", Amount: eur,
		ShopperReference: "shopper-1", StorePaymentMethod: true, CreatedAt: at, ExpiresAt: at},
		`{"id":"CS1","merchantId":"m_a","siteId":"site_a","reference":"ses_1","amount":{"value":600,"currency":"EUR"},"shopperReference":"shopper-1","storePaymentMethod":true,"createdAt":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
	{"idempotency", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusCompleted, LeaseToken: "t",
		LeaseUntil: at, ExpiresAt: at, Response: &idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"a":1}`)}},
		`{"scope":"m_a","key":"k","fingerprint":"fp","status":"completed","leaseToken":"t","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z","response":{"status":200,"header":{"Content-Type":"application/json"},"body":"eyJhIjoxfQ=="}}`},
	{"idempotency in progress", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusInProgress, LeaseUntil: at, ExpiresAt: at},
		`{"scope":"m_a","key":"k","fingerprint":"fp","status":"in_progress","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
	{"merchant", tenant.Merchant{ID: "m_a", Name: "Acme", Country: "NL", Active: true, CaptureMode: tenant.CaptureManual, Ecommerce: true,
		UpstreamAccount: "AcmeECOM", ClientKey: "test_CK", SplitAccount: "BA_a", CommissionAccount: "BA_p", CommissionBps: 150, CommissionFixed: 10, CreatedAt: at},
		`{"id":"m_a","name":"Acme","country":"NL","active":true,"captureMode":"manual","ecommerce":true,"upstreamAccount":"AcmeECOM","clientKey":"test_CK","splitAccount":"BA_a","commissionAccount":"BA_p","commissionBps":150,"commissionFixed":10,"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"site", tenant.Site{ID: "site_a", MerchantID: "m_a", Name: "acme.example", Type: tenant.SiteEcommerce, Flows: []tenant.Flow{tenant.FlowSessions, tenant.FlowAdvanced}, CreatedAt: at},
		`{"id":"site_a","merchantId":"m_a","name":"acme.example","type":"ecommerce","flows":["sessions","advanced"],"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"api key", tenant.APIKey{ID: "key_1", Hash: "abc", Hint: "yp_test_…wxyz", Name: "dev", MerchantID: "m_a", Environment: tenant.EnvTest,
		Permissions: []tenant.Permission{tenant.PermPayments}, SiteIDs: []string{"site_a"}, RatePerSecond: 5, Burst: 10, CreatedAt: at, RevokedAt: &at},
		`{"id":"key_1","hash":"abc","hint":"yp_test_…wxyz","name":"dev","merchantId":"m_a","environment":"test","permissions":["payments"],"siteIds":["site_a"],"ratePerSecond":5,"burst":10,"createdAt":"2026-05-04T10:00:00.123Z","revokedAt":"2026-05-04T10:00:00.123Z"}`},
	{"api key, optional fields empty", tenant.APIKey{ID: "key_2", Hash: "def", MerchantID: "m_a", Environment: tenant.EnvLive, CreatedAt: at},
		`{"id":"key_2","hash":"def","hint":"","merchantId":"m_a","environment":"live","permissions":null,"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"subscription", tenant.Subscription{ID: "sub_1", MerchantID: "m_a", URL: "https://acme.example/wh",
		Secrets:    []tenant.Secret{{Value: "whsec_old", CreatedAt: at, ExpiresAt: &at}, {Value: "whsec_new", CreatedAt: at}},
		EventCodes: []string{"AUTHORISATION"}, Enabled: false, DisabledReason: "410", CreatedAt: at, UpdatedAt: &at},
		`{"id":"sub_1","merchantId":"m_a","url":"https://acme.example/wh","secrets":[{"value":"whsec_old","createdAt":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"},{"value":"whsec_new","createdAt":"2026-05-04T10:00:00.123Z"}],"eventCodes":["AUTHORISATION"],"enabled":false,"disabledReason":"410","createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"delivery", webhooks.Delivery{ID: "msg_1", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "CAPTURE",
		PSPReference: "PSP1", Payload: json.RawMessage(`{"type":"CAPTURE"}`), Status: webhooks.StatusFailed, Enqueued: true, Attempts: 3,
		LastStatusCode: 500, LastError: "HTTP 500", LastAttemptAt: &at, NextAttemptAt: &at, DeliveredAt: &at, Redrives: 1,
		CreatedAt: at, UpdatedAt: at, Version: 4},
		`{"id":"msg_1","merchantId":"m_a","subscriptionId":"sub_1","eventId":"evt_1","eventCode":"CAPTURE","pspReference":"PSP1","payload":{"type":"CAPTURE"},"status":"failed","enqueued":true,"attempts":3,"lastStatusCode":500,"lastError":"HTTP 500","lastAttemptAt":"2026-05-04T10:00:00.123Z","nextAttemptAt":"2026-05-04T10:00:00.123Z","deliveredAt":"2026-05-04T10:00:00.123Z","redrives":1,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":4}`},
	{"notification event", notifications.Event{ID: "evt_1", Key: "CAPTURE|PSP2|true|PSP1", Live: "false",
		Item:       payments.Notification{EventCode: "CAPTURE", PSPReference: "PSP2", OriginalReference: "PSP1", Success: "true", Amount: eur},
		PaymentPSP: "PSP1", Status: notifications.EventProcessed, MerchantID: "m_a", DeliveryIDs: []string{"msg_1"}, Received: 2,
		ReceivedAt: at, ProcessedAt: &at, UpdatedAt: at, Version: 2},
		`{"id":"evt_1","key":"CAPTURE|PSP2|true|PSP1","live":"false","item":{"amount":{"value":600,"currency":"EUR"},"eventCode":"CAPTURE","eventDate":"","merchantAccountCode":"","merchantReference":"","originalReference":"PSP1","pspReference":"PSP2","success":"true"},"paymentPspReference":"PSP1","status":"processed","merchantId":"m_a","deliveryIds":["msg_1"],"received":2,"receivedAt":"2026-05-04T10:00:00.123Z","processedAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":2}`},
	{"merchant event", notifications.MerchantEvent{ID: "evt_1", MerchantID: "m_a", EventCode: "CAPTURE", PSPReference: "PSP2",
		PaymentPSP: "PSP1", Payload: json.RawMessage(`{"live":"false","notificationItems":[]}`), CreatedAt: at},
		`{"id":"evt_1","merchantId":"m_a","eventCode":"CAPTURE","pspReference":"PSP2","paymentPspReference":"PSP1","payload":{"live":"false","notificationItems":[]},"createdAt":"2026-05-04T10:00:00.123Z"}`},
}

// TestStoredFormatUnchanged: each record's stored JSON is the golden
// bytes, and reading them back gives the domain value again.
func TestStoredFormatUnchanged(t *testing.T) {
	for _, tc := range samples {
		t.Run(tc.name, func(t *testing.T) {
			var stored any
			var back func([]byte) (any, error)
			switch d := tc.domain.(type) {
			case LegacyPayment:
				stored = d
				back = func(b []byte) (any, error) { var r LegacyPayment; err := json.Unmarshal(b, &r); return r, err }
			case payments.Head:
				stored = FromHead(d)
				back = func(b []byte) (any, error) { var r PaymentHead; err := json.Unmarshal(b, &r); return r.ToHead(), err }
			case payments.Entry:
				stored = FromEntry(d)
				back = func(b []byte) (any, error) { var r Entry; err := json.Unmarshal(b, &r); return r.ToEntry(), err }
			case payments.Fact:
				stored = FromFact(d)
				back = func(b []byte) (any, error) { var r Fact; err := json.Unmarshal(b, &r); return r.ToFact(), err }
			case payments.Session:
				stored = FromSession(d)
				back = func(b []byte) (any, error) { var r Session; err := json.Unmarshal(b, &r); return r.ToSession(), err }
			case tenant.Merchant:
				stored = FromMerchant(d)
				back = func(b []byte) (any, error) { var r Merchant; err := json.Unmarshal(b, &r); return r.ToMerchant(), err }
			case tenant.Site:
				stored = FromSite(d)
				back = func(b []byte) (any, error) { var r Site; err := json.Unmarshal(b, &r); return r.ToSite(), err }
			case tenant.APIKey:
				stored = FromAPIKey(d)
				back = func(b []byte) (any, error) { var r APIKey; err := json.Unmarshal(b, &r); return r.ToAPIKey(), err }
			case tenant.Subscription:
				stored = FromSubscription(d)
				back = func(b []byte) (any, error) {
					var r Subscription
					err := json.Unmarshal(b, &r)
					return r.ToSubscription(), err
				}
			case webhooks.Delivery:
				stored = FromDelivery(d)
				back = func(b []byte) (any, error) { var r Delivery; err := json.Unmarshal(b, &r); return r.ToDelivery(), err }
			case notifications.MerchantEvent:
				stored = FromMerchantEvent(d)
				back = func(b []byte) (any, error) {
					var r MerchantEvent
					err := json.Unmarshal(b, &r)
					return r.ToMerchantEvent(), err
				}
			case notifications.Event:
				stored = FromEvent(d)
				back = func(b []byte) (any, error) { var r Notification; err := json.Unmarshal(b, &r); return r.ToEvent(), err }
			case idempotency.Record:
				stored = FromIdempotency(d)
				back = func(b []byte) (any, error) {
					var r Idempotency
					err := json.Unmarshal(b, &r)
					return r.ToIdempotency(), err
				}
			}
			got, err := json.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.golden {
				t.Fatalf("stored JSON changed:\n got %s\nwant %s", got, tc.golden)
			}
			read, err := back([]byte(tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(read, tc.domain) {
				t.Fatalf("read back:\n got %+v\nwant %+v", read, tc.domain)
			}
		})
	}
}

// TestToStoredIsUTC: times are stored in UTC whatever the caller's zone,
// and the caller's value is not modified.
func TestToStoredIsUTC(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	h := payments.Head{PSPReference: "P", CreatedAt: at.In(zone), UpdatedAt: at.In(zone),
		AmountUpdates: []payments.AmountUpdate{{Ref: "ADJ1", Amount: 1}}}
	r := FromHead(h)
	if r.CreatedAt.Location() != time.UTC || r.UpdatedAt.Location() != time.UTC {
		t.Fatalf("head not UTC: %+v", r)
	}
	r.AmountUpdates[0].Amount = 2
	e := payments.Entry{Ref: "op_1", Requested: &payments.Request{At: at.In(zone), LineItems: []payments.LineItem{{ID: "l1"}}},
		Answered: &payments.Answer{At: at.In(zone)}, Notices: []payments.Notice{{Code: "CAPTURE", At: at.In(zone)}}}
	re := FromEntry(e)
	if re.Requested.At.Location() != time.UTC || re.Answered.At.Location() != time.UTC || re.Notices[0].At.Location() != time.UTC {
		t.Fatalf("entry not UTC: %+v", re)
	}
	re.Requested.LineItems[0].ID, re.Notices[0].Code = "l2", "REFUND"
	f := payments.Fact{ID: "f1", At: at.In(zone)}
	if rf := FromFact(f); rf.At.Location() != time.UTC {
		t.Fatalf("fact not UTC: %+v", rf)
	}
	if h.AmountUpdates[0].Amount != 1 || h.CreatedAt.Location() != zone || e.Requested.LineItems[0].ID != "l1" ||
		e.Notices[0].Code != "CAPTURE" || e.Requested.At.Location() != zone || f.At.Location() != zone {
		t.Fatal("the caller's value was modified")
	}
}

// TestLegacyToLedger: a payment stored before ledgers reads as the ledger
// its history describes: the head's authorisation and amounts, one entry
// per operation (answered, notified, or still in flight), one timeline
// fact per history line in order, and Totals that are the fold of the
// entries.
func TestLegacyToLedger(t *testing.T) {
	amt := func(v int64) *Amount { return &Amount{Value: v, Currency: "EUR"} }
	no := false
	r := LegacyPayment{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", Source: "advanced",
		Amount: Amount{Value: 1000, Currency: "EUR"}, AuthorisedValue: 1000, CapturedValue: 600, State: "PartiallyCaptured",
		ResultCode: "Authorised", PaymentMethod: "visa", StoredMethodID: "SPM1", AuthType: payments.AuthorisationPreAuth,
		Reservations:       map[string]int64{"op_x": 200}, // a capture sent, not answered
		RefundReservations: map[string]int64{"REF1": 100}, // a refund accepted, not notified
		History: []Event{
			{At: at, Kind: "payment", Origin: "api", PSPReference: "PSP1", Detail: "Authorised"},
			{At: at.Add(time.Second), Kind: "AUTHORISATION", Origin: "notification", PSPReference: "PSP1", Amount: amt(1000), Success: &success},
			{At: at.Add(2 * time.Second), Kind: "capture", Origin: "api", PSPReference: "CAP1", Amount: amt(600), Detail: "received"},
			{At: at.Add(3 * time.Second), Kind: "CAPTURE", Origin: "notification", PSPReference: "CAP1", Amount: amt(600), Success: &success},
			{At: at.Add(4 * time.Second), Kind: "refund", Origin: "api", PSPReference: "REF1", Amount: amt(100), Detail: "received"},
			{At: at.Add(5 * time.Second), Kind: "CAPTURE_FAILED", Origin: "notification", PSPReference: "CAP2", Amount: amt(50), Success: &no},
		},
		Version: 7, CreatedAt: at, UpdatedAt: at.Add(5 * time.Second),
	}
	h, entries, facts := r.ToLedger()
	v := h.View()
	if h.PSPReference != "PSP1" || h.MerchantID != "m_a" || h.Version != 7 || h.AuthorisationType != payments.AuthorisationPreAuth ||
		h.Auth.Notified == nil || !*h.Auth.Notified || h.Amount != (money.Amount{Value: 1000, Currency: "EUR"}) {
		t.Fatalf("head %+v", h)
	}
	if v.State != payments.StatePartiallyCaptured || v.Authorised != 1000 || v.Captured != 600 || v.CapturesInFlight != 200 ||
		v.RefundsInFlight != 100 || v.Refunded != 0 || v.Refundable != 500 || v.Capturable != 200 {
		t.Fatalf("view %+v", v)
	}
	if got := payments.Fold(h, entries); got != h.Totals {
		t.Fatalf("Totals %+v, fold of the entries %+v", h.Totals, got)
	}
	refs := map[string]payments.Entry{}
	for _, e := range entries {
		refs[e.Ref] = e
	}
	if len(entries) != 4 || refs["CAP1"].Kind != payments.OpCapture || len(refs["CAP1"].Notices) != 1 ||
		refs["op_x"].Answered != nil || refs["REF1"].Kind != payments.OpRefund || refs["CAP2"].Requested != nil {
		t.Fatalf("entries %+v", entries)
	}
	if len(facts) != len(r.History) {
		t.Fatalf("%d facts, want %d", len(facts), len(r.History))
	}
	for i, f := range facts {
		ev := r.History[i]
		if f.Kind != ev.Kind || f.Origin != ev.Origin || f.PSPReference != ev.PSPReference || !f.At.Equal(ev.At) || f.ID == "" {
			t.Fatalf("fact %d: %+v, history %+v", i, f, ev)
		}
	}
}

func ptr(v int64) *int64 { return &v }

// A bridge release's legacy record (FromLedger) holds its ledger
// exactly; written over by the release before ledgers (the copy dropped),
// it still converts to what the ledger showed, and its legacy fields say
// what the ledger shows: the release before ledgers reads the same money.
func TestFromLedgerRoundTrips(t *testing.T) {
	yes := true
	h := payments.Head{PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1",
		Source: payments.SourceAdvanced, Amount: money.Amount{Value: 1000, Currency: "EUR"}, CaptureMode: tenant.CaptureManual,
		PaymentMethod: "visa", Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1000,
		Seq: 3, Version: 9, CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
	req := func(v int64, s int) *payments.Request {
		return &payments.Request{Amount: money.Amount{Value: v, Currency: "EUR"}, UpstreamKey: "uk", At: at.Add(time.Duration(s) * time.Second)}
	}
	received := &payments.Answer{Outcome: payments.Received, At: at}
	notice := func(code string, v int64) []payments.Notice {
		return []payments.Notice{{Code: code, Success: true, Amount: money.Amount{Value: v, Currency: "EUR"}, Seq: 2, At: at}}
	}
	entries := []payments.Entry{
		{Ref: "op_1", Kind: payments.OpCapture, MergedInto: "CAP1", Version: 2, Requested: req(600, 1)},
		{Ref: "CAP1", Kind: payments.OpCapture, Modification: "CAP1", Version: 2, Requested: req(600, 1), Answered: received, Notices: notice("CAPTURE", 600)},
		{Ref: "op_2", Kind: payments.OpCapture, Version: 1, Requested: req(200, 2)},
		{Ref: "REF1", Kind: payments.OpRefund, Modification: "REF1", Version: 1, Requested: req(100, 3), Answered: received},
		{Ref: "op_3", Kind: payments.OpRefund, Version: 1, Requested: req(50, 4)},
	}
	h.Totals = payments.Fold(h, entries)
	amount := func(v int64) *money.Amount { return &money.Amount{Value: v, Currency: "EUR"} }
	facts := []payments.Fact{
		{ID: "payment", At: at, Kind: "payment", Origin: payments.OriginAPI, PSPReference: "PSP1", Detail: "Authorised"},
		{ID: "n#AUTHORISATION", At: at, Kind: "AUTHORISATION", Origin: payments.OriginNotification, PSPReference: "PSP1", Amount: amount(1000), Success: &yes},
		{ID: "op_1#requested", At: at, Kind: "capture-requested", Origin: payments.OriginAPI, PSPReference: "op_1", Amount: amount(600)},
		{ID: "op_1#answered#received", At: at, Kind: "capture", Origin: payments.OriginAPI, PSPReference: "CAP1", Amount: amount(600), Detail: "received"},
		{ID: "n#CAPTURE", At: at, Kind: "CAPTURE", Origin: payments.OriginNotification, PSPReference: "CAP1", Amount: amount(600), Success: &yes},
		{ID: "op_2#requested", At: at, Kind: "capture-requested", Origin: payments.OriginAPI, PSPReference: "op_2", Amount: amount(200)},
		{ID: "REF1#answered#received", At: at, Kind: "refund", Origin: payments.OriginAPI, PSPReference: "REF1", Amount: amount(100), Detail: "received"},
		{ID: "op_3#requested", At: at, Kind: "refund-requested", Origin: payments.OriginAPI, PSPReference: "op_3", Amount: amount(50)},
	}

	r := FromLedger(h, entries, facts)
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var stored LegacyPayment
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	gh, ge, gf := stored.ToLedger()
	sameJSON(t, "head", gh, h)
	sameJSON(t, "entries", ge, entries)
	sameJSON(t, "facts", gf, facts)

	// What the release before ledgers reads.
	v := h.View()
	if stored.CapturedValue != 600 || stored.RefundedValue != 0 || stored.AuthorisedValue != 1000 || stored.State != string(v.State) ||
		!reflect.DeepEqual(stored.Reservations, map[string]int64{"op_2": 200}) ||
		!reflect.DeepEqual(stored.RefundReservations, map[string]int64{"REF1": 100, "op_3": 50}) || stored.Version != 9 {
		t.Fatalf("legacy fields %+v", stored)
	}
	// Written back by that release (its type has no copy): converted from
	// the legacy fields, the same money.
	stored.Ledger = nil
	ch, _, cf := stored.ToLedger()
	if ch.View() != v || ch.Totals != h.Totals || len(cf) != len(facts) {
		t.Fatalf("converted without the copy: %+v, Totals %+v; want %+v, %+v", ch.View(), ch.Totals, v, h.Totals)
	}
	// A copy of another version (the record written since) is not used.
	stored.Ledger = r.Ledger
	stored.Version++
	if h2, _, _ := stored.ToLedger(); h2.Version != stored.Version || h2.Seq != 0 {
		t.Fatalf("an outdated copy was used: %+v", h2)
	}
}

// sameJSON fails t unless got and want encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}
