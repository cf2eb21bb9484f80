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
// field empty), and the JSON the adapters wrote for them when they stored
// the domain structs directly: existing data keeps reading, new writes
// stay readable by the previous version.
var samples = []struct {
	name   string
	domain any
	golden string
}{
	{"payment", payments.Payment{
		PSPReference: "PSP1", MerchantID: "m_a", SiteID: "site_a", Reference: "order-1", Source: payments.SourceAdvanced,
		SessionID: "CS1", Amount: money.Amount{Value: 1000, Currency: "EUR"}, AuthorisedValue: 1000, CapturedValue: 600,
		RefundedValue: 100, State: payments.StatePartiallyCaptured, ResultCode: "Authorised", RefusalReason: "none",
		PaymentMethod: "visa", ShopperReference: "shopper-1", StoredMethodID: "SPM1", Reservations: map[string]int64{"op_x": 600},
		RefundReservations: map[string]int64{"REF1": 100},
		History: []payments.Event{{At: at, Kind: "capture", Origin: "api", PSPReference: "CAP1", Amount: &eur, Success: &success, Detail: "received"},
			{At: at, Kind: "payment", Origin: "api"}},
		Version: 3, CreatedAt: at, UpdatedAt: at,
	},
		`{"pspReference":"PSP1","merchantId":"m_a","siteId":"site_a","reference":"order-1","source":"advanced","sessionId":"CS1","amount":{"value":1000,"currency":"EUR"},"authorisedValue":1000,"capturedValue":600,"refundedValue":100,"state":"PartiallyCaptured","resultCode":"Authorised","refusalReason":"none","paymentMethod":"visa","shopperReference":"shopper-1","storedPaymentMethodId":"SPM1","reservations":{"op_x":600},"refundReservations":{"REF1":100},"history":[{"at":"2026-05-04T10:00:00.123Z","kind":"capture","origin":"api","pspReference":"CAP1","amount":{"value":600,"currency":"EUR"},"success":true,"detail":"received"},{"at":"2026-05-04T10:00:00.123Z","kind":"payment","origin":"api"}],"version":3,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	// A pending record of a payment that started with an action, bound
	// (the fields added with it are omitted when empty, so older records
	// read the same).
	{"pending payment, pre-authorisation that stores the card", payments.Payment{
		PSPReference: "pending_0123", MerchantID: "m_a", SiteID: "site_a", Reference: "order-2", Source: payments.SourceAdvanced,
		Amount: eur, State: payments.StateIdentifyShopper, StorePaymentMethod: true, AuthorisationType: payments.AuthorisationPreAuth,
		BoundTo: "PSP3", Version: 2, CreatedAt: at, UpdatedAt: at,
	},
		`{"pspReference":"pending_0123","merchantId":"m_a","siteId":"site_a","reference":"order-2","source":"advanced","amount":{"value":600,"currency":"EUR"},"authorisedValue":0,"capturedValue":0,"refundedValue":0,"state":"IdentifyShopper","storePaymentMethod":true,"authorisationType":"PreAuth","boundTo":"PSP3","history":null,"version":2,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"payment, optional fields empty", payments.Payment{PSPReference: "PSP2", Version: 1, CreatedAt: at, UpdatedAt: at},
		`{"pspReference":"PSP2","merchantId":"","siteId":"","source":"","amount":{"value":0,"currency":""},"authorisedValue":0,"capturedValue":0,"refundedValue":0,"state":"","history":null,"version":1,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
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
			case payments.Payment:
				stored = FromPayment(d)
				back = func(b []byte) (any, error) { var r Payment; err := json.Unmarshal(b, &r); return r.ToPayment(), err }
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
	p := payments.Payment{PSPReference: "P", CreatedAt: at.In(zone), UpdatedAt: at.In(zone),
		History: []payments.Event{{At: at.In(zone)}}, Reservations: map[string]int64{"a": 1}}
	r := FromPayment(p)
	if r.CreatedAt.Location() != time.UTC || r.UpdatedAt.Location() != time.UTC || r.History[0].At.Location() != time.UTC {
		t.Fatalf("not UTC: %+v", r)
	}
	r.Reservations["a"] = 2
	if p.History[0].At.Location() != zone || p.Reservations["a"] != 1 {
		t.Fatal("the caller's value was modified")
	}
}
