package records

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

var (
	at      = time.Date(2026, 5, 4, 10, 0, 0, 123000000, time.UTC)
	success = true
	eur     = money.Amount{Value: 600, Currency: "EUR"}
)

// samples are records with every field set (and one with every optional
// field empty), and the JSON the adapters write for them: format version 1.
var samples = []struct {
	name   string
	domain any
	golden string
}{
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
		`{"format":1,"pspReference":"PSP1","merchantId":"m_a","siteId":"site_a","reference":"order-1","source":"sessions","sessionId":"CS1","amount":{"value":1000,"currency":"EUR"},"shopperReference":"shopper-1","storedPaymentMethodId":"SPM1","storePaymentMethod":true,"authorisationType":"PreAuth","captureMode":"manual","paymentMethod":"visa","refusalReason":"none","resultCode":"Authorised","authNotified":true,"expired":true,"authorised":1200,"amountUpdates":[{"ref":"ADJ1","amount":1200,"from":1000},{"ref":"ADJ2","amount":1500,"from":1200,"failed":true}],"totals":{"captured":1,"capturesInFlight":2,"refunded":3,"refundsInFlight":4,"capturable":-5,"refundable":6,"reversals":7,"reversalsInFlight":8,"amountUpdatesInFlight":9},"seq":4,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":3}`},
	{"payment head, pending, bound", payments.Head{
		PSPReference: "pending_0123", MerchantID: "m_a", SiteID: "site_a", Reference: "order-2", Source: payments.SourceAdvanced,
		Amount: eur, Auth: payments.Auth{ResultCode: "IdentifyShopper"}, BoundTo: "PSP3", CreatedAt: at, UpdatedAt: at, Version: 2,
	},
		`{"format":1,"pspReference":"pending_0123","merchantId":"m_a","siteId":"site_a","reference":"order-2","source":"advanced","amount":{"value":600,"currency":"EUR"},"resultCode":"IdentifyShopper","totals":{},"boundTo":"PSP3","createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":2}`},
	{"payment head, optional fields empty", payments.Head{PSPReference: "PSP2", CreatedAt: at, UpdatedAt: at, Version: 1},
		`{"format":1,"pspReference":"PSP2","merchantId":"","totals":{},"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":1}`},
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
		`{"format":1,"ref":"REF1","kind":"refund","requested":{"amount":{"value":600,"currency":"EUR"},"reference":"rma-1","upstreamKey":"k1","lineItems":[{"id":"l1","description":"Shoe","quantity":2,"amountExcludingTax":250,"amountIncludingTax":300,"taxAmount":50,"taxPercentage":2000,"productUrl":"https://shop.example/p","imageUrl":"https://shop.example/i","itemCategory":"shoes","sku":"sku-1","brand":"B","color":"red","size":"42","manufacturer":"M","upc":"012345678905"}],"at":"2026-05-04T10:00:00.123Z"},"answered":{"outcome":"refused","reason":"Not enough balance","at":"2026-05-04T10:00:00.123Z"},"notices":[{"code":"REFUND","success":true,"amount":{"value":600,"currency":"EUR"},"reason":"refund","seq":5,"at":"2026-05-04T10:00:00.123Z"},{"code":"REFUND_FAILED","success":false,"amount":{"value":600,"currency":"EUR"},"at":"2026-05-04T10:00:00.123Z"}],"modification":"REF1","covered":true,"version":2}`},
	{"entry moved to its operation's pspReference", payments.Entry{Ref: "op_1", Kind: payments.OpCapture, MergedInto: "CAP1", Version: 2},
		`{"format":1,"ref":"op_1","kind":"capture","mergedInto":"CAP1","version":2}`},
	{"entry, amount update", payments.Entry{Ref: "ADJ1", Kind: payments.OpAmountUpdate, Modification: "ADJ1", Version: 1,
		Requested: &payments.Request{Amount: eur, From: 1000, At: at}, Answered: &payments.Answer{Outcome: payments.Unknown, At: at}},
		`{"format":1,"ref":"ADJ1","kind":"amount-update","requested":{"amount":{"value":600,"currency":"EUR"},"from":1000,"at":"2026-05-04T10:00:00.123Z"},"answered":{"outcome":"unknown","at":"2026-05-04T10:00:00.123Z"},"modification":"ADJ1","version":1}`},
	{"fact", payments.Fact{ID: "n#CAPTURE#CAP1#true", At: at, Kind: "CAPTURE", Origin: payments.OriginNotification,
		PSPReference: "CAP1", Amount: &eur, Success: &success, Detail: "capture"},
		`{"format":1,"id":"n#CAPTURE#CAP1#true","at":"2026-05-04T10:00:00.123Z","kind":"CAPTURE","origin":"notification","pspReference":"CAP1","amount":{"value":600,"currency":"EUR"},"success":true,"detail":"capture"}`},
	{"fact, optional fields empty", payments.Fact{ID: "f1", At: at, Kind: "payment", Origin: payments.OriginAPI},
		`{"format":1,"id":"f1","at":"2026-05-04T10:00:00.123Z","kind":"payment","origin":"api"}`},
	{"session", payments.Session{ID: "CS1", MerchantID: "m_a", SiteID: "site_a", Reference: "ses_1", Amount: eur,
		ShopperReference: "shopper-1", StorePaymentMethod: true, CreatedAt: at, ExpiresAt: at},
		`{"format":1,"id":"CS1","merchantId":"m_a","siteId":"site_a","reference":"ses_1","amount":{"value":600,"currency":"EUR"},"shopperReference":"shopper-1","storePaymentMethod":true,"createdAt":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
	{"idempotency", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusCompleted, LeaseToken: "t",
		LeaseUntil: at, ExpiresAt: at, Response: &idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"a":1}`)}},
		`{"format":1,"scope":"m_a","key":"k","fingerprint":"fp","status":"completed","leaseToken":"t","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z","response":{"status":200,"header":{"Content-Type":"application/json"},"body":"eyJhIjoxfQ=="}}`},
	{"idempotency in progress", idempotency.Record{Scope: "m_a", Key: "k", Fingerprint: "fp", Status: idempotency.StatusInProgress, LeaseUntil: at, ExpiresAt: at},
		`{"format":1,"scope":"m_a","key":"k","fingerprint":"fp","status":"in_progress","leaseUntil":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"}`},
	{"merchant", tenant.Merchant{ID: "m_a", Name: "Acme", Country: "NL", Active: true, CaptureMode: tenant.CaptureManual, Ecommerce: true,
		UpstreamAccount: "AcmeECOM", ClientKey: "test_CK", SplitAccount: "BA_a", CommissionAccount: "BA_p", CommissionBps: 150, CommissionFixed: 10, CreatedAt: at},
		`{"format":1,"id":"m_a","name":"Acme","country":"NL","active":true,"captureMode":"manual","ecommerce":true,"upstreamAccount":"AcmeECOM","clientKey":"test_CK","splitAccount":"BA_a","commissionAccount":"BA_p","commissionBps":150,"commissionFixed":10,"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"site", tenant.Site{ID: "site_a", MerchantID: "m_a", Name: "acme.example", Type: tenant.SiteEcommerce, Flows: []tenant.Flow{tenant.FlowSessions, tenant.FlowAdvanced}, CreatedAt: at},
		`{"format":1,"id":"site_a","merchantId":"m_a","name":"acme.example","type":"ecommerce","flows":["sessions","advanced"],"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"api key", tenant.APIKey{ID: "key_1", Hash: "abc", Hint: "yp_test_…wxyz", Name: "dev", MerchantID: "m_a", Environment: tenant.EnvTest,
		Permissions: []tenant.Permission{tenant.PermPayments}, SiteIDs: []string{"site_a"}, RatePerSecond: 5, Burst: 10, CreatedAt: at, RevokedAt: &at},
		`{"format":1,"id":"key_1","hash":"abc","hint":"yp_test_…wxyz","name":"dev","merchantId":"m_a","environment":"test","permissions":["payments"],"siteIds":["site_a"],"ratePerSecond":5,"burst":10,"createdAt":"2026-05-04T10:00:00.123Z","revokedAt":"2026-05-04T10:00:00.123Z"}`},
	{"api key, optional fields empty", tenant.APIKey{ID: "key_2", Hash: "def", MerchantID: "m_a", Environment: tenant.EnvLive, CreatedAt: at},
		`{"format":1,"id":"key_2","hash":"def","hint":"","merchantId":"m_a","environment":"live","permissions":null,"createdAt":"2026-05-04T10:00:00.123Z"}`},
	{"subscription", tenant.Subscription{ID: "sub_1", MerchantID: "m_a", URL: "https://acme.example/wh",
		Secrets:    []tenant.Secret{{Value: "whsec_old", CreatedAt: at, ExpiresAt: &at}, {Value: "whsec_new", CreatedAt: at}},
		EventCodes: []string{"AUTHORISATION"}, Enabled: false, DisabledReason: "410", CreatedAt: at, UpdatedAt: &at},
		`{"format":1,"id":"sub_1","merchantId":"m_a","url":"https://acme.example/wh","secrets":[{"value":"whsec_old","createdAt":"2026-05-04T10:00:00.123Z","expiresAt":"2026-05-04T10:00:00.123Z"},{"value":"whsec_new","createdAt":"2026-05-04T10:00:00.123Z"}],"eventCodes":["AUTHORISATION"],"enabled":false,"disabledReason":"410","createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z"}`},
	{"delivery", webhooks.Delivery{ID: "msg_1", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "CAPTURE",
		PSPReference: "PSP1", Payload: json.RawMessage(`{"type":"CAPTURE"}`), Status: webhooks.StatusFailed, Enqueued: true, Attempts: 3,
		LastStatusCode: 500, LastError: "HTTP 500", LastAttemptAt: &at, NextAttemptAt: &at, DeliveredAt: &at, Redrives: 1,
		CreatedAt: at, UpdatedAt: at, Version: 4},
		`{"format":1,"id":"msg_1","merchantId":"m_a","subscriptionId":"sub_1","eventId":"evt_1","eventCode":"CAPTURE","pspReference":"PSP1","payload":{"type":"CAPTURE"},"status":"failed","enqueued":true,"attempts":3,"lastStatusCode":500,"lastError":"HTTP 500","lastAttemptAt":"2026-05-04T10:00:00.123Z","nextAttemptAt":"2026-05-04T10:00:00.123Z","deliveredAt":"2026-05-04T10:00:00.123Z","redrives":1,"createdAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":4}`},
	{"notification event", notifications.Event{ID: "evt_1", Key: "CAPTURE|PSP2|true|PSP1", Live: "false",
		Item:       payments.Notification{EventCode: "CAPTURE", PSPReference: "PSP2", OriginalReference: "PSP1", Success: "true", Amount: eur},
		PaymentPSP: "PSP1", Status: notifications.EventProcessed, MerchantID: "m_a", DeliveryIDs: []string{"msg_1"}, Received: 2,
		ReceivedAt: at, ProcessedAt: &at, UpdatedAt: at, Version: 2},
		`{"format":1,"id":"evt_1","key":"CAPTURE|PSP2|true|PSP1","live":"false","item":{"amount":{"value":600,"currency":"EUR"},"eventCode":"CAPTURE","eventDate":"","merchantAccountCode":"","merchantReference":"","originalReference":"PSP1","pspReference":"PSP2","success":"true"},"paymentPspReference":"PSP1","status":"processed","merchantId":"m_a","deliveryIds":["msg_1"],"received":2,"receivedAt":"2026-05-04T10:00:00.123Z","processedAt":"2026-05-04T10:00:00.123Z","updatedAt":"2026-05-04T10:00:00.123Z","version":2}`},
	{"merchant event", notifications.MerchantEvent{ID: "evt_1", MerchantID: "m_a", EventCode: "CAPTURE", PSPReference: "PSP2",
		PaymentPSP: "PSP1", Payload: json.RawMessage(`{"live":"false","notificationItems":[]}`), CreatedAt: at},
		`{"format":1,"id":"evt_1","merchantId":"m_a","eventCode":"CAPTURE","pspReference":"PSP2","paymentPspReference":"PSP1","payload":{"live":"false","notificationItems":[]},"createdAt":"2026-05-04T10:00:00.123Z"}`},
}

// TestStoredFormatUnchanged: each record's stored JSON is the golden
// bytes, and reading them back gives the domain value again.
func TestStoredFormatUnchanged(t *testing.T) {
	for _, tc := range samples {
		t.Run(tc.name, func(t *testing.T) {
			stored, back := codec(tc.domain)
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

// TestFormatVersion: every kind of record reads without a format version
// (version 1) and with version 1, and fails with storeerr.ErrUnknownFormat
// at a version this release does not know.
func TestFormatVersion(t *testing.T) {
	const v1 = `{"format":1,`
	for _, tc := range samples {
		_, back := codec(tc.domain)
		for _, c := range []struct {
			version string
			stored  string
			unknown bool
		}{
			{"absent", "{" + strings.TrimPrefix(tc.golden, v1), false},
			{"1", tc.golden, false},
			{"2", `{"format":2,` + strings.TrimPrefix(tc.golden, v1), true},
		} {
			read, err := back([]byte(c.stored))
			switch {
			case c.unknown && !errors.Is(err, storeerr.ErrUnknownFormat):
				t.Errorf("%s, version %s: %v, want ErrUnknownFormat", tc.name, c.version, err)
			case !c.unknown && (err != nil || !reflect.DeepEqual(read, tc.domain)):
				t.Errorf("%s, version %s: %+v, %v; want %+v", tc.name, c.version, read, err, tc.domain)
			}
		}
	}
}

// codec is the stored form of domain value d and the reader of its JSON
// back to the domain's.
func codec(d any) (stored any, back func([]byte) (any, error)) {
	switch d := d.(type) {
	case payments.Head:
		return FromHead(d), read(PaymentHead.ToHead)
	case payments.Entry:
		return FromEntry(d), read(Entry.ToEntry)
	case payments.Fact:
		return FromFact(d), read(Fact.ToFact)
	case payments.Session:
		return FromSession(d), read(Session.ToSession)
	case tenant.Merchant:
		return FromMerchant(d), read(Merchant.ToMerchant)
	case tenant.Site:
		return FromSite(d), read(Site.ToSite)
	case tenant.APIKey:
		return FromAPIKey(d), read(APIKey.ToAPIKey)
	case tenant.Subscription:
		return FromSubscription(d), read(Subscription.ToSubscription)
	case webhooks.Delivery:
		return FromDelivery(d), read(Delivery.ToDelivery)
	case notifications.MerchantEvent:
		return FromMerchantEvent(d), read(MerchantEvent.ToMerchantEvent)
	case notifications.Event:
		return FromEvent(d), read(Notification.ToEvent)
	case idempotency.Record:
		return FromIdempotency(d), read(Idempotency.ToIdempotency)
	}
	panic(fmt.Sprintf("no record of %T", d))
}

// read decodes a stored R and converts it with to.
func read[R, D any](to func(R) D) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		var r R
		err := json.Unmarshal(b, &r)
		return to(r), err
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

func ptr(v int64) *int64 { return &v }
